import { mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadAgent } from "../../../pipeline/session/agents.ts";
import { checkRunDir, takeRunDir } from "../../../pipeline/session/run-folder.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { git } from "../../../pipeline/git.ts";
import { AgentSpec } from "../../../pipeline/schemas/agent.ts";
import { agentArgv } from "../../../pipeline/session/agent-commands.ts";
import { changesBetween, provisionCheckout, snapshot } from "../../../pipeline/checkouts/snapshot.ts";
import { tempDir } from "../../helpers/tmp.ts";

describe("the session runner's parts", () => {
  it("refuses an agent description that is neither scripted nor a command, naming the file and field", () => {
    const dir = tempDir();
    const file = join(dir, "bad.yaml");
    writeFileSync(file, "name: my-agent\nenv: [API_KEY]\n");
    expect(() => loadAgent(file)).toThrow(`${file}: field command`);
    writeFileSync(file, "name: has space\nscripted: noop\n");
    expect(() => loadAgent(file)).toThrow(/name/);
    // A placeholder the runner does not fill would reach the agent as literal text.
    writeFileSync(file, "name: typo\ncommand: [tool, '{txt}']\n");
    expect(() => loadAgent(file)).toThrow(
      `${file}: field command: a command may use only the placeholders {message}, {message_file}, {text}, {checkout}, {workspace}`,
    );
    writeFileSync(file, "name: s\nscripted: noop\nruns: environment\n");
    expect(() => loadAgent(file)).toThrow(`${file}: field runs`);
    writeFileSync(file, "name: s\ncommand: [tool]\nsetup: [[pip, install, tool]]\n");
    expect(() => loadAgent(file)).toThrow(`${file}: field setup`);
    writeFileSync(file, "name: s\ncommand: [tool]\nruns: container\n");
    expect(() => loadAgent(file)).toThrow(`${file}: field runs`);
    // In the environment a usage file is read from this machine: only under {session_dir}, which the two share.
    writeFileSync(file, "name: s\ncommand: [tool]\nruns: environment\nusage: aider\nusage_file: /tmp/log.jsonl\n");
    expect(() => loadAgent(file)).toThrow(`${file}: field usage_file`);
    writeFileSync(file, "name: s\ncommand: [tool, '{message_file}']\nruns: environment\nusage: aider\nusage_file: '{session_dir}/log.jsonl'\n");
    expect(loadAgent(file).usage_file).toBe("{session_dir}/log.jsonl");
  });

  it("reads an adapter that extends another as the other's keys with its own in their place, and refuses a bad extends naming the file", () => {
    const dir = tempDir();
    mkdirSync(join(dir, "base"));
    const base = join(dir, "base", "tool.yaml");
    writeFileSync(base, "name: tool\ncommand: [tool, '{message}']\nconstant_env: {A: '1', B: '2'}\nconversation: fresh\n");
    const here = join(dir, "tool-environment.yaml");
    writeFileSync(here, "extends: base/tool.yaml\nname: tool-environment\nruns: environment\nconstant_env: {A: '3'}\n");
    const agent = loadAgent(here);
    // Its own keys replace the base's whole (constant_env is its own, B gone); the rest is the base's.
    expect([agent.name, agent.runs, agent.command, agent.conversation, agent.constant_env]).toEqual([
      "tool-environment",
      "environment",
      ["tool", "{message}"],
      "fresh",
      { A: "3" },
    ]);
    // The whole is validated as one adapter, naming the file that extends.
    writeFileSync(here, "extends: base/tool.yaml\nname: tool-x\nsetup: [[pip, install, tool]]\n");
    expect(() => loadAgent(here)).toThrow(`${here}: field setup`);
    writeFileSync(here, "extends: base/tool.yaml\nruns: environment\n");
    expect(() => loadAgent(here)).toThrow(`${here}: name: an adapter that extends another names itself`);
    writeFileSync(here, "extends: base/missing.yaml\nname: x\n");
    expect(() => loadAgent(here)).toThrow(`${here}: extends: ${join(dir, "base", "missing.yaml")} does not exist`);
    writeFileSync(here, "extends: tool-environment.yaml\nname: x\n");
    expect(() => loadAgent(here)).toThrow(`${here}: extends: tool-environment.yaml makes a chain of ${here} → ${here}`);
    writeFileSync(here, "extends: [base/tool.yaml]\nname: x\n");
    expect(() => loadAgent(here)).toThrow(`${here}: extends: the path of another agent description`);
    // Every shipped adapter loads, and each environment adapter is its host adapter run in the environment.
    const shipped = join(import.meta.dirname, "..", "..", "..", "data", "agents");
    for (const name of ["claude-code", "codex", "opencode"]) {
      const [host, environment] = [loadAgent(join(shipped, `${name}.yaml`)), loadAgent(join(shipped, `${name}-environment.yaml`))];
      expect(environment).toEqual({ ...host, name: `${name}-environment`, description: environment.description, runs: "environment" });
    }
  });

  it("finds an installed harness's executable for the environment: its bin entry, or the one path its adapter's pattern matches", async () => {
    const { environmentExecutable, installDir } = await import("../../../pipeline/session/install.ts");
    const tools = tempDir();
    const agent = AgentSpec.parse({
      name: "t",
      runs: "environment",
      command: ["tool"],
      install: { registry: "npm", package: "@o/tool", version: "1.0.0", environment_executables: { native: "node_modules/@o/tool-linux-*/bin/native" } },
    }) as AgentSpec & { install: NonNullable<AgentSpec["install"]> };
    const dir = installDir(tools, agent.install);
    expect(() => environmentExecutable(tools, agent, "tool")).toThrow(/is not installed in .*switch-swe agents install/);
    mkdirSync(join(dir, "node_modules", ".bin"), { recursive: true });
    writeFileSync(join(dir, "installed.json"), "{}\n");
    writeFileSync(join(dir, "node_modules", ".bin", "tool"), "");
    expect(environmentExecutable(tools, agent, "tool")).toEqual({ installed: dir, path: "node_modules/.bin/tool" });
    expect(() => environmentExecutable(tools, agent, "native")).toThrow(`t: node_modules/@o/tool-linux-*/bin/native names no file in ${dir}`);
    mkdirSync(join(dir, "node_modules", "@o", "tool-linux-x64", "bin"), { recursive: true });
    writeFileSync(join(dir, "node_modules", "@o", "tool-linux-x64", "bin", "native"), "");
    // The pattern is a whole name: one that merely contains it does not match.
    mkdirSync(join(dir, "node_modules", "@o", "old-tool-linux-arm64", "bin"), { recursive: true });
    writeFileSync(join(dir, "node_modules", "@o", "old-tool-linux-arm64", "bin", "native"), "");
    expect(environmentExecutable(tools, agent, "native").path).toBe("node_modules/@o/tool-linux-x64/bin/native");
    mkdirSync(join(dir, "node_modules", "@o", "tool-linux-arm64", "bin"), { recursive: true });
    writeFileSync(join(dir, "node_modules", "@o", "tool-linux-arm64", "bin", "native"), "");
    expect(() => environmentExecutable(tools, agent, "native")).toThrow(
      /names 2 files \(node_modules\/@o\/tool-linux-arm64\/bin\/native, node_modules\/@o\/tool-linux-x64\/bin\/native\)/,
    );
    // A pattern may not leave the install directory, and a PyPI harness's virtual environment is this machine's only.
    expect(() => AgentSpec.parse({ ...agent, install: { ...agent.install, environment_executables: { x: "../../bin/sh" } } })).toThrow(
      /inside the install directory/,
    );
    expect(() =>
      AgentSpec.parse({ name: "p", runs: "environment", command: ["aider"], install: { registry: "pypi", package: "aider-chat", version: "0.86.2" } }),
    ).toThrow(/installed into the environment by a setup command/);
  });

  it("fills placeholders into argv elements, with no shell, and continues with continue_command", () => {
    const agent = AgentSpec.parse({
      name: "x",
      command: ["tool", "--prompt", "{text}", "--cwd={checkout}"],
      continue_command: ["tool", "--resume", "{conversation}", "{text}"],
    });
    const request = { repository: "o/r", checkout: "/w/w01", text: "do $(rm -rf /) `now`; please", continued: false };
    const paths = { workspace: "/w", sessionDir: "/s" };
    expect(agentArgv(agent, request, paths, "c-1")).toEqual(["tool", "--prompt", "do $(rm -rf /) `now`; please", "--cwd=/w/w01"]);
    expect(agentArgv(agent, { ...request, continued: true }, paths, "c-1")).toEqual(["tool", "--resume", "c-1", "do $(rm -rf /) `now`; please"]);
    const everywhere = AgentSpec.parse({ name: "y", command: ["t", "--all={workspace}", "--state={session_dir}/x", "{repository}"] });
    expect(agentArgv(everywhere, request, paths, "c-1")).toEqual(["t", "--all=/w", "--state=/s/x", "o/r"]);
  });

  it("provisions a checkout of a commit with no history, and sees what a request changed", async () => {
    const dir = tempDir();
    const repo = join(dir, "repo");
    mkdirSync(repo);
    const env = { GIT_AUTHOR_NAME: "a", GIT_AUTHOR_EMAIL: "a@x.invalid", GIT_COMMITTER_NAME: "a", GIT_COMMITTER_EMAIL: "a@x.invalid" };
    await git(["init", "--quiet", "--initial-branch=main"], { cwd: repo });
    writeFileSync(join(repo, "a.py"), "x = 1\n");
    // What `git archive` would drop or rewrite must reach the checkout as committed.
    writeFileSync(join(repo, ".gitattributes"), "ci.cfg export-ignore\nversion.py export-subst\n");
    writeFileSync(join(repo, "ci.cfg"), "[ci]\n");
    writeFileSync(join(repo, "version.py"), "v = '$Format:%H$'\n");
    await git(["add", "-A"], { cwd: repo });
    await git(["commit", "--quiet", "-m", "one"], { cwd: repo, env });
    const first = (await git(["rev-parse", "HEAD"], { cwd: repo })).trim();
    writeFileSync(join(repo, "a.py"), "x = 2  # the future\n");
    await git(["commit", "--quiet", "-am", "two"], { cwd: repo, env });
    const checkout = join(dir, "w00");
    await provisionCheckout(join(repo, ".git"), first, checkout);
    expect((await git(["rev-list", "--count", "--all"], { cwd: checkout })).trim()).toBe("1");
    expect((await git(["log", "--all", "--format=%B"], { cwd: checkout })).trim()).toBe("base");
    expect(readFileSync(join(checkout, "ci.cfg"), "utf8")).toBe("[ci]\n");
    expect(readFileSync(join(checkout, "version.py"), "utf8")).toBe("v = '$Format:%H$'\n");
    expect((await git(["rev-parse", "HEAD^{tree}"], { cwd: checkout })).trim()).toBe((await git(["rev-parse", `${first}^{tree}`], { cwd: repo })).trim());
    const before = await snapshot(checkout);
    writeFileSync(join(checkout, "a.py"), "x = 3\n");
    writeFileSync(join(checkout, "b.py"), "y = 1\n");
    mkdirSync(join(checkout, "__pycache__"));
    writeFileSync(join(checkout, "__pycache__", "a.pyc"), "junk");
    expect(changesBetween(before, await snapshot(checkout))).toEqual({ added: ["b.py"], modified: ["a.py"], deleted: [] });
    expect(changesBetween(before, before)).toBeUndefined();
    // With a hash cache, a rewrite of the same size (and its mtime set back) is still seen: ctime moved.
    const cache = new Map();
    const cached = await snapshot(checkout, cache);
    const { mtime } = statSync(join(checkout, "b.py"));
    writeFileSync(join(checkout, "b.py"), "y = 2\n");
    utimesSync(join(checkout, "b.py"), mtime, mtime);
    expect(changesBetween(cached, await snapshot(checkout, cache))).toEqual({ added: [], modified: ["b.py"], deleted: [] });
  });

  it("a snapshot taken while an agent writes files by rename (a temporary file, then its name) never fails: what went away since it was listed is left out", async () => {
    const checkout = tempDir();
    mkdirSync(join(checkout, "src", "pkg"), { recursive: true });
    writeFileSync(join(checkout, "src", "pkg", "mod.py"), "x = 0\n");
    let writing = true;
    const writer = (async () => {
      // Claude Code's way: write mod.py.tmp.<pid>.<n>, rename it over mod.py; a scratch directory comes and goes.
      for (let n = 0; writing; n++) {
        const tmp = join(checkout, "src", "pkg", `mod.py.tmp.${process.pid}.${n}`);
        await writeFile(tmp, `x = ${n}\n`);
        await rename(tmp, join(checkout, "src", "pkg", "mod.py"));
        await mkdir(join(checkout, "src", "scratch"), { recursive: true });
        await writeFile(join(checkout, "src", "scratch", "f"), "");
        await rm(join(checkout, "src", "scratch"), { recursive: true, force: true });
      }
    })();
    try {
      const cache = new Map();
      for (let i = 0; i < 300; i++) {
        const seen = await snapshot(checkout, cache);
        expect(seen.has("src/pkg/mod.py")).toBe(true);
      }
    } finally {
      writing = false;
      await writer;
    }
  });
});

