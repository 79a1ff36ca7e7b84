import { BUILT_STAGES } from "../../stages/index.ts";
import { mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { demoOutputsDigest } from "../helpers/demo-digest.ts";
import { demoExtensions } from "../helpers/demo-extensions.ts";
import { beforeAll, describe, expect, it } from "vitest";
import type { PullIntent } from "../../demo/build.ts";
import { SessionSpec } from "../../pipeline/schemas/session.ts";
import { benchmarkProfile } from "../../stages/emit/profile.ts";
import { formatSummary } from "../../pipeline/engine/engine.ts";
import { runProjectOnce } from "../../pipeline/project/project.ts";
import { git } from "../../pipeline/git.ts";
import { OracleRecord } from "../../pipeline/schemas/oracle.ts";
import { VerificationReport } from "../../pipeline/schemas/verification.ts";
import { demoRunCopy } from "../helpers/demo-run.ts";
import { runCli } from "../helpers/cli-in-process.ts";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { basename } from "node:path";
import { SessionIndex } from "../../pipeline/schemas/session.ts";
import { createLogger } from "../../pipeline/logger.ts";
import { CONTINUATION_MESSAGE } from "../../pipeline/session/types.ts";
import { DEFAULT_TOOLS_DIR, loadAgent } from "../../pipeline/session/agents.ts";
import { runAllSessions, runAndScoreSession, sessionCloneSource } from "../../pipeline/session/runs.ts";
import { OpenedBenchmark } from "../../pipeline/project/benchmark.ts";
import { ModelEndpoint, type EndpointCall } from "../../pipeline/model-endpoint/server.ts";
import { benchmarkKnowledge } from "../../pipeline/model-endpoint/knowledge.ts";
import type { ModelScript } from "../../pipeline/model-endpoint/scripts.ts";
import { installAgent } from "../../pipeline/session/install.ts";
import { RELAY_DIR_PREFIX } from "../../pipeline/session/model-relay.ts";
import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import { tempDir } from "../helpers/tmp.ts";
import { dockerForTests } from "../helpers/docker.ts";
import { WORK_LABEL } from "../../pipeline/executors/index.ts";
import Docker from "dockerode";

const root = fileURLToPath(new URL("../../", import.meta.url));
const bin = fileURLToPath(new URL("../../bin/switch-swe.mjs", import.meta.url));

/** What the endpoint's log says of a run's usage: tokens, answered calls and tool calls, as Table 2 counts them. */
const usageInLog = (calls: EndpointCall[]) => ({
  input_tokens: calls.reduce((n, c) => n + (c.usage?.input ?? 0), 0),
  cached_input_tokens: calls.reduce((n, c) => n + (c.usage?.cachedInput ?? 0), 0),
  output_tokens: calls.reduce((n, c) => n + (c.usage?.output ?? 0), 0),
  model_calls: calls.filter((c) => c.status === 200).length,
  tool_calls: calls.filter((c) => c.answer?.kind === "tool").length,
});

/** The demo as the README runs it (with the local executor), a copy of the test run's shared one. */
async function runDemo() {
  const { corpus, options, workDir, summary, configPath } = await demoRunCopy();
  const read = (stage: string, name: string) => readFileSync(join(workDir, "artifacts", stage, `${name}.jsonl`), "utf8");
  const emitted = join(workDir, "..", "..", "manifests", "demo");
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true })
      .flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)).map((f) => `${e.name}/${f}`) : [e.name]))
      .sort();
  const published = Object.fromEntries(files(emitted).map((f) => [f, readFileSync(join(emitted, f), "utf8")]));
  return { corpus, summary, read, options, records: readFileSync(corpus.recordsFile, "utf8"), published, configPath, emitted };
}

