import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import Docker from "dockerode";
import { beforeAll, describe, expect, it } from "vitest";
import { provisionCheckout } from "../../../pipeline/checkouts/snapshot.ts";
import { buildNetworkSettings } from "../../../pipeline/executors/types.ts";
import { DEFAULT_HARBOR_ADAPTERS } from "../../../pipeline/export/harbor-agents.ts";
import { HARBOR_TASK, SESSION_RECORDS, VERIFIER_FILES, VERIFIER_OUTPUTS } from "../../../pipeline/export/harbor-layout.ts";
import { exportHarbor } from "../../../pipeline/export/harbor.ts";
import { taskToml } from "../../../pipeline/export/harbor-task.ts";
import { git } from "../../../pipeline/git.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { OpenedBenchmark } from "../../../pipeline/project/benchmark.ts";
import { loadHarborReports } from "../../../pipeline/report/harbor-job.ts";
import { writeReport } from "../../../pipeline/report/results.ts";
import { HeldoutTask } from "../../../pipeline/schemas/heldout.ts";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { BUILT_STAGES } from "../../../stages/index.ts";
import { prepareDemoCopy } from "../../helpers/demo-copy.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";

/** The demo's geometry repository, five of its tasks in one session, the focus in the middle checkout. */
const FOCUS = "demo-org__geometry-29";
// Earlier tasks: the focus's fix, merged after all of their base revisions, is in none of their checkouts.
const OTHERS = ["demo-org__geometry-3", "demo-org__geometry-5", "demo-org__geometry-7", "demo-org__geometry-9"];
const SESSION = "session-harbor-fixture";
const FOCUS_PATH = "/workspace/w02";
const F2P = [
  ...["basic", "maximum", "none", "precision", "rejects_text"].map((t) => `tests/test_measure_units.py::test_mark_angle_${t}`),
  ...["basic", "maximum", "none", "precision", "rejects_text"].map((t) => `tests/test_shapes_square.py::test_tilt_depth_${t}`),
];
const P2P = ["tests/test_measure_units.py::test_units_scale", "tests/test_shapes_square.py::test_square_scale"];
const FINALIZE = "Finish this task and prepare it for evaluation: complete the work you consider unfinished, then stop.";

interface Record {
  instance_id: string;
  base_commit: string;
  patch: string;
  test_patch: string;
  problem_statement: string;
}

let bench: OpenedBenchmark;
let out: string;
let spec: SessionSpec;
let heldout: HeldoutTask;
let mirror: string;
let sessionsDir: string;

/** Every file under `dir`, relative to it. */
const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)).map((f) => `${e.name}/${f}`) : [e.name]))
    .sort();

/** A TOML file as Python's own parser reads it (tomllib): what Harbor reads. */
const readToml = (file: string) =>
  JSON.parse(
    execFileSync("python3", ["-c", "import json, sys, tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], 'rb'))))", file], { encoding: "utf8" }),
  );

