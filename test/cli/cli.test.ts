import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/tmp.ts";
import { runCli } from "../helpers/cli-in-process.ts";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const bin = join(root, "bin", "switch-swe.mjs");

async function cli(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const SUBCOMMANDS = [
  "run",
  "mine",
  "split",
  "qualify",
  "reconstruct",
  "audit",
  "oracle",
  "locality",
  "select",
  "schedule",
  "validate",
  "emit",
  "verify",
  "report",
  "doctor",
  "extend",
  "schemas",
  "repo",
  "demo",
  "model-endpoint",
  "agents",
];

describe("switch-swe CLI", () => {
  it("lists every subcommand, and each one's help has an example", async () => {
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    for (const name of SUBCOMMANDS) expect(help.stdout).toMatch(new RegExp(`^  ${name}\\b`, "m"));
    // Every command's help, found from the help itself (groups such as `session` and `repo` down to
    // their leaves), in this process: the same program the binary runs, which has just answered above.
    const commandsIn = (text: string) =>
      // The section ends at its first blank line: a command with subcommands (audit) has its example after them.
      [...((text.split(/^Commands:\n/m)[1] ?? "").split(/\n\n/)[0] ?? "").matchAll(/^ {2}([a-z][\w-]*)/gm)].map((m) => m[1]!).filter((n) => n !== "help");
    const leaves: string[] = [];
    const walk = async (path: string[]) => {
      const sub = await runCli([...path, "--help"]);
      expect(sub.code, path.join(" ")).toBe(0);
      const children = commandsIn(sub.stdout);
      if (path.length && !children.length) {
        leaves.push(path.join(" "));
        expect(sub.stdout, path.join(" ")).toMatch(new RegExp(`Example:\\n  switch-swe ${path.join(" ")}\\b`));
      }
      for (const child of children) await walk([...path, child]);
    };
    await walk([]);
    expect(leaves).toEqual(
      expect.arrayContaining(["verify", "session run", "session run-all", "repo init", "agents install", "worker", "workers", "images base"]),
    );
  });

  it("demo says which port is taken when its GitHub API cannot be served, and exits 2", async () => {
    const dir = tempDir();
    const config = join(dir, "pipeline.yaml");
    // A port this test holds: the demo's config pointed at it.
    const { createServer } = await import("node:net");
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as { port: number }).port;
    writeFileSync(config, readFileSync(join(root, "data", "demo", "pipeline.yaml"), "utf8").replace("http://127.0.0.1:47623", `http://127.0.0.1:${port}`));
    try {
      const result = await cli(["demo", "--out", join(dir, "corpus"), "-c", config]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`cannot serve the demo's GitHub API on http://127.0.0.1:${port}`);
      expect(result.stderr).toMatch(/EADDRINUSE[\s\S]*free the port or change stages\.mine\.github\.api_url/);
    } finally {
      holder.close();
    }
  });

  it("verify names the file and field of bad input, and exits 2 without running anything", async () => {
    const dir = tempDir();
    const session = join(dir, "session.json");
    writeFileSync(session, JSON.stringify({ session_id: "s", benchmark: "demo" }));
    const bad = await cli(["verify", "-c", "data/demo/pipeline.yaml", "--session", session, "--artifact", "/dev/null", "--condition", "control"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`${session}: field repo: `);
    const both = await cli(["verify", "-c", "data/demo/pipeline.yaml", "--session", session, "--condition", "switched"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("give exactly one of --artifact PATCH and --checkout DIR");
    const unlabelled = await cli(["verify", "-c", "data/demo/pipeline.yaml", "--session", session, "--artifact", "/dev/null"]);
    expect(unlabelled.code).toBe(2);
    expect(unlabelled.stderr).toMatch(/required option '--condition <condition>' not specified/);
    const report = await cli(["report", "--results", join(dir, "nothing"), "--sessions", dir]);
    expect(report.code).toBe(2);
    expect(report.stderr).toMatch(/^switch-swe: --results .*nothing: no such directory\n$/);
    mkdirSync(join(dir, "results"));
    writeFileSync(
      join(dir, "index.json"),
      JSON.stringify({ benchmark: "demo", sessions: [{ session_id: "s", file: "session.json", focus: "o__r-1", locality: "near" }] }),
    );
    const badSession = await cli(["report", "--results", join(dir, "results"), "--sessions", dir]);
    expect(badSession.code).toBe(2);
    expect(badSession.stderr).toMatch(/session\.json: field repo: is required \(expected a session specification\)/);
  });

  it("reports a config error with its key and exits 2", async () => {
    const dir = tempDir();
    const path = join(dir, "bad.yaml");
    await import("node:fs").then((fs) => fs.writeFileSync(path, "name: Bad Name\nseed: 1\nwork_dir: w\n"));
    const result = await cli(["run", "--config", path]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${path}: key name (line 1)`);
  });

  it("doctor says whether GITHUB_TOKEN is set and never prints it", async () => {
    const secret = "ghp_thisMustNeverBePrinted123";
    const result = await cli(["doctor", "--json"], { GITHUB_TOKEN: secret });
    expect(result.stdout + result.stderr).not.toContain(secret);
    const report = JSON.parse(result.stdout);
    expect(report.checks.find((c: { name: string }) => c.name === "GITHUB_TOKEN")).toMatchObject({ ok: true, detail: "set (value not shown)" });
    expect(report.checks.find((c: { name: string }) => c.name === "git").ok).toBe(true);
  });

  // Whether the committed files are current is test/pipeline/schemas/public.test.ts's; here, the command's answer.
  it("schemas --check exits 0 on the committed JSON Schemas and 1 on a directory missing them", async () => {
    expect((await cli(["schemas", "--check", "--out", join(root, "manifests", "schema")])).code).toBe(0);
    const result = await cli(["schemas", "--check", "--out", join(tempDir(), "none")]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/stale or missing JSON Schema files/);
  });

  it("says bad paths and unusable work directories in one line, before any work, exit 2", async () => {
    const dir = tempDir();
    const cases: [string[], RegExp][] = [
      [["split", "diff", join(dir, "missing.diff")], /^switch-swe: <diff> .*missing\.diff: no such file\n$/],
      [["split", "diff", dir], /^switch-swe: <diff> .*: is a directory, expected a file\n$/],
      [["qualify", "task", join(dir, "none.json")], /^switch-swe: <task> .*none\.json: no such file\n$/],
      [["repo", "init", "o/n", "--clone", join(dir, "nowhere")], /^switch-swe: --clone .*nowhere: no such directory\n$/],
      [["run", "--config", join(dir, "none.yaml")], /^switch-swe: --config .*none\.yaml: no such file\n$/],
    ];
    writeFileSync(join(dir, "blocker"), "a file where a directory should be");
    writeFileSync(join(dir, "p.yaml"), "name: t\nseed: 1\nwork_dir: blocker/work\n");
    cases.push([["run", "--config", join(dir, "p.yaml")], /^switch-swe: .*p\.yaml: key work_dir: .*blocker\/work cannot be created or written \(ENOTDIR\)\n$/]);
    writeFileSync(join(dir, "task.json"), "{ not json");
    writeFileSync(join(dir, "profile.json"), "{}");
    cases.push([
      ["qualify", "task", join(dir, "task.json"), "--profile", join(dir, "profile.json")],
      /^switch-swe: .*task\.json: line 1: not valid JSON .*expected a split record/,
    ]);
    for (const [args, expected] of cases) {
      const result = await cli(args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr, args.join(" ")).toMatch(expected);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it("reports an unexpected error as an internal error in one line, with the stack only under --debug", async () => {
    const dir = tempDir();
    const results = join(dir, "results");
    mkdirSync(results);
    // A symlink loop makes walking the results directory fail in a way no input check foresees.
    symlinkSync(".", join(results, "loop"));
    mkdirSync(join(dir, "sessions"));
    const request = { task_id: "o__r-1", stage: 1, finalization: false, message: { repository: "o/r", checkout: "/workspace/w00", text: "Do it." } };
    const spec = {
      session_id: "session-o__r-1",
      benchmark: "t",
      repo: "o/r",
      focus: "o__r-1",
      interruptions: [],
      locality: "near",
      seeds: { benchmark: "1", case: "1" },
      checkouts: [{ path: "/workspace/w00", task_id: "o__r-1", base_commit: "a".repeat(40) }],
      budget: { per_request_seconds: 900, timeout_continuations: 3 },
      conditions: { control: [request], switched: [request] },
    };
    writeFileSync(join(dir, "sessions", "session-o__r-1.json"), JSON.stringify(spec));
    writeFileSync(
      join(dir, "sessions", "index.json"),
      JSON.stringify({ benchmark: "t", sessions: [{ session_id: "session-o__r-1", file: "session-o__r-1.json", focus: "o__r-1", locality: "near" }] }),
    );
    const plain = await cli(["report", "--results", results, "--sessions", join(dir, "sessions")]);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(
      /^switch-swe: internal error: .* \(a bug in switch-swe; details in \S+switch-swe-internal-error-\d+\.log; run again with --debug to see the stack\)\n$/,
    );
    const logFile = /details in (\S+?);/.exec(plain.stderr)![1]!;
    expect(readFileSync(logFile, "utf8")).toMatch(/\n\s+at /);
    const debug = await cli(["report", "--results", results, "--sessions", join(dir, "sessions"), "--debug"]);
    expect(debug.code).toBe(1);
    expect(debug.stderr).toMatch(/internal error: .*\n.*\n\s+at /);
  });

  it("a stage's own flag sets its config key for one run (mine --offline)", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "repos"));
    writeFileSync(
      join(dir, "p.yaml"),
      "name: t\nseed: 1\nwork_dir: work\nprofiles_dir: repos\nstages:\n  mine:\n    github:\n      api_url: http://127.0.0.1:9\n      repos: [{repo: o/r}]\n      wait_unit_ms: 1\n",
    );
    const offline = await cli(["mine", "-c", join(dir, "p.yaml"), "--offline", "-q"]);
    expect(offline.code).toBe(1);
    expect(offline.stdout).toMatch(/transient_failure: o\/r: could not list pull requests: offline: GET \/repos\/o\/r\/pulls\S* is not in the recording/);
    // Without the flag the same config goes to the network, where nothing answers.
    const online = await cli(["mine", "-c", join(dir, "p.yaml"), "-q"]);
    expect(online.code).toBe(1);
    expect(online.stdout).not.toMatch(/not in the recording/);
    expect(online.stdout).toMatch(/transient_failure: o\/r: could not list pull requests/);
    expect((await cli(["--version"])).stdout.trim()).toBe(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version);
  });
});