describe("a run folder", () => {
  const owner = { agent: "claude-code", report: "/results/claude-code/S.switched.json" };
  const lines: string[] = [];
  const log = { ...silentLogger, info: (m: string) => void lines.push(m), warn: (m: string) => void lines.push(m), child: () => log } as typeof silentLogger;

  it("is taken when absent or empty, and replaced, saying so, when it holds an earlier run of the same agent and report", () => {
    const dir = tempDir();
    expect(() => checkRunDir(join(dir, "absent"), owner, false, log)).not.toThrow();
    mkdirSync(join(dir, "empty"));
    expect(() => checkRunDir(join(dir, "empty"), owner, false, log)).not.toThrow();
    mkdirSync(join(dir, "earlier"));
    writeFileSync(join(dir, "earlier", ".switch-swe-run.json"), JSON.stringify(owner));
    writeFileSync(join(dir, "earlier", "trajectory.jsonl"), "{}\n");
    checkRunDir(join(dir, "earlier"), owner, false, log);
    expect(lines.at(-1)).toMatch(/replacing the earlier run of claude-code there/);
  });

  it("is refused when it holds another agent's run, the same agent's reported elsewhere, or anything else, unless forced", () => {
    const dir = tempDir();
    const holding = (name: string, marker?: object) => {
      mkdirSync(join(dir, name));
      if (marker) writeFileSync(join(dir, name, ".switch-swe-run.json"), JSON.stringify(marker));
      writeFileSync(join(dir, name, "trajectory.jsonl"), "{}\n");
      return join(dir, name);
    };
    const other = holding("other", { agent: "codex", report: "/results/codex/S.switched.json" });
    expect(() => checkRunDir(other, owner, false, log)).toThrow(
      `${other} holds the run of agent codex reported in /results/codex/S.switched.json; it is not deleted`,
    );
    const elsewhere = holding("elsewhere", { agent: "claude-code", report: "/other-results/S.switched.json" });
    expect(() => checkRunDir(elsewhere, owner, false, log)).toThrow(/holds the run of agent claude-code reported in \/other-results/);
    const unknown = holding("unknown");
    expect(() => checkRunDir(unknown, owner, false, log)).toThrow(/holds files that are not a run of switch-swe/);
    expect(() => checkRunDir(other, owner, true, log)).not.toThrow();
    expect(lines.at(-1)).toMatch(/--force: replacing the run of agent codex/);
  });

  it("is never seen made but unmarked: a kill while it is taken leaves a partial beside it that the next take removes", async () => {
    const dir = tempDir();
    const runDir = join(dir, "S.switched");
    // What a run killed between making the folder and writing its owner file leaves.
    mkdirSync(`${runDir}.partial-4242`);
    writeFileSync(join(`${runDir}.partial-4242`, "half"), "");
    expect(() => checkRunDir(runDir, owner, false, log)).not.toThrow();
    // An earlier run of the same agent, with its files.
    mkdirSync(runDir);
    writeFileSync(join(runDir, ".switch-swe-run.json"), JSON.stringify(owner));
    writeFileSync(join(runDir, "trajectory.jsonl"), "{}\n");
    await takeRunDir(runDir, owner);
    expect(readdirSync(dir)).toEqual(["S.switched"]);
    expect(readdirSync(runDir)).toEqual([".switch-swe-run.json"]);
    expect(JSON.parse(readFileSync(join(runDir, ".switch-swe-run.json"), "utf8"))).toEqual(owner);
    expect(() => checkRunDir(runDir, owner, false, log)).not.toThrow();
  });
});