/** A session of the demo's geometry tasks and the focus task's held-out asset, written where emit writes them, and the benchmark opened. */
beforeAll(async () => {
  const dir = fileTempDir();
  const demo = await prepareDemoCopy(dir);
  await demo.server.stop();
  const records = new Map(
    readFileSync(demo.corpus.recordsFile, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record)
      .map((r) => [r.instance_id, r]),
  );
  const focus = records.get(FOCUS)!;
  const tasks = [OTHERS[0]!, OTHERS[1]!, FOCUS, OTHERS[2]!, OTHERS[3]!];
  const checkouts = tasks.map((id, i) => ({ path: `/workspace/w0${i}`, task_id: id, base_commit: records.get(id)!.base_commit }));
  const request = (id: string, finalization = false) => ({
    task_id: id,
    ...(finalization ? {} : { stage: 1 }),
    finalization,
    message: {
      repository: "demo-org/geometry",
      checkout: checkouts.find((c) => c.task_id === id)!.path,
      text: finalization ? FINALIZE : records.get(id)!.problem_statement.split("\n\n<!--")[0]!,
    },
  });
  const emitted = join(dir, "manifests", "demo");
  sessionsDir = join(emitted, "sessions");
  mkdirSync(join(emitted, "heldout"), { recursive: true });
  mkdirSync(sessionsDir, { recursive: true });
  spec = SessionSpec.parse({
    session_id: SESSION,
    benchmark: "demo",
    repo: "demo-org/geometry",
    clone_url: relative(sessionsDir, join(demo.corpus.dir, "repos", "demo-org__geometry")),
    focus: FOCUS,
    interruptions: OTHERS,
    locality: "far",
    seeds: { benchmark: "2026", case: "fixture" },
    checkouts,
    budget: { per_request_seconds: 900, timeout_continuations: 3 },
    conditions: {
      control: [request(FOCUS), request(FOCUS, true)],
      switched: [request(FOCUS), ...OTHERS.map((id) => request(id)), request(FOCUS, true)],
    },
  });
  writeFileSync(join(sessionsDir, `${SESSION}.json`), JSON.stringify(spec, null, 2));
  writeFileSync(
    join(sessionsDir, "index.json"),
    JSON.stringify({ benchmark: "demo", sessions: [{ session_id: SESSION, file: `${SESSION}.json`, focus: FOCUS, locality: "far" }] }),
  );
  heldout = HeldoutTask.parse({
    task_id: FOCUS,
    repo: "demo-org/geometry",
    base_commit: focus.base_commit,
    implementation_patch: focus.patch,
    test_patch: focus.test_patch,
    fail_to_pass: F2P,
    pass_to_pass: P2P,
    test_command: "python -m pytest",
    environment: { python: "3.11", pip_requirements: ["pytest"] },
    environment_as_of: "2024-03-06T09:00:00Z",
    upstream: { patch: focus.patch + focus.test_patch, pull_number: null, merge_commit: null },
  });
  writeFileSync(join(emitted, "heldout", `${FOCUS}.json`), JSON.stringify(heldout, null, 2));
  bench = OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, log: silentLogger });
  mirror = await bench.workspace.mirrors.ensure(spec.repo, bench.cloneSource(spec.repo, join(sessionsDir, spec.clone_url!)), focus.base_commit);
  out = join(dir, "harbor");
  const ca = buildNetworkSettings().caBundle;
  await exportHarbor(bench, {
    out,
    conditions: ["control", "switched"],
    adapters: DEFAULT_HARBOR_ADAPTERS.map((a) => join("data", "agents", a)),
    images: ca ? { caBundle: readFileSync(ca, "utf8") } : {},
    agentUser: { name: "agent", uid: 1000 },
    pollSeconds: 1,
    log: silentLogger,
  });
});

const taskDir = (condition: string) => join(out, "tasks", `${SESSION}.${condition}`);