describe("the demo", () => {
  // One run of the whole pipeline, shared by the tests below (and copied to the audit and qualify
  // tests: test/helpers/demo-run.ts). That two independent runs agree byte
  // for byte is checked on a smaller corpus by the fault matrix (test/pipeline/faults.test.ts),
  // and on the whole demo by `npm run bench:determinism`.
  let a: Awaited<ReturnType<typeof runDemo>>;
  beforeAll(async () => {
    a = await runDemo();
  });

  it("runs every stage over the whole corpus, and a re-run does no work", async () => {
    expect(a.corpus.records).toBe(62);
    expect(a.summary.ok, formatSummary(a.summary)).toBe(true);
    expect(a.summary.stages.find((s) => s.stage === "mine")).toMatchObject({ out: 62, rejected: 0 });
    expect(Object.keys(a.published).length).toBeGreaterThan(10);
    const again = await runProjectOnce({ ...a.options, stageConfigs: { ...a.options.stageConfigs } });
    expect(again.stages.filter((s) => s.status !== "up_to_date")).toEqual([]);
  });

  it("produces exactly the outputs its fixture records (a change that means to change them updates it)", () => {
    const fixture = JSON.parse(readFileSync(fileURLToPath(new URL("../fixtures/demo-outputs.json", import.meta.url)), "utf8")) as {
      files: number;
      digest: string;
    };
    const digest = demoOutputsDigest({
      artifacts: join(a.options.workDir, "artifacts"),
      manifests: a.emitted,
      audits: join(a.emitted, "..", "..", "audits", "demo"),
    });
    expect(digest).toEqual({ files: fixture.files, digest: fixture.digest });
  });

  it("splits every pull request as its intent says and finds every locality class", async () => {
    const demo = a;
    const intents: PullIntent[] = JSON.parse(readFileSync(join(demo.corpus.dir, "intents.json"), "utf8"));
    const rejects = demo
      .read("split", "rejects")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const reasonOf = new Map(rejects.map((r) => [r.record_id, r.reason]));
    for (const intent of intents) {
      const id = `${intent.repo.replace("/", "__")}-${intent.number}`;
      const expected =
        intent.kind === "docs_only" || intent.kind === "changelog_only" ? "no_source_changes" : intent.kind === "no_tests" ? "no_test_changes" : undefined;
      expect(reasonOf.get(id), id).toBe(expected);
    }
    const splits = demo
      .read("split", "splits")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(splits.length + rejects.length).toBe(intents.length);
    const renamed = splits.find((s) => s.files.some((f: { status: string; class: string }) => f.status === "renamed" && f.class === "source"));
    expect(renamed.source_files.length).toBeGreaterThanOrEqual(2);
    const pairs = demo
      .read("locality", "pairs")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const classes = new Set(pairs.map((p) => (p.eligible ? p.class : "ineligible")));
    expect(classes).toEqual(new Set(["near", "far", "ineligible"]));
    // Locality's pool is the tasks that passed the oracle.
    const audited = demo
      .read("oracle", "tasks")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const perRepo = new Map<string, number>();
    for (const t of audited) perRepo.set(t.snapshot.repo, (perRepo.get(t.snapshot.repo) ?? 0) + 1);
    expect(pairs).toHaveLength([...perRepo.values()].reduce((n, k) => n + (k * (k - 1)) / 2, 0));
  });

  it("reconstructs every kept task's rounds in order, and no noise, suggestion code or uncurated edit gets in", async () => {
    const demo = a;
    const intents = new Map(
      (JSON.parse(readFileSync(join(demo.corpus.dir, "intents.json"), "utf8")) as PullIntent[]).map((i) => [`${i.repo.replace("/", "__")}-${i.number}`, i]),
    );
    const tasks = demo
      .read("reconstruct", "tasks")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const comments = demo
      .read("reconstruct", "comments")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(tasks.length).toBeGreaterThanOrEqual(30);
    const extensions = demoExtensions();
    for (const task of tasks) {
      // The pull request's rounds, then the benchmark-authored stages, each with authored provenance.
      const authored = extensions.get(task.id)?.stages ?? 0;
      expect(task.requests.length, task.id).toBe(intents.get(task.id)!.stages + authored);
      expect(task.requests.filter((r: any) => r.provenance.sources.some((s: any) => s.kind === "authored") && r.tests?.length).length, task.id).toBe(authored);
      const times = task.requests.slice(1).map((r: any) => r.provenance.sources.map((s: any) => s.created_at).sort()[0]);
      expect(times, task.id).toEqual([...times].sort());
      for (const r of task.requests) expect(r.text, task.id).not.toMatch(/```suggestion|def \w+\(value, precision=None\):/);
    }
    const noise = comments.filter((c) =>
      ["bot", "approval_only", "progress_only", "duplicate", "post_merge", "dismissed", "question", "needs_reference"].includes(c.class),
    );
    expect(new Set(noise.map((c) => c.class)).size).toBe(8);
    // The corpus's empty COMMENTED reviews never get this far: mine drops them (their line comments stand alone).
    expect(comments.filter((c) => c.class === "empty")).toEqual([]);
    expect(noise.every((c) => c.stage === null)).toBe(true);
    expect(tasks.filter((t) => t.focus_candidate).length).toBeGreaterThanOrEqual(20);
    const curated = tasks.find((t) => t.id === "demo-org__geometry-3");
    expect(curated.curated).toBe(true);
    expect(curated.requests[1].text).not.toMatch(/^Thanks for this!/);
    expect(curated.requests[1].provenance.curation).toMatchObject({ action: "edit", reviewer: "demo-maintainer" });
    expect(tasks.filter((t) => t.curated).map((t) => t.id)).toEqual(["demo-org__geometry-3"]);
  });

  it("emits sessions that validate, a manifest of the tasks they use, and a profile computed from them", async () => {
    const demo = a;
    const intents = new Map(
      (JSON.parse(readFileSync(join(demo.corpus.dir, "intents.json"), "utf8")) as PullIntent[]).map((i) => [`${i.repo.replace("/", "__")}-${i.number}`, i]),
    );
    const sessions = Object.entries(demo.published)
      .filter(([f]) => f.startsWith("sessions/session-"))
      .map(([, text]) => SessionSpec.parse(JSON.parse(text)));
    expect(sessions.length).toBeGreaterThanOrEqual(6);
    // The benchmark's own list of its sessions, which report takes its denominators from.
    expect(JSON.parse(demo.published["sessions/index.json"]!).sessions.map((s: { file: string }) => `sessions/${s.file}`)).toEqual(
      Object.keys(demo.published)
        .filter((f) => f.startsWith("sessions/session-"))
        .sort(),
    );
    expect(new Set(sessions.map((s) => s.locality))).toEqual(new Set(["near", "far"]));
    const reports = demo
      .read("validate", "reports")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(reports.every((r) => r.passed)).toBe(true);
    expect(JSON.parse(demo.published["profile.json"]!)).toEqual(JSON.parse(JSON.stringify(benchmarkProfile(sessions))));
    // Shaped like the study's benchmark (its Table 6: medians of 22 requests, 15 workspace switches
    // and 3 focus returns per switched session): each median within 20 %, every focus task resumed
    // after three substantive stages or more.
    const profile = benchmarkProfile(sessions);
    for (const [measured, study] of [
      [profile.median_requests, 22],
      [profile.median_workspace_switches, 15],
      [profile.median_focus_returns, 3],
    ] as const)
      expect(Math.abs(measured - study) / study, `${measured} against the study's ${study}`).toBeLessThanOrEqual(0.2);
    for (const spec of sessions)
      expect(spec.conditions.control.filter((r) => r.task_id === spec.focus && !r.finalization).length, spec.session_id).toBeGreaterThanOrEqual(3);
    const manifest = demo.published["manifest.jsonl"]!.split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const used = new Set(sessions.flatMap((s) => [s.focus, ...s.interruptions]));
    expect(new Set(manifest.map((m) => m.task_id))).toEqual(used);
    // Agent-visible files never carry held-out material; held-out files exist for every task used.
    for (const [file, text] of Object.entries(demo.published)) {
      if (!file.startsWith("heldout/")) expect(text.includes("diff --git"), file).toBe(false);
    }
    expect(Object.keys(demo.published).filter((f) => f.startsWith("heldout/")).length).toBe(used.size);
    // A benchmark-authored stage reaches a session: its request is scheduled as any other, with its
    // provenance, and its tests are held out with the task's F2P (verify scores with them).
    for (const [task, extension] of demoExtensions()) {
      const spec = sessions.find((s) => s.focus === task || s.interruptions.includes(task));
      expect(spec, `${task} is in a session`).toBeDefined();
      const heldout = JSON.parse(demo.published[`heldout/${task}.json`]!) as { fail_to_pass: string[] };
      expect(heldout.fail_to_pass).toEqual(expect.arrayContaining(extension.tests));
      const scheduled = spec!.conditions.switched.filter((r) => r.task_id === task && !r.finalization);
      expect(scheduled.length, task).toBe(intents.get(task)!.stages + extension.stages);
    }
    // Every session and manifest line says where to clone its repository (relative to its own file,
    // never an absolute path of this machine), and that clone holds every base commit it names.
    for (const [file, text] of Object.entries(demo.published).filter(([f]) => f.startsWith("sessions/session-"))) {
      const spec = SessionSpec.parse(JSON.parse(text));
      expect(spec.clone_url, file).toMatch(/^\.\.\//);
      const source = sessionCloneSource(spec, join(demo.emitted, file))!;
      expect(source).toBe(join(demo.corpus.dir, "repos", spec.repo.replace("/", "__")));
      for (const checkout of spec.checkouts) expect((await git(["cat-file", "-t", checkout.base_commit], { cwd: source })).trim()).toBe("commit");
    }
    for (const entry of manifest) expect(resolve(demo.emitted, entry.clone_url)).toBe(join(demo.corpus.dir, "repos", entry.repo.replace("/", "__")));
    // A session moved where its relative path leads nowhere falls back to the config's profile; a URL is taken as it is.
    const moved = SessionSpec.parse(JSON.parse(Object.entries(demo.published).find(([f]) => f.startsWith("sessions/session-"))![1]));
    expect(sessionCloneSource(moved, join(tempDir(), "s.json"))).toBeUndefined();
    expect(sessionCloneSource({ ...moved, clone_url: "https://example.org/o/r.git" }, "/x/s.json")).toBe("https://example.org/o/r.git");
  });

  it("proves every emitted task with the oracle, rejects the planted unsolvable one and says why, and verify and report score submissions against the emitted benchmark", async () => {
    const demo = a;
    const oracle = demo
      .read("oracle", "results")
      .split("\n")
      .filter(Boolean)
      .map((l) => OracleRecord.parse(JSON.parse(l)));
    const heldout = Object.keys(demo.published)
      .filter((f) => f.startsWith("heldout/"))
      .map((f) => f.slice("heldout/".length, -".json".length));
    const verdict = new Map(oracle.map((r) => [r.task_id, r]));
    for (const id of heldout) {
      expect(verdict.get(id)?.passed, id).toBe(true);
      expect(
        verdict.get(id)!.runs.map((r) => `${r.patch}:${r.resolved}`),
        id,
      ).toEqual(["reference:true", "reference:true", "reference:true", "empty:false", "empty:false", "empty:false"]);
    }
    // The one task planted to fail it (its F2P test passes only after another test of its file)
    // is rejected, with the test named; nothing else is.
    const intents: PullIntent[] = JSON.parse(readFileSync(join(demo.corpus.dir, "intents.json"), "utf8"));
    const planted = intents.filter((i) => i.order_dependent.length).map((i) => `${i.repo.replace("/", "__")}-${i.number}`);
    expect(planted).toEqual(["demo-org__textkit-16"]);
    expect(oracle.filter((r) => !r.passed).map((r) => r.task_id)).toEqual(planted);
    const rejects = demo
      .read("oracle", "rejects")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(rejects).toHaveLength(1);
    expect(rejects[0]).toMatchObject({ record_id: planted[0], reason: "oracle_failed" });
    expect(rejects[0].message).toContain(`${intents.find((i) => i.order_dependent.length)!.order_dependent[0]} failed`);
    expect(heldout).not.toContain(planted[0]);
    const stage = demo.summary.stages.find((s) => s.stage === "oracle")!;
    expect(stage).toMatchObject({ status: "ran", in: oracle.length, rejected: 1 });
    expect(formatSummary(demo.summary)).toContain(`oracle: 1 of ${oracle.length} task(s) rejected (oracle_failed 1)`);

    // Score three submissions of two sessions from the command line, then build Table 1.
    const dir = tempDir();
    const sessions = Object.keys(demo.published)
      .filter((f) => f.startsWith("sessions/session-"))
      .sort()
      .map((f) => join(demo.emitted, f));
    const [first, second] = sessions.map((f) => SessionSpec.parse(JSON.parse(readFileSync(f, "utf8"))));
    const reference = JSON.parse(demo.published[`heldout/${first!.focus}.json`]!).implementation_patch as string;
    writeFileSync(join(dir, "reference.patch"), reference);
    writeFileSync(join(dir, "empty.patch"), "");
    // The switched run's focus checkout: the fix uncommitted, plus a virtual environment, caches and a log.
    const checkout = join(dir, "w02");
    const focus = first!.checkouts.find((c) => c.task_id === first!.focus)!;
    await git(["clone", "--quiet", join(demo.corpus.dir, "repos", first!.repo.replace("/", "__")), checkout]);
    await git(["checkout", "--quiet", focus.base_commit], { cwd: checkout });
    await git(["apply", "-"], { cwd: checkout, input: reference });
    mkdirSync(join(checkout, ".venv", "lib"), { recursive: true });
    writeFileSync(join(checkout, ".venv", "pyvenv.cfg"), "home = /usr\n");
    mkdirSync(join(checkout, "tests", "__pycache__"), { recursive: true });
    writeFileSync(join(checkout, "tests", "__pycache__", "x.pyc"), "junk");
    writeFileSync(join(checkout, "agent.log"), "log\n");
    const results = join(dir, "results", "demo-agent");
    const verify = (session: string, condition: string, source: string[], out: string) =>
      runCli([
        "verify",
        "-c",
        demo.configPath,
        "--session",
        session,
        ...source,
        "--condition",
        condition,
        "--executor",
        "local",
        "--out",
        join(results, out),
      ]).then((r) => r.code);
    expect(await verify(sessions[0]!, "control", ["--artifact", join(dir, "reference.patch")], "a.control.json")).toBe(0);
    expect(await verify(sessions[0]!, "switched", ["--checkout", checkout, "--save-artifact", join(dir, "collected.patch")], "a.switched.json")).toBe(0);
    expect(await verify(sessions[1]!, "control", ["--artifact", join(dir, "empty.patch")], "b.control.json")).toBe(1);
    const collected = readFileSync(join(dir, "collected.patch"), "utf8");
    expect(collected.match(/^diff --git a\/(\S+)/gm)).toEqual(reference.match(/^diff --git a\/(\S+)/gm));
    const switched = VerificationReport.parse(JSON.parse(readFileSync(join(results, "a.switched.json"), "utf8")));
    expect(switched).toMatchObject({
      session_id: first!.session_id,
      task_id: first!.focus,
      condition: "switched",
      applied: true,
      resolved: true,
      dropped_paths: [],
    });
    expect(VerificationReport.parse(JSON.parse(readFileSync(join(results, "b.control.json"), "utf8")))).toMatchObject({
      task_id: second!.focus,
      resolved: false,
    });

    expect((await runCli(["report", "--results", join(dir, "results"), "-c", demo.configPath, "--out", join(dir, "tables")])).code).toBe(0);
    const n = sessions.length;
    const pct = (100 / n).toFixed(1);
    // One of n sessions resolved in each condition; the other runs are missing and count as unresolved.
    expect(readFileSync(join(dir, "tables", "table1.csv"), "utf8")).toContain(`demo-agent,overall,${n},1,1,${pct},${pct},0.0,${n - 2},${n - 1}\n`);
  });
  it("runs scripted agents through a near and a far session in both conditions, and report shows what each did", async () => {
    const demo = a;
    const dir = tempDir();
    const index = SessionIndex.parse(JSON.parse(demo.published["sessions/index.json"]!));
    const picked = (["near", "far"] as const).map((locality) => index.sessions.find((s) => s.locality === locality)!.session_id);
    const results = join(dir, "results");
    const runs = join(dir, "runs");
    const log = createLogger({ level: "warn", write: () => {} });
    // Verified as a user verifies: in the focus task's container (CI always has the engine).
    const executor = (await dockerForTests()) ? "docker" : "local";
    for (const name of ["replay-reference", "noop", "wrong-checkout"]) {
      const agent = loadAgent(join(root, "data", "agents", `${name}.yaml`));
      const { ran } = await runAllSessions(OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor }, log: log }), {
        manifest: demo.emitted,
        conditions: ["control", "switched"],
        agent,
        out: join(results, name),
        work: join(runs, name),
        jobs: 2,
        log,
        only: picked,
      });
      expect(ran).toHaveLength(4);
    }
    const report = (agent: string, session: string, condition: string) =>
      VerificationReport.parse(JSON.parse(readFileSync(join(results, agent, `${session}.${condition}.json`), "utf8")));
    for (const session of picked) {
      expect([report("replay-reference", session, "control").resolved, report("replay-reference", session, "switched").resolved]).toEqual([true, true]);
      expect([report("noop", session, "control").resolved, report("noop", session, "switched").resolved]).toEqual([false, false]);
      expect([report("wrong-checkout", session, "control").resolved, report("wrong-checkout", session, "switched").resolved]).toEqual([true, false]);
      // The wrong checkout is written in the switched run only, and the trajectory says where.
      expect(report("wrong-checkout", session, "control").behaviour).toMatchObject({ cross_task_write_requests: 0 });
      const switched = report("wrong-checkout", session, "switched");
      expect(switched.behaviour!.cross_task_write_requests).toBe(1);
      const trajectory = readFileSync(join(results, "wrong-checkout", switched.behaviour!.trajectory), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      const written = trajectory.find((t) => Object.keys(t.changes).some((p) => p !== t.checkout))!;
      expect(written.focus).toBe(true);
      expect(report("noop", session, "switched").behaviour).toMatchObject({ cross_task_write_requests: 0, continuations_used: 0, work_lost_files: 0 });
    }
    // The report over a benchmark of just these two sessions (its own index, the fixed denominators).
    const sessionsDir = join(dir, "sessions");
    mkdirSync(sessionsDir);
    const chosen = index.sessions.filter((s) => picked.includes(s.session_id));
    for (const s of chosen) writeFileSync(join(sessionsDir, s.file), demo.published[`sessions/${s.file}`]!);
    writeFileSync(join(sessionsDir, "index.json"), JSON.stringify({ ...index, sessions: chosen }));
    expect((await runCli(["report", "--results", results, "--sessions", sessionsDir, "--out", join(dir, "tables")])).code).toBe(0);
    const csv = readFileSync(join(dir, "tables", "table1.csv"), "utf8");
    expect(csv).toContain("replay-reference,overall,2,2,2,100.0,100.0,0.0,0,0\n");
    expect(csv).toContain("noop,overall,2,0,0,0.0,0.0,0.0,0,0\n");
    expect(csv).toContain("wrong-checkout,overall,2,2,0,100.0,0.0,100.0,0,0\n");
    for (const group of ["near", "far"]) {
      expect(csv).toContain(`replay-reference,${group},1,1,1,100.0,100.0,0.0,0,0\n`);
      expect(csv).toContain(`wrong-checkout,${group},1,1,0,100.0,0.0,100.0,0,0\n`);
    }
    const md = readFileSync(join(dir, "tables", "table1.md"), "utf8");
    expect(md).toContain("| wrong-checkout | Switch | Overall | 2 | 2 | ");
    expect(md).toContain("| wrong-checkout | Unint. | Overall | 2 | 0 | 0 | ");

    // The checkouts are role-neutral and hold no future: one commit each, no task id anywhere.
    const workspace = join(runs, "noop", `${picked[0]}.switched`, "workspace");
    for (const checkout of readdirSync(workspace)) {
      expect((await git(["rev-list", "--count", "HEAD"], { cwd: join(workspace, checkout) })).trim()).toBe("1");
      expect((await git(["grep", "-l", "-e", "demo-org__", "-e", "heldout"], { cwd: join(workspace, checkout) }).catch(() => "")).trim()).toBe("");
    }

    // Another agent given noop's --work folder is refused before it runs, naming the folder and
    // whose run it holds; noop's run and the trajectory its report links to stay as they were.
    const noopTrajectory = report("noop", picked[0]!, "switched").behaviour!.trajectory;
    const before = readFileSync(join(results, "noop", noopTrajectory), "utf8");
    const session = join(demo.emitted, "sessions", chosen.find((s) => s.session_id === picked[0])!.file);
    const intruder = [
      "session",
      "run",
      "-c",
      demo.configPath,
      "--session",
      session,
      "--condition",
      "switched",
      "--agent",
      join(root, "data", "agents", "replay-reference.yaml"),
    ];
    const refused = await runCli([...intruder, "--out", join(dir, "intruder"), "--work", join(runs, "noop"), "--executor", "local", "-q"]);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(
      `${join(runs, "noop", `${picked[0]}.switched`)} holds the run of agent noop reported in ${join(results, "noop", `${picked[0]}.switched.json`)}`,
    );
    expect(refused.stderr).toContain("pass --force to replace it");
    expect(readFileSync(join(results, "noop", noopTrajectory), "utf8")).toBe(before);
    // with --force it takes the folder
    const forced = await runCli([...intruder, "--out", join(dir, "intruder"), "--work", join(runs, "noop"), "--executor", "local", "-q", "--force"]);
    expect(forced.code, forced.stderr).toBe(0);
  });

  it("resumes run-all after a kill, running only the sessions not yet scored", async () => {
    const demo = a;
    const dir = tempDir();
    const out = join(dir, "noop");
    const argv = [
      "session",
      "run-all",
      "-c",
      demo.configPath,
      "--manifest",
      demo.emitted,
      "--agent",
      join(root, "data", "agents", "noop.yaml"),
      "--out",
      out,
      "--work",
      join(dir, "runs"),
      "--executor",
      "local",
      "-q",
    ];
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, [bin, ...argv], { stdio: "ignore" });
      const poll = setInterval(() => {
        if (existsSync(out) && readdirSync(out).filter((f) => f.endsWith(".json")).length >= 2) {
          clearInterval(poll);
          child.kill("SIGKILL");
        }
      }, 50);
      child.on("exit", (_code, signal) => {
        clearInterval(poll);
        signal === "SIGKILL" ? resolve() : reject(new Error("run-all finished before it could be killed"));
      });
    });
    const done = readdirSync(out).filter((f) => f.endsWith(".json")).length;
    const total = SessionIndex.parse(JSON.parse(demo.published["sessions/index.json"]!)).sessions.length * 2;
    expect(done).toBeLessThan(total);
    const { ran, skipped } = await runAllSessions(
      OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: createLogger({ level: "warn", write: () => {} }) }),
      {
        manifest: demo.emitted,
        conditions: ["control", "switched"],
        agent: loadAgent(join(root, "data", "agents", "noop.yaml")),
        out,
        work: join(dir, "runs"),
        jobs: 2,
        log: createLogger({ level: "warn", write: () => {} }),
      },
    );
    expect({ ran: ran.length, skipped }).toEqual({ ran: total - done, skipped: done });
    expect(readdirSync(out).filter((f) => f.endsWith(".json"))).toHaveLength(total);

    // Two verifications met an infrastructure fault: they are not scored, so the next run-all does them again.
    // One run directory is kept (its focus checkout is verified again, the agent not run), the other is gone (run again).
    const [kept, gone] = readdirSync(out)
      .filter((f) => f.endsWith(".json"))
      .sort();
    for (const file of [kept!, gone!]) {
      const faulted = { ...JSON.parse(readFileSync(join(out, file), "utf8")), resolved: false, infrastructure_fault: "the engine went away" };
      writeFileSync(join(out, file), JSON.stringify(faulted));
    }
    const runDirOf = (file: string) => join(dir, "runs", file.replace(/\.json$/, ""));
    const trajectoryBefore = statSync(join(runDirOf(kept!), "trajectory.jsonl")).mtimeMs;
    rmSync(runDirOf(gone!), { recursive: true });
    const again = await runAllSessions(
      OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: createLogger({ level: "warn", write: () => {} }) }),
      {
        manifest: demo.emitted,
        conditions: ["control", "switched"],
        agent: loadAgent(join(root, "data", "agents", "noop.yaml")),
        out,
        work: join(dir, "runs"),
        jobs: 2,
        log: createLogger({ level: "warn", write: () => {} }),
      },
    );
    expect({ ran: again.ran.length, skipped: again.skipped }).toEqual({ ran: 2, skipped: total - 2 });
    for (const file of [kept!, gone!]) {
      const redone = VerificationReport.parse(JSON.parse(readFileSync(join(out, file), "utf8")));
      expect(redone.infrastructure_fault, file).toBeUndefined();
      expect(redone.behaviour, file).toBeDefined();
    }
    expect(statSync(join(runDirOf(kept!), "trajectory.jsonl")).mtimeMs).toBe(trajectoryBefore);
    expect(existsSync(join(runDirOf(gone!), "trajectory.jsonl"))).toBe(true);
  });

  it("gives each request its budget, then the continuation message at most timeout_continuations times", async () => {
    const demo = a;
    const dir = tempDir();
    const index = SessionIndex.parse(JSON.parse(demo.published["sessions/index.json"]!));
    const spec = SessionSpec.parse(JSON.parse(demo.published[`sessions/${index.sessions[0]!.file}`]!));
    // A one-second budget and two continuations; the agent sleeps past every budget, and notes what it was sent.
    const short = {
      ...spec,
      budget: { per_request_seconds: 1, timeout_continuations: 2 },
      conditions: { ...spec.conditions, control: spec.conditions.control.slice(0, 2) },
    };
    const sessionFile = join(dir, "short.json");
    writeFileSync(sessionFile, JSON.stringify(short));
    const agentFile = join(dir, "sleeper.yaml");
    writeFileSync(agentFile, `name: sleeper\ncommand: [sh, -c, 'printf "%s\\n" "$1" >> sent.txt; sleep 30', sh, "{text}"]\n`);
    const report = await runAndScoreSession(
      OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: createLogger({ level: "warn", write: () => {} }) }),
      {
        session: sessionFile,
        condition: "control",
        agent: loadAgent(agentFile),
        out: join(dir, "results"),
        work: join(dir, "runs"),
        log: createLogger({ level: "warn", write: () => {} }),
      },
    );
    const trajectory = readFileSync(join(dir, "results", report.behaviour!.trajectory), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(trajectory).toHaveLength(2);
    for (const request of trajectory) {
      expect(request).toMatchObject({ timed_out: true, continuations: 2, exits: [null, null, null], budget_seconds: 1 });
      // Three attempts, each killed at its one-second budget: never less than three seconds.
      expect(request.seconds).toBeGreaterThanOrEqual(3);
    }
    expect(report.behaviour).toMatchObject({ continuations_used: 4, timed_out_requests: 2 });
    // What the agent was sent: each request's text, then the fixed continuation message twice.
    const focus = short.checkouts.find((c) => c.task_id === short.focus)!;
    const sent = readFileSync(join(dir, "runs", `${short.session_id}.control`, "workspace", basename(focus.path), "sent.txt"), "utf8")
      .trim()
      .split("\n");
    const texts = short.conditions.control.map((r) => r.message.text.split("\n")[0]);
    expect(sent.filter((l) => l === CONTINUATION_MESSAGE)).toHaveLength(4);
    expect(sent[0]).toBe(texts[0]);
  });

  /** A fresh directory, the demo's first session and a quiet logger: what the environment tests start from. */
  const firstSessionRun = () => {
    const index = SessionIndex.parse(JSON.parse(a.published["sessions/index.json"]!));
    return {
      dir: tempDir(),
      spec: SessionSpec.parse(JSON.parse(a.published[`sessions/${index.sessions[0]!.file}`]!)),
      log: createLogger({ level: "warn", write: () => {} }),
    };
  };

  it("runs a command agent inside the focus task's environment: the checkouts at the session's paths, nothing naming a role, the budget killing everything it started", async (context) => {
    if (!(await dockerForTests())) return context.skip();
    const demo = a;
    const { dir, spec, log } = firstSessionRun();
    const docker = new Docker();
    // The first four switched requests visit more than one checkout.
    const probeSession = join(dir, "probe.json");
    writeFileSync(probeSession, JSON.stringify({ ...spec, conditions: { ...spec.conditions, switched: spec.conditions.switched.slice(0, 4) } }));
    expect(new Set(spec.conditions.switched.slice(0, 4).map((r) => r.message.checkout)).size).toBeGreaterThan(1);
    process.env.SWITCH_SWE_PROBE_KEY = "key-from-the-user";
    const probe = join(dir, "probe.yaml");
    writeFileSync(
      probe,
      [
        "name: probe",
        "runs: environment",
        "network: false",
        "env: [SWITCH_SWE_PROBE_KEY]",
        `setup: [[sh, -c, "echo ready > /opt/agent-installed"]]`,
        // Writes, in the active checkout, where it ran and what it could see.
        `command: [sh, -c, 'n=$(ls probe-*.json 2>/dev/null | wc -l); printf "{\\"cwd\\": \\"%s\\", \\"uid\\": %s, \\"home\\": \\"%s\\", \\"workspace\\": \\"%s\\", \\"installed\\": \\"%s\\", \\"key\\": \\"%s\\", \\"args\\": \\"%s %s\\"}" "$(pwd)" "$(id -u)" "$HOME" "$(ls /workspace | tr "\\n" " ")" "$(cat /opt/agent-installed)" "$SWITCH_SWE_PROBE_KEY" "$1" "$2" > probe-$n.json; env > env-$n.txt; ls -a / > root-$n.txt; hostname >> root-$n.txt', sh, "{checkout}", "{workspace}"]`,
      ].join("\n") + "\n",
    );
    const report = await runAndScoreSession(OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: log }), {
      session: probeSession,
      condition: "switched",
      agent: loadAgent(probe),
      out: join(dir, "results"),
      work: join(dir, "runs"),
      log,
    });
    const trajectory = readFileSync(join(dir, "results", report.behaviour!.trajectory), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const workspace = join(dir, "runs", `${spec.session_id}.switched`, "workspace");
    const seen = new Map<string, number>();
    for (const request of trajectory) {
      const n = seen.get(request.checkout) ?? 0;
      seen.set(request.checkout, n + 1);
      // Each request ran in its own checkout, at the session's path, and the host saw what it wrote there and only there.
      expect(Object.keys(request.changes)).toEqual([request.checkout]);
      expect(request.exits).toEqual([0]);
      const written = JSON.parse(readFileSync(join(workspace, basename(request.checkout), `probe-${n}.json`), "utf8"));
      expect(written).toEqual({
        cwd: request.checkout,
        uid: process.getuid!(),
        home: "/agent",
        workspace:
          spec.checkouts
            .map((c) => basename(c.path))
            .sort()
            .join(" ") + " ",
        installed: "ready",
        key: "key-from-the-user",
        args: `${request.checkout} /workspace`,
      });
      // Nothing the agent can see names a task, a role or the held-out assets.
      const visible =
        readFileSync(join(workspace, basename(request.checkout), `env-${n}.txt`), "utf8") +
        readFileSync(join(workspace, basename(request.checkout), `root-${n}.txt`), "utf8");
      expect(visible).not.toMatch(/demo-org__|focus|interrupt|heldout|held-out/i);
    }
    // The container is gone with the session.
    const labelled = await docker.listContainers({ all: true, filters: { label: [WORK_LABEL] } });
    expect(labelled.filter((c) => c.Mounts.some((m) => m.Source.startsWith(dir)))).toEqual([]);

    // A sleeping agent in the environment: every attempt is killed at the budget with all it started.
    const shortSession = join(dir, "short.json");
    writeFileSync(
      shortSession,
      JSON.stringify({
        ...spec,
        budget: { per_request_seconds: 1, timeout_continuations: 1 },
        conditions: { ...spec.conditions, control: spec.conditions.control.slice(0, 1) },
      }),
    );
    const sleeper = join(dir, "sleeper.yaml");
    writeFileSync(
      sleeper,
      [
        "name: sleeper",
        "runs: environment",
        "network: false",
        // It also starts a process that leaves its group and keeps the output open: the attempt still ends.
        `command: [sh, -c, 'setsid sleep 1004 & sleep 1001 & sleep 1002']`,
        // The continuation first lists every process left in the container.
        `continue_command: [sh, -c, 'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; done > procs.txt; sleep 1003']`,
      ].join("\n") + "\n",
    );
    const slept = await runAndScoreSession(OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: log }), {
      session: shortSession,
      condition: "control",
      agent: loadAgent(sleeper),
      out: join(dir, "results"),
      work: join(dir, "runs"),
      log,
    });
    const [only] = readFileSync(join(dir, "results", slept.behaviour!.trajectory), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(only).toMatchObject({ timed_out: true, continuations: 1, exits: [null, null] });
    const focus = spec.checkouts.find((c) => c.task_id === spec.focus)!;
    const procs = readFileSync(join(dir, "runs", `${spec.session_id}.control`, "workspace", basename(focus.path), "procs.txt"), "utf8");
    expect(procs).toContain("sleep 1003");
    expect(procs).not.toMatch(/sleep 100[12]/);
  });

  it("reaches a model endpoint on this machine's loopback from an environment with no network, through the runner's relay: the message from its file and on standard input, usage from its log", async (context) => {
    if (!(await dockerForTests())) return context.skip();
    const demo = a;
    const { dir, spec, log } = firstSessionRun();
    const session = join(dir, "three.json");
    writeFileSync(session, JSON.stringify({ ...spec, conditions: { ...spec.conditions, control: spec.conditions.control.slice(0, 3) } }));
    // A client of the Chat Completions API in the image's own Python, logging each call as aider's analytics log does.
    const client = [
      "import json, os, sys, urllib.request",
      "message = open(sys.argv[1]).read()",
      // The same message on standard input (how OpenCode takes it): the two must agree.
      'if sys.stdin.read() != message: sys.exit("standard input is not the message")',
      'body = json.dumps({"model": "probe", "messages": [{"role": "user", "content": message}]}).encode()',
      'headers = {"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["PROBE_KEY"]}',
      'answer = json.load(urllib.request.urlopen(urllib.request.Request(os.environ["PROBE_URL"] + "/v1/chat/completions", body, headers), timeout=120))',
      'with open(sys.argv[2], "a") as out:',
      '    out.write(json.dumps({"event": "message_send_starting"}) + "\\n")',
      '    out.write(json.dumps({"event": "message_send", "properties": {"prompt_tokens": answer["usage"]["prompt_tokens"], "completion_tokens": answer["usage"]["completion_tokens"]}}) + "\\n")',
    ].join("\n");
    const agentFile = join(dir, "client.json");
    writeFileSync(
      agentFile,
      JSON.stringify({
        name: "endpoint-client",
        runs: "environment",
        network: false,
        conversation: "fresh",
        usage: "aider",
        usage_file: "{session_dir}/calls.jsonl",
        message: "Repository: {repository}\nWorking directory: {checkout}\n\n{text}",
        command: ["python3", "-c", client, "{message_file}", "{session_dir}/calls.jsonl"],
        stdin: "{message}",
        model_endpoint: { env: { PROBE_URL: "{model_url}", PROBE_KEY: "{model_key}" } },
      }),
    );
    const b = OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log });
    const knowledge = await benchmarkKnowledge(b).finally(() => b.close());
    const endpoint = await ModelEndpoint.start({ script: "idle", knowledge });
    // This process's relay directories only: other runs on the machine have theirs.
    const relayDirs = () => readdirSync(tmpdir()).filter((n) => n.startsWith(`${RELAY_DIR_PREFIX}${process.pid}-`));
    // One a killed runner left behind (no process has its pid) is removed by the next relay.
    const abandoned = join(tmpdir(), `${RELAY_DIR_PREFIX}${2 ** 22 + 17}-left`);
    mkdirSync(abandoned, { recursive: true });
    writeFileSync(join(abandoned, "relay.py"), "");
    const relaysBefore = relayDirs();
    // What keeps this process alive (its Docker engine's connections among them), to compare after the run.
    const pipes = () => process.getActiveResourcesInfo().filter((r) => r === "PipeWrap").length;
    const pipesBefore = pipes();
    try {
      expect(new URL(endpoint.url).hostname).toBe("127.0.0.1");
      const report = await runAndScoreSession(OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log }), {
        session,
        condition: "control",
        agent: loadAgent(agentFile),
        out: join(dir, "results"),
        work: join(dir, "runs"),
        log,
        model: { url: endpoint.url, key: "relay-key" },
      });
      const trajectory = readFileSync(join(dir, "results", report.behaviour!.trajectory), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      // Every request reached the endpoint, with its message (the checkout at its session path) and the key.
      expect(endpoint.calls.map((c) => c.status)).toEqual([200, 200, 200]);
      for (const [i, call] of endpoint.calls.entries()) {
        const sent = JSON.parse(call.body).messages[0].content as string;
        expect(sent).toContain(`Working directory: ${spec.conditions.control[i]!.message.checkout}\n`);
        expect(sent).toContain(spec.conditions.control[i]!.message.text);
      }
      // The usage read from the client's log, in the agent's directory this machine shares, is the endpoint's.
      expect(trajectory.map((r) => r.exits)).toEqual([[0], [0], [0]]);
      expect(trajectory.map((r) => [r.usage.model_calls, r.usage.input_tokens, r.usage.output_tokens])).toEqual(
        endpoint.calls.map((c) => [1, c.usage!.input + c.usage!.cachedInput, c.usage!.output]),
      );
      expect(report.behaviour).toMatchObject({ failed_requests: 0, requests: 3 });
    } finally {
      await endpoint.close();
    }
    // The relay's socket directory goes with the session, and nothing of it holds this process
    // open (a detached start's answer once kept `session run` alive for minutes after it ended).
    expect(relayDirs().filter((n) => !relaysBefore.includes(n))).toEqual([]);
    expect(existsSync(abandoned)).toBe(false);
    expect(pipes()).toBeLessThanOrEqual(pipesBefore);
  });

  describe("a real harness (Claude Code, installed by its adapter) against the model endpoint", () => {
    const quiet = createLogger({ level: "warn", write: () => {} });
    const adapter = join(root, "data", "agents", "claude-code.yaml");
    // Installed once per machine (CI's .ci/run installs it first); the install is whole or absent.
    const toolsDir = join(root, DEFAULT_TOOLS_DIR);
    const bench = () => OpenedBenchmark.open(a.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: quiet });
    let picked: string[];
    beforeAll(async () => {
      await installAgent(loadAgent(adapter), toolsDir);
      const index = SessionIndex.parse(JSON.parse(a.published["sessions/index.json"]!));
      picked = (["near", "far"] as const).map((locality) => index.sessions.find((s) => s.locality === locality)!.session_id);
    }, 900_000);

    async function withEndpoint<T>(script: ModelScript, run: (endpoint: ModelEndpoint) => Promise<T>): Promise<T> {
      const b = bench();
      const knowledge = await benchmarkKnowledge(b).finally(() => b.close());
      const endpoint = await ModelEndpoint.start({ script, knowledge });
      try {
        return await run(endpoint);
      } finally {
        await endpoint.close();
      }
    }
    const runAll = (endpoint: ModelEndpoint, dir: string, sessions: string[], conditions: ("control" | "switched")[] = ["control", "switched"]) =>
      runAllSessions(bench(), {
        manifest: a.emitted,
        conditions,
        agent: loadAgent(adapter),
        out: join(dir, "results"),
        work: join(dir, "runs"),
        jobs: 1,
        log: quiet,
        only: sessions,
        model: { url: endpoint.url, key: "test-key" },
        toolsDir,
      });
    const spec = (sessionId: string) => {
      const index = SessionIndex.parse(JSON.parse(a.published["sessions/index.json"]!));
      return SessionSpec.parse(JSON.parse(a.published[`sessions/${index.sessions.find((s) => s.session_id === sessionId)!.file}`]!));
    };
    const trajectoryOf = (dir: string, report: VerificationReport) =>
      readFileSync(join(dir, "results", report.behaviour!.trajectory), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));

    it("solves a near and a far session in both conditions in one conversation per run, its own usage equal to the endpoint's log, nothing held out in any prompt", async () => {
      const dir = tempDir();
      await withEndpoint("solve", async (endpoint) => {
        const { ran, failed } = await runAll(endpoint, dir, picked);
        expect(failed).toEqual([]);
        expect(ran.map((r) => [r.session_id, r.condition, r.resolved]).sort()).toEqual(
          picked
            .flatMap((s) => [
              [s, "control", true],
              [s, "switched", true],
            ])
            .sort(),
        );
        const b = bench();
        const heldout = (id: string) => HeldoutTask.parse(b.heldout(id));
        for (const report of ran) {
          const behaviour = report.behaviour!;
          const s = spec(report.session_id);
          const schedule = s.conditions[report.condition as "control" | "switched"];
          const calls = endpoint.calls.filter((c) => c.conversation_header === behaviour.conversation);
          // Table 2's figures from the harness's own output are the endpoint's, exactly.
          expect(behaviour.usage!.all).toEqual(usageInLog(calls));
          expect(behaviour).toMatchObject({ failed_requests: 0, requests: schedule.length });
          // One conversation: every request arrives with the history of the ones before it, its checkout named.
          expect(calls.map((c) => c.request?.index)).toEqual([...calls.map((c) => c.request!.index)].sort((x, y) => x - y));
          expect(new Set(calls.map((c) => c.request!.index))).toEqual(new Set(schedule.map((_, i) => i)));
          const runDir = join(dir, "runs", `${report.session_id}.${report.condition}`);
          for (const c of calls) {
            const active = schedule[c.request!.index]!.message.checkout;
            expect(c.request!.checkout).toBe(join(runDir, "workspace", basename(active)));
            // Nothing held out: no reference or test patch, no test id to pass, no locality, no verifier output.
            expect(c.body).not.toMatch(/diff --git|FAIL_TO_PASS|PASS_TO_PASS|fail_to_pass|locality|"near"|"far"|RESOLVED|required tests/);
            for (const task of s.checkouts) for (const test of heldout(task.task_id).fail_to_pass) expect(c.body).not.toContain(test);
          }
          // No file of the harness's in any checkout: the focus checkout changed in the reference's files only.
          const focusFiles = new Set(
            heldout(s.focus)
              .implementation_patch.match(/^diff --git a\/(\S+)/gm)!
              .map((l) => l.slice("diff --git a/".length)),
          );
          const trajectory = trajectoryOf(dir, report);
          for (const t of trajectory)
            for (const [path, c] of Object.entries(t.changes as Record<string, { added: string[]; modified: string[]; deleted: string[] }>))
              if (path === s.checkouts.find((x) => x.task_id === s.focus)!.path)
                for (const f of [...c.added, ...c.modified, ...c.deleted]) expect(focusFiles).toContain(f);
          // The model edits the focus on every return, so recovery is measured at every one of them.
          if (report.condition === "switched") expect(behaviour.focus_recovery_seconds.every((v) => v !== null)).toBe(true);
          expect(behaviour.usage!.focus_resumed.model_calls).toBeGreaterThan(report.condition === "switched" ? 0 : -1);
        }
        b.close();
        // Table 2, from the reports.
        const sessionsDir = join(dir, "sessions");
        mkdirSync(sessionsDir);
        const index = SessionIndex.parse(JSON.parse(a.published["sessions/index.json"]!));
        const chosen = index.sessions.filter((s) => picked.includes(s.session_id));
        for (const s of chosen) writeFileSync(join(sessionsDir, s.file), a.published[`sessions/${s.file}`]!);
        writeFileSync(join(sessionsDir, "index.json"), JSON.stringify({ ...index, sessions: chosen }));
        expect((await runCli(["report", "--results", join(dir, "results"), "--sessions", sessionsDir, "--out", join(dir, "tables")])).code).toBe(0);
        const csv = readFileSync(join(dir, "tables", "table2.csv"), "utf8")
          .trim()
          .split("\n");
        const runsOf = (condition: string) => ran.filter((r) => r.condition === condition).map((r) => r.behaviour!.usage!);
        const meanCalls = (condition: string, part: "all" | "focus_resumed") =>
          (runsOf(condition).reduce((n, u) => n + u[part].model_calls!, 0) / 2).toFixed(2);
        expect(csv[0]).toBe("configuration,column,runs,tokens_millions,model_calls,tool_calls,failed_requests,infrastructure_faults");
        expect(
          csv.slice(1).map((l) =>
            l
              .split(",")
              .slice(0, 5)
              .filter((_, i) => i !== 3),
          ),
        ).toEqual([
          ["results", "Unint.", "2", meanCalls("control", "all")],
          ["results", "Switch-All", "2", meanCalls("switched", "all")],
          ["results", "Switch-Focus", "2", meanCalls("switched", "focus_resumed")],
        ]);
        expect(readFileSync(join(dir, "tables", "table1.md"), "utf8")).toContain("## Table 2: execution workload");
      });
    }, 900_000);

    it("runs in the focus task's environment with no network (claude-code-environment): the harness installed here, mounted; one conversation resumed in every checkout; its usage the endpoint's", async (context) => {
      if (!(await dockerForTests())) return context.skip();
      const dir = tempDir();
      // The shipped environment adapter, without a network: the loopback endpoint is reached through the relay.
      const agentFile = join(dir, "claude-code-offline.yaml");
      writeFileSync(agentFile, `extends: ${join(root, "data", "agents", "claude-code-environment.yaml")}\nname: claude-code-offline\nnetwork: false\n`);
      const session = picked[0]!;
      const s = spec(session);
      await withEndpoint("solve", async (endpoint) => {
        const { ran, failed } = await runAllSessions(bench(), {
          manifest: a.emitted,
          conditions: ["switched"],
          agent: loadAgent(agentFile),
          out: join(dir, "results"),
          work: join(dir, "runs"),
          jobs: 1,
          log: quiet,
          only: [session],
          model: { url: endpoint.url, key: "test-key" },
          toolsDir,
        });
        expect(failed).toEqual([]);
        const [report] = ran;
        expect(report!.resolved).toBe(true);
        const behaviour = report!.behaviour!;
        expect(behaviour).toMatchObject({ failed_requests: 0, requests: s.conditions.switched.length });
        const calls = endpoint.calls.filter((c) => c.conversation_header === behaviour.conversation);
        expect(behaviour.usage!.all).toEqual(usageInLog(calls));
        // Every request, in whichever checkout, continued the one conversation, and named the checkout at its session path.
        expect(new Set(calls.map((c) => c.request!.index))).toEqual(new Set(s.conditions.switched.map((_, i) => i)));
        for (const c of calls) expect(c.request!.checkout).toBe(s.conditions.switched[c.request!.index]!.message.checkout);
        // It ran in the container: from the workspace of the session's paths, its state in the agent's directory.
        const runDir = join(dir, "runs", `${session}.switched`);
        const init = JSON.parse(readFileSync(join(runDir, "logs", "request-00-attempt-0.log"), "utf8").split("\n")[0]!);
        expect(init).toMatchObject({ type: "system", subtype: "init", cwd: dirname(s.checkouts[0]!.path) });
        expect(existsSync(join(runDir, "agent", ".claude"))).toBe(true);
      });
    }, 900_000);

    it("starts a new conversation when a run is run again, and a request whose text starts with '-' reaches the model whole", async () => {
      const dir = tempDir();
      await withEndpoint("idle", async (endpoint) => {
        const session = picked[0]!;
        const first = await runAll(endpoint, join(dir, "1"), [session], ["control"]);
        const second = await runAll(endpoint, join(dir, "2"), [session], ["control"]);
        const [one, two] = [first.ran[0]!.behaviour!, second.ran[0]!.behaviour!];
        expect(one.conversation).not.toBe(two.conversation);
        expect([one.failed_requests, two.failed_requests]).toEqual([0, 0]);
        // The second run's first call carries its first request only: nothing of the first run's conversation.
        const opening = endpoint.calls.find((c) => c.conversation_header === two.conversation)!;
        expect(opening.request!.index).toBe(0);
        expect((JSON.parse(opening.body).messages as { role: string }[]).filter((m) => m.role === "assistant")).toEqual([]);
        expect([first.ran[0]!.resolved, second.ran[0]!.resolved]).toEqual([false, false]);
      });
      // A text that starts with "-" (real review comments do) is the message, never an option.
      const s = spec(picked[0]!);
      const dashed = {
        ...s,
        conditions: {
          ...s.conditions,
          control: s.conditions.control.slice(0, 1).map((r) => ({ ...r, message: { ...r.message, text: `- ${r.message.text}` } })),
        },
      };
      const file = join(dir, "dashed.json");
      writeFileSync(file, JSON.stringify(dashed));
      await withEndpoint("idle", async (endpoint) => {
        const report = await runAndScoreSession(bench(), {
          session: file,
          condition: "control",
          agent: loadAgent(adapter),
          out: join(dir, "dashed-results"),
          work: join(dir, "dashed-runs"),
          log: quiet,
          model: { url: endpoint.url, key: "k" },
          toolsDir,
        });
        expect(report.behaviour!.failed_requests).toBe(0);
        expect(endpoint.calls.some((c) => c.body.includes(`- ${s.conditions.control[0]!.message.text.slice(0, 40)}`.replace(/\n/g, "\\n")))).toBe(true);
      });
    }, 900_000);

    it("edits the checkout of the other task when the model does: the control resolves, the switched run does not, and its trajectory shows the cross-task writes; undoing the focus work shows as work lost", async () => {
      const dir = tempDir();
      await withEndpoint("wrong-checkout", async (endpoint) => {
        const { ran } = await runAll(endpoint, join(dir, "wrong"), [picked[0]!]);
        expect(ran.map((r) => [r.condition, r.resolved])).toEqual([
          ["control", true],
          ["switched", false],
        ]);
        expect(ran[0]!.behaviour!.cross_task_write_requests).toBe(0);
        expect(ran[1]!.behaviour!.cross_task_write_requests).toBeGreaterThan(0);
      });
      await withEndpoint("undo", async (endpoint) => {
        const { ran } = await runAll(endpoint, join(dir, "undo"), [picked[0]!], ["switched"]);
        expect(ran[0]!.resolved).toBe(false);
        expect(ran[0]!.behaviour!.work_lost_files).toBeGreaterThan(0);
      });
    }, 900_000);

    it("retries an overloaded provider at most twice and reports an infrastructure fault; scores a model error without retrying it; stops a hanging request at its budget with its process group gone", async () => {
      const dir = tempDir();
      const s = spec(picked[0]!);
      const short = {
        ...s,
        budget: { per_request_seconds: 20, timeout_continuations: 0 },
        conditions: { ...s.conditions, control: s.conditions.control.slice(0, 2) },
      };
      const file = join(dir, "short.json");
      writeFileSync(file, JSON.stringify(short));
      const runShort = (endpoint: ModelEndpoint, name: string) =>
        runAndScoreSession(bench(), {
          session: file,
          condition: "control",
          agent: loadAgent(adapter),
          out: join(dir, name, "results"),
          work: join(dir, name, "runs"),
          log: quiet,
          model: { url: endpoint.url, key: "k" },
          toolsDir,
        });
      await withEndpoint("overloaded", async (endpoint) => {
        const report = await runShort(endpoint, "overloaded");
        const trajectory = trajectoryOf(join(dir, "overloaded"), report);
        // The first request, tried three times (two retries), then the run ends: the second is never delivered.
        expect(trajectory).toHaveLength(1);
        expect(trajectory[0]).toMatchObject({ infrastructure_retries: 2, failure: { kind: "infrastructure" } });
        expect(trajectory[0].exits).toHaveLength(3);
        expect(report.behaviour!.infrastructure_fault).toMatch(/^request 0: .*529 Overloaded/);
        // Each attempt is one harness run (its own few retries within it, CLAUDE_CODE_MAX_RETRIES).
        expect(endpoint.calls.length).toBe(3 * 3);
      });
      await withEndpoint("model-error", async (endpoint) => {
        const report = await runShort(endpoint, "model-error");
        const trajectory = trajectoryOf(join(dir, "model-error"), report);
        expect(trajectory).toHaveLength(2);
        expect(trajectory.map((t) => t.failure?.kind)).toEqual(["model", "model"]);
        expect(trajectory.map((t) => t.exits.length)).toEqual([1, 1]);
        expect(report.behaviour).toMatchObject({ failed_requests: 2 });
        expect(report.behaviour!.infrastructure_fault).toBeUndefined();
        expect(report.resolved).toBe(false);
      });
      const hanging = {
        ...short,
        budget: { per_request_seconds: 5, timeout_continuations: 0 },
        conditions: { ...s.conditions, control: s.conditions.control.slice(0, 1) },
      };
      writeFileSync(file, JSON.stringify(hanging));
      await withEndpoint("hang", async (endpoint) => {
        const report = await runShort(endpoint, "hang");
        expect(report.behaviour).toMatchObject({ timed_out_requests: 1, requests: 1 });
        expect(endpoint.calls.length).toBeGreaterThan(0);
        // Nothing of the harness is left running once the request was stopped.
        const left = readdirSync("/proc")
          .filter((p) => /^\d+$/.test(p))
          .filter((p) => {
            try {
              return readFileSync(`/proc/${p}/cmdline`, "utf8").includes(join(dir, "hang")) || readlinkSync(`/proc/${p}/cwd`).startsWith(join(dir, "hang"));
            } catch {
              return false;
            }
          });
        expect(left).toEqual([]);
      });
    }, 900_000);
  });
  describe("the Resumption Context Manager (OpenCode with switch-swe's plugin; Claude Code and Codex CLI through its relay; installed by their adapters) against the model endpoint", () => {
    const quiet = createLogger({ level: "warn", write: () => {} });
    const toolsDir = join(root, DEFAULT_TOOLS_DIR);
    const bench = () => OpenedBenchmark.open(a.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: quiet });
    let session: string;
    let s: SessionSpec;
    beforeAll(async () => {
      for (const adapter of ["opencode-rcm", "claude-code-rcm", "codex-rcm"])
        await installAgent(loadAgent(join(root, "data", "agents", `${adapter}.yaml`)), toolsDir);
      const index = SessionIndex.parse(JSON.parse(a.published["sessions/index.json"]!));
      // The shortest switched schedule: every run goes through all of its requests with the real harness.
      const length = (file: string) => SessionSpec.parse(JSON.parse(a.published[`sessions/${file}`]!)).conditions.switched.length;
      const entry = [...index.sessions].sort((x, y) => length(x.file) - length(y.file) || x.session_id.localeCompare(y.session_id))[0]!;
      session = entry.session_id;
      s = SessionSpec.parse(JSON.parse(a.published[`sessions/${entry.file}`]!));
    }, 900_000);

    /** One switched run of the session with the `distracted` script (a scripted simulation: it drops a task's earlier requirements when other tasks' requests lie between). */
    async function runSwitched(adapter: string, dir: string, after?: (endpoint: ModelEndpoint, report: VerificationReport) => Promise<void>) {
      const b = bench();
      const knowledge = await benchmarkKnowledge(b).finally(() => b.close());
      const endpoint = await ModelEndpoint.start({ script: "distracted", knowledge });
      try {
        const { ran, failed } = await runAllSessions(bench(), {
          manifest: a.emitted,
          conditions: ["switched"],
          agent: loadAgent(join(root, "data", "agents", `${adapter}.yaml`)),
          out: join(dir, "results"),
          work: join(dir, "runs"),
          jobs: 1,
          log: quiet,
          only: [session],
          model: { url: endpoint.url, key: "test-key" },
          toolsDir,
        });
        expect(failed).toEqual([]);
        const calls = [...endpoint.calls];
        await after?.(endpoint, ran[0]!);
        return { report: ran[0]!, calls };
      } finally {
        await endpoint.close();
      }
    }
    const isAuxiliary = (c: EndpointCall) => /switch-swe RCM: (task history router|task state memory)/.test(c.body);
    /** The coding calls of every request that resumes the focus after other tasks' requests. */
    const focusReturns = (calls: EndpointCall[]) => {
      const schedule = s.conditions.switched;
      // A recognised request is named by task and stage (its index counts only what the context holds).
      const at = (c: EndpointCall) =>
        schedule.findIndex((r) => r.task_id === c.request!.task && r.stage === c.request!.stage && r.finalization === c.request!.finalization);
      return calls.filter((c) => {
        if (isAuxiliary(c) || !c.request || c.request.task !== s.focus) return false;
        const i = at(c);
        return i > 0 && schedule[i - 1]!.task_id !== s.focus;
      });
    };
    const otherTexts = () => s.conditions.switched.filter((r) => r.task_id !== s.focus).map((r) => JSON.stringify(r.message.text).slice(1, -1));
    /** The run resolved, and every focus return's context (in `protocol`, where given) held no other task's request, and the focus task's record or none. */
    const expectRouted = (report: VerificationReport, calls: EndpointCall[], expected: { record: boolean; protocol?: string }) => {
      expect(report.resolved).toBe(true);
      const returns = focusReturns(calls);
      expect(returns.length).toBeGreaterThan(0);
      for (const c of returns) {
        if (expected.protocol) expect(c.protocol).toBe(expected.protocol);
        for (const text of otherTexts()) expect(c.body).not.toContain(text);
        if (expected.record) expect(c.body).toContain("<task_state_record");
        else expect(c.body).not.toContain("<task_state_record");
      }
    };

    it("+RCM: every focus return's context holds the focus task's history and state record and no other task's interactions; the run resolves; its usage, auxiliary calls included, is the endpoint's", async () => {
      const dir = tempDir();
      const { report, calls } = await runSwitched("opencode-rcm", dir);
      expectRouted(report, calls, { record: true });
      // The memory was kept by auxiliary calls to the same endpoint, and they count in the run's usage.
      expect(calls.filter((c) => c.body.includes("switch-swe RCM: task state memory")).length).toBeGreaterThan(0);
      expect(report.behaviour!.usage!.all).toEqual(usageInLog(calls));
    }, 900_000);

    it("+Router: focus returns get the focus task's interactions only, without a record; a request naming nothing is routed with low confidence and gets the full history; the stored conversation keeps everything", async () => {
      const dir = tempDir();
      const { report, calls } = await runSwitched("opencode-router", dir, async (endpoint, done) => {
        // The same conversation, continued by hand with a request that names no checkout, file or symbol.
        const runDir = join(dir, "runs", `${session}.switched`);
        const home = join(runDir, "home");
        const agent = loadAgent(join(root, "data", "agents", "opencode-router.yaml"));
        const before = endpoint.calls.length;
        const opencode = join(toolsDir, "npm-opencode-ai-1.18.33", "node_modules", ".bin", "opencode");
        const env = {
          PATH: process.env.PATH ?? "",
          HOME: home,
          XDG_CONFIG_HOME: join(home, ".config"),
          XDG_DATA_HOME: join(home, ".local", "share"),
          XDG_CACHE_HOME: join(home, ".cache"),
          XDG_STATE_HOME: join(home, ".local", "state"),
          ...agent.constant_env,
          SWITCH_SWE_MODEL_KEY: "test-key",
          SWITCH_SWE_RCM_URL: `${endpoint.url}/v1`,
          SWITCH_SWE_RCM_MODEL: "scripted",
        };
        const child = spawn(opencode, ["run", "--format", "json", "--auto", "--session", done.behaviour!.conversation!], {
          cwd: join(runDir, "workspace"),
          env,
        });
        child.stdin.end("What do you think of all this?");
        child.stdout.resume();
        child.stderr.resume();
        expect(await new Promise((r) => child.on("close", r))).toBe(0);
        const later = endpoint.calls.slice(before);
        const routing = later.filter((c) => c.body.includes("switch-swe RCM: task history router"));
        expect(routing.map((c) => JSON.parse((c.answer as { text: string }).text).confidence)).toEqual([0.5]);
        // Below 0.8 the whole history goes: every task's requests are in the next coding call.
        const coding = later.filter((c) => !isAuxiliary(c));
        expect(coding.length).toBeGreaterThan(0);
        for (const text of otherTexts()) expect(coding[0]!.body).toContain(text);
        expect(coding[0]!.body).toContain("What do you think of all this?");
      });
      expectRouted(report, calls, { record: false });
      // Every request named its checkout: the router needed no model call of its own in the run.
      expect(calls.filter(isAuxiliary)).toEqual([]);
      expect(report.behaviour!.usage!.all).toEqual(usageInLog(calls));
    }, 900_000);

    it("Claude Code through the relay (+RCM, Anthropic Messages): every focus return's context holds the focus task's record and no other task's interactions; the run resolves; its usage, the relay's auxiliary calls included, is the endpoint's", async () => {
      const dir = tempDir();
      const { report, calls } = await runSwitched("claude-code-rcm", dir);
      expectRouted(report, calls, { record: true, protocol: "anthropic" });
      // The memory calls went to the same endpoint in Claude Code's own protocol, with its key.
      const memory = calls.filter((c) => c.body.includes("switch-swe RCM: task state memory"));
      expect(memory.length).toBeGreaterThan(0);
      expect(new Set(memory.map((c) => c.protocol))).toEqual(new Set(["anthropic"]));
      expect(report.behaviour!.usage!.all).toEqual(usageInLog(calls));
    }, 900_000);

    it("Codex CLI through the relay (+Router, OpenAI Responses): focus returns get the focus task's interactions only, without a record; the run resolves; its tokens and tool calls are the endpoint's (Codex says nothing of its model calls)", async () => {
      const dir = tempDir();
      const { report, calls } = await runSwitched("codex-router", dir);
      expectRouted(report, calls, { record: false, protocol: "responses" });
      expect(report.behaviour!.usage!.all).toEqual({ ...usageInLog(calls), model_calls: null });
    }, 900_000);

    it("Claude Code in the focus task's environment through the relay (+Router): the container reaches the relay on this machine as it would the endpoint; focus returns get the focus task's interactions only; usage is the endpoint's", async () => {
      const dir = tempDir();
      const { report, calls } = await runSwitched("claude-code-router-environment", dir);
      expectRouted(report, calls, { record: false });
      // Every working call was routed by the checkout its request names, with no call of the router's own.
      const decisions = readFileSync(join(dir, "runs", `${session}.switched`, "context-relay", "decisions.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { assignment: { by: string } });
      expect(decisions.length).toBeGreaterThan(0);
      expect(new Set(decisions.map((d) => d.assignment.by))).toEqual(new Set(["reference"]));
      expect(calls.filter(isAuxiliary)).toEqual([]);
      expect(report.behaviour!.usage!.all).toEqual(usageInLog(calls));
    }, 900_000);
  });
});
