import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
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
import { runCli } from "../helpers/cli-in-process.ts";
import { sessionCloneSource } from "../../pipeline/session/runs.ts";
import { tempDir } from "../helpers/tmp.ts";
import { runDemo, type DemoRun } from "../helpers/demo-published.ts";

describe("the demo", () => {
  // One run of the whole pipeline, shared by the tests below (and copied to the session, harness,
  // RCM, audit and qualify tests: test/helpers/demo-run.ts). That two independent runs agree byte
  // for byte is checked on a smaller corpus by the fault matrix (test/pipeline/engine/faults.test.ts),
  // and on the whole demo by `npm run bench:determinism`.
  let a: DemoRun;
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

  it("proves every emitted task with the oracle (the order-dependent one too: whole test files run), and verify and report score submissions against the emitted benchmark", async () => {
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
    // The task whose fail-to-pass test passes only after another test of its file: the verifier
    // runs whole test files in their order, as qualification did, so its reference resolves and
    // nothing is rejected (run one by one, in sorted order, it failed).
    const intents: PullIntent[] = JSON.parse(readFileSync(join(demo.corpus.dir, "intents.json"), "utf8"));
    const orderDependent = intents.filter((i) => i.order_dependent.length).map((i) => `${i.repo.replace("/", "__")}-${i.number}`);
    expect(orderDependent).toEqual(["demo-org__textkit-16"]);
    expect(verdict.get(orderDependent[0]!)?.passed).toBe(true);
    expect(oracle.filter((r) => !r.passed)).toEqual([]);
    expect(demo.read("oracle", "rejects")).toBe("");
    const stage = demo.summary.stages.find((s) => s.stage === "oracle")!;
    expect(stage).toMatchObject({ status: "ran", in: oracle.length, rejected: 0 });

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
});