describe("switch-swe export harbor", () => {
  it("writes one Harbor task per session and condition: its config, the first request as the instruction, both images, the oracle's solution and the agent's plan", () => {
    expect(readdirSync(join(out, "tasks")).sort()).toEqual([`${SESSION}.control`, `${SESSION}.switched`]);
    for (const condition of ["control", "switched"] as const) {
      const dir = taskDir(condition);
      const config = readToml(join(dir, HARBOR_TASK.config));
      expect(config.artifacts).toEqual([FOCUS_PATH]);
      expect(config.verifier).toMatchObject({ environment_mode: "separate", network_mode: "no-network", environment: { network_mode: "no-network" } });
      expect(config.agent).toEqual({ user: "agent", timeout_sec: spec.conditions[condition].length * (900 * 4 + 60) });
      expect(config.metadata).toMatchObject({
        session_id: SESSION,
        condition,
        locality: "far",
        requests: spec.conditions[condition].length,
        per_request_seconds: 900,
      });
      expect(readFileSync(join(dir, HARBOR_TASK.instruction), "utf8")).toBe(
        `Repository: demo-org/geometry\nWorking directory (the checkout of this task): ${FOCUS_PATH}\n\n${spec.conditions[condition][0]!.message.text}\n`,
      );
      const plan = JSON.parse(readFileSync(join(dir, HARBOR_TASK.plan), "utf8"));
      expect(plan.requests.map((r: { text: string }) => r.text)).toEqual(spec.conditions[condition].map((r) => r.message.text));
      expect(plan.requests.map((r: { focus_return: boolean }) => r.focus_return)).toEqual(
        condition === "control" ? [false, false] : [false, false, false, false, false, true],
      );
      expect(plan.records).toEqual(SESSION_RECORDS);
      expect(readFileSync(join(dir, HARBOR_TASK.solution, "reference.patch"), "utf8")).toBe(heldout.implementation_patch);
      expect(files(join(dir, HARBOR_TASK.tests)).filter((f) => !f.startsWith("switch-swe/"))).toEqual(["Dockerfile", ...Object.values(VERIFIER_FILES)].sort());
    }
    // The adapters the session agent drives, with the harnesses' executables inside their installs.
    const claude = JSON.parse(readFileSync(join(out, "switch_swe_harbor", "adapters", "claude-code.json"), "utf8"));
    expect(claude).toMatchObject({
      name: "claude-code",
      usage: "claude-code",
      working_directory: "workspace",
      executables: { claude: "node_modules/.bin/claude" },
    });
    expect(readFileSync(join(out, "switch_swe_harbor", "agent.py"), "utf8")).toContain("class SwitchSweSession(BaseAgent)");
  });

  it("gives the verifier a network only when asked (where Harbor's environment cannot enforce none)", () => {
    const file = join(fileTempDir(), "task.toml");
    const input = { spec, condition: "control" as const, heldout, limits: { cpus: 1, memory_mb: 2048 }, agentUser: "agent", name: "t" };
    writeFileSync(file, taskToml({ ...input, verifierNetwork: "public" }));
    expect(readToml(file).verifier).toMatchObject({ network_mode: "public", environment: { network_mode: "public" } });
    writeFileSync(file, taskToml({ ...input, verifierNetwork: "no-network" }));
    expect(readToml(file).verifier).toMatchObject({ network_mode: "no-network", environment: { network_mode: "no-network" } });
  });

  it("keeps the held-out tests, the reference and every later request out of what the agent gets", async () => {
    for (const condition of ["control", "switched"] as const) {
      const dir = taskDir(condition);
      const agentVisible = [HARBOR_TASK.instruction, ...files(join(dir, HARBOR_TASK.environment)).map((f) => `${HARBOR_TASK.environment}/${f}`)];
      const text = agentVisible.map((f) => readFileSync(join(dir, f)).toString("latin1")).join("\n");
      for (const test of F2P) expect(text).not.toContain(test.split("::")[1]);
      expect(text).not.toContain("mark_angle expects a number");
      // No request but the first, in any condition.
      for (const later of spec.conditions[condition].slice(1)) expect(text).not.toContain(later.message.text.slice(0, 60));
      // Each checkout's archive is its base revision's tree, file for file, as the session runner writes it.
      for (const checkout of spec.checkouts) {
        const archive = join(dir, HARBOR_TASK.environment, "checkouts", `${checkout.path.split("/").pop()}.tar`);
        const inArchive = execFileSync("tar", ["-tf", archive], { encoding: "utf8" })
          .split("\n")
          .filter((l) => l && !l.endsWith("/") && l !== "pax_global_header");
        const inTree = (await git([`--git-dir=${mirror}`, "ls-tree", "-r", "--name-only", checkout.base_commit])).trim().split("\n");
        expect(inArchive.sort()).toEqual(inTree.sort());
      }
      // The schedule lives beside the task, never in a directory Harbor uploads or builds.
      expect(HARBOR_TASK.plan.split("/")[0]).not.toMatch(/^(environment|tests|solution)$/);
    }
    // Same benchmark, same export: byte for byte.
    const again = join(tempDir(), "again");
    await exportHarbor(bench, {
      out: again,
      conditions: ["control", "switched"],
      adapters: DEFAULT_HARBOR_ADAPTERS.map((a) => join("data", "agents", a)),
      images: buildNetworkSettings().caBundle ? { caBundle: readFileSync(buildNetworkSettings().caBundle!, "utf8") } : {},
      agentUser: { name: "agent", uid: 1000 },
      pollSeconds: 1,
      log: silentLogger,
    });
    expect(files(again)).toEqual(files(out));
    for (const f of files(out)) expect(readFileSync(join(again, f)).equals(readFileSync(join(out, f))), f).toBe(true);
  });
});

/** Builds an image from a context directory with the classic builder; resolves when it is tagged. */
async function buildImage(docker: Docker, context: string, tag: string): Promise<void> {
  const stream = await docker.buildImage({ context, src: files(context) }, { t: tag });
  const events: { error?: string }[] = await new Promise((resolve, reject) => docker.modem.followProgress(stream, (e, r) => (e ? reject(e) : resolve(r))));
  const failed = events.find((e) => e.error);
  if (failed) throw new Error(`building ${tag}: ${failed.error}`);
}

/** Runs the verifier image as Harbor's separate verifier does: the focus checkout in place, /logs/verifier collected. */
async function verifyInContainer(docker: Docker, image: string, checkout: string): Promise<{ outputs: string; log: string; exit: number }> {
  const outputs = tempDir();
  const container = await docker.createContainer({
    Image: image,
    Cmd: ["bash", "/tests/test.sh"],
    HostConfig: { Binds: [`${checkout}:${FOCUS_PATH}:ro`, `${outputs}:/logs/verifier`], NetworkMode: "none" },
  });
  try {
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    const log = (await container.logs({ stdout: true, stderr: true })).toString("utf8");
    return { outputs, log, exit: StatusCode };
  } finally {
    await container.remove({ force: true });
  }
}

describe("an exported task in real containers", () => {
  it("builds the agent's image with the five checkouts as the session runner makes them and nothing held out, and the verifier scores the reference 1 and the empty patch 0, as report grades them again", async (ctx) => {
    if (!(await dockerForTests())) return ctx.skip();
    const docker = new Docker();
    const dir = taskDir("switched");
    const agentImage = `switch-swe-test-harbor-agent:${process.pid}`;
    const verifierImage = `switch-swe-test-harbor-verifier:${process.pid}`;
    await buildImage(docker, join(dir, HARBOR_TASK.environment), agentImage);
    await buildImage(docker, join(dir, HARBOR_TASK.tests), verifierImage);
    try {
      // Each checkout's one commit is the session runner's own: same tree, same author and date.
      const local = tempDir();
      for (const c of spec.checkouts) {
        await provisionCheckout(mirror, c.base_commit, join(local, c.path.split("/").pop()!));
        const inImage = spawnSync("docker", ["run", "--rm", "-u", "agent", agentImage, "git", "-C", c.path, "rev-parse", "HEAD"], { encoding: "utf8" });
        expect(inImage.stdout.trim()).toBe((await git(["rev-parse", "HEAD"], { cwd: join(local, c.path.split("/").pop()!) })).trim());
      }
      const grep = spawnSync(
        "docker",
        [
          "run",
          "--rm",
          agentImage,
          "sh",
          "-c",
          "grep -rl -e mark_angle -e tilt_depth / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; ls /tests /solution 2>&1",
        ],
        { encoding: "utf8" },
      );
      expect(grep.stdout).toContain("No such file or directory");
      expect(grep.stdout).not.toMatch(/^\//m);

      const job = join(tempDir(), "jobs", "oracle-and-nop");
      mkdirSync(job, { recursive: true });
      writeFileSync(join(job, "config.json"), "{}\n");
      const cases = [
        { name: "reference", patch: heldout.implementation_patch, resolved: true },
        { name: "empty", patch: "", resolved: false },
        // The reference, and a test edited to pass anything and a conftest: both dropped, the reference still resolves.
        { name: "edited-tests", patch: heldout.implementation_patch, resolved: true, tamper: true },
      ];
      for (const c of cases) {
        const checkout = join(tempDir(), "focus");
        await provisionCheckout(mirror, heldout.base_commit, checkout);
        if (c.patch) await git(["apply", "-"], { cwd: checkout, input: c.patch });
        if (c.tamper) {
          writeFileSync(join(checkout, "tests", "test_shapes_square.py"), "def test_anything():\n    pass\n");
          writeFileSync(join(checkout, "conftest.py"), "import pytest\n");
        }
        const run = await verifyInContainer(docker, verifierImage, checkout);
        expect(run.exit, run.log).toBe(0);
        expect(JSON.parse(readFileSync(join(run.outputs, VERIFIER_OUTPUTS.reward), "utf8"))).toEqual({ reward: c.resolved ? 1 : 0 });
        const verification = JSON.parse(readFileSync(join(run.outputs, VERIFIER_OUTPUTS.verification), "utf8"));
        expect(verification).toMatchObject({
          session_id: SESSION,
          task_id: FOCUS,
          condition: "switched",
          applied: true,
          resolved: c.resolved,
          integrity_problems: [],
        });
        if (c.resolved) expect(Object.values(verification.tests)).toEqual(Array(F2P.length + P2P.length).fill("passed"));
        else for (const test of F2P) expect(verification.tests[test]).toBe("failed");
        if (c.tamper)
          expect(verification.dropped_paths).toEqual([
            { path: "conftest.py", reason: "test_configuration" },
            { path: "tests/test_shapes_square.py", reason: "held_out_test_path" },
          ]);
        const trial = join(job, `${SESSION}.switched__${c.name}`);
        mkdirSync(join(trial, "verifier"), { recursive: true });
        writeFileSync(join(trial, "result.json"), JSON.stringify({ task_name: `${SESSION}.switched` }));
        for (const f of readdirSync(run.outputs)) writeFileSync(join(trial, "verifier", f), readFileSync(join(run.outputs, f)));
      }
      // report reads the job: each trial graded again with verify's own code, agreeing with the verifier's.
      const loaded = loadHarborReports(dirname(job), sessionsDir, {
        heldout: (id) => bench.heldout(id),
        rules: (repo) => bench.profiles.profiles.get(repo)?.profile.classification,
      });
      expect(loaded.problems).toEqual([]);
      expect(loaded.reports.map((r) => [r.configuration, r.report.resolved]).sort()).toEqual([
        ["oracle-and-nop", false],
        ["oracle-and-nop", true],
        ["oracle-and-nop", true],
      ]);
      const written = await writeReport(job, loaded, sessionsDir, join(tempDir(), "report"));
      // Two reports for one session and condition count as resolved only if all are: this one is not.
      expect(written.aggregation.rows.find((r) => r.group === "overall")).toMatchObject({ sessions: 1, switched_resolved: 0, uninterrupted_resolved: 0 });
      expect(statSync(written.files[0]!).size).toBeGreaterThan(0);
    } finally {
      await docker
        .getImage(agentImage)
        .remove({ force: true })
        .catch(() => undefined);
      await docker
        .getImage(verifierImage)
        .remove({ force: true })
        .catch(() => undefined);
    }
  });
});

describe("the exported verifier and switch-swe's own verifier", () => {
  it("decide alike which submitted paths are taken, and grade the runner's channel alike", async () => {
    const rules = {
      ...bench.profile(spec.repo).profile.classification,
      overrides: [
        { class: "test" as const, globs: ["src/**/testing/*.py", "**/fixtures/{a,b}.py"] },
        { class: "source" as const, globs: ["tests/helpers/*.py", "docs/?.py"] },
      ],
      test_dirs: ["tests", "testing"],
    };
    const { verifierTaskJson } = await import("../../../pipeline/export/harbor-verifier.ts");
    const { protectedPathReason, pathsOfPatch } = await import("../../../pipeline/verifier/submission.ts");
    const { gradeRun, isResolved } = await import("../../../pipeline/verifier/grade.ts");
    const { ChannelReader } = await import("../../../pipeline/executors/guarded.ts");
    const dir = tempDir();
    writeFileSync(join(dir, "task.json"), verifierTaskJson({ heldout, rules, sessionId: SESSION, condition: "control", focusCheckout: FOCUS_PATH }));
    const paths = [
      "src/geometry/shapes/square.py",
      "tests/test_shapes_square.py",
      "tests/test_new.py",
      "tests/helpers/util.py",
      "src/pkg/testing/x.py",
      "src/pkg/testing/deep/x.py",
      "a/b/fixtures/a.py",
      "fixtures/b.py",
      "fixtures/c.py",
      "docs/x.py",
      "docs/xy.py",
      "conftest.py",
      "src/conftest.py",
      "setup.cfg",
      "pkg/pyproject.toml",
      "pytest.py",
      "_pytest/x.py",
      "pkg/pluggy/hooks.py",
      "site.pth",
      "x.dist-info/RECORD",
      "pkg/sitecustomize.py",
      "src/thing_test.py",
      "src/tests.py",
      "src/contest.py",
      ".github/workflows/ci.py",
      "testing/x.txt",
      "src/.hidden/test_x.py",
    ];
    const token = "t".repeat(48);
    const record = (r: object) => JSON.stringify({ ...r, token });
    const phases = (id: string, outcome = "passed") => ["setup", "call", "teardown"].map((when) => record({ kind: "test", nodeid: id, when, outcome }));
    const required = [...F2P, ...P2P].sort();
    const finish = record({ kind: "finish", exitstatus: 0, problems: [] });
    const transcripts = [
      { lines: [...required.flatMap((id) => phases(id)), finish], timed_out: false, exit_code: 0 },
      {
        lines: [...required.flatMap((id) => phases(id)), record({ kind: "test", nodeid: required[0], when: "call", outcome: "failed" }), finish],
        timed_out: false,
        exit_code: 0,
      },
      {
        lines: [
          ...required.flatMap((id) => phases(id)),
          record({ kind: "problem", text: "a hook from pytest.py" }),
          record({ kind: "suspicious", text: "walked the heap" }),
          finish,
        ],
        timed_out: false,
        exit_code: 0,
      },
      { lines: [...required.slice(1).flatMap((id) => phases(id)), ...phases(required[0]!, "skipped"), finish], timed_out: false, exit_code: 0 },
      { lines: required.flatMap((id) => phases(id)), timed_out: false, exit_code: 1 },
      { lines: required.slice(0, 3).flatMap((id) => phases(id)), timed_out: true, exit_code: -9 },
      {
        lines: [
          "4 passed",
          ...required.flatMap((id) => phases(id)),
          JSON.stringify({ kind: "finish", exitstatus: 0, problems: [], token: "forged" }),
          finish,
          ...phases(required[0]!, "failed"),
        ],
        timed_out: false,
        exit_code: 0,
      },
    ];
    const driver = `
import json, sys
sys.path.insert(0, sys.argv[1])
import switch_swe_verify as v
v.load(sys.argv[2])
data = json.load(sys.stdin)
reasons = [v.protected_reason(p, set(data["heldout"])) for p in data["paths"]]
grades = []
for t in data["transcripts"]:
    channel = v.Channel(data["token"], lambda: None)
    for line in t["lines"]:
        channel.take(line)
    tests, problems, suspicious, resolved = v.grade(data["required"], {"timed_out": t["timed_out"], "exit_code": t["exit_code"], "channel": channel})
    grades.append({"tests": tests, "problems": problems, "suspicious": suspicious, "resolved": resolved})
print(json.dumps({"reasons": reasons, "grades": grades}))
`;
    writeFileSync(join(dir, "switch_swe_verify.py"), readFileSync(join(taskDir("control"), HARBOR_TASK.tests, VERIFIER_FILES.helper)));
    const heldoutPaths = pathsOfPatch(heldout.test_patch);
    const python = JSON.parse(
      execFileSync("python3", ["-c", driver, dir, join(dir, "task.json")], {
        input: JSON.stringify({ paths, heldout: [...heldoutPaths], transcripts, token, required }),
        encoding: "utf8",
      }),
    );
    expect(python.reasons).toEqual(paths.map((p) => protectedPathReason(p, rules, heldoutPaths) ?? null));
    const typescript = transcripts.map((t) => {
      const reader = new ChannelReader(token, () => undefined);
      reader.push(Buffer.from(t.lines.map((l) => `${l}\n`).join("")));
      const graded = gradeRun(required, { channel: reader.channel, timedOut: t.timed_out, exitCode: t.exit_code });
      return { tests: graded.tests, problems: graded.integrityProblems, suspicious: graded.suspicious, resolved: isResolved(true, graded) };
    });
    expect(python.grades).toEqual(typescript);
    expect(typescript.map((g) => g.resolved)).toEqual([true, false, false, false, false, false, false]);
  });
});
