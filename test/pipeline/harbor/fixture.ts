import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { silentLogger } from "../../../pipeline/logger.ts";
import { OpenedBenchmark } from "../../../pipeline/project/benchmark.ts";
import { HeldoutTask } from "../../../pipeline/schemas/heldout.ts";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { BUILT_STAGES } from "../../../stages/index.ts";
import { prepareDemoCopy } from "../../helpers/demo-copy.ts";

/**
 * A session of the demo's geometry repository for the Harbor tests: five of its tasks, the focus
 * in the middle checkout, the other four earlier tasks (the focus's fix, merged after all of
 * their base revisions, is in none of their checkouts), with every task's held-out asset written
 * where emit writes it, and the benchmark opened.
 */

export const FOCUS = "demo-org__geometry-29";
export const OTHERS = ["demo-org__geometry-3", "demo-org__geometry-5", "demo-org__geometry-7", "demo-org__geometry-9"];
export const SESSION = "session-harbor-fixture";
export const FOCUS_PATH = "/workspace/w02";
export const F2P = [
  ...["basic", "maximum", "none", "precision", "rejects_text"].map((t) => `tests/test_measure_units.py::test_mark_angle_${t}`),
  ...["basic", "maximum", "none", "precision", "rejects_text"].map((t) => `tests/test_shapes_square.py::test_tilt_depth_${t}`),
];
export const P2P = ["tests/test_measure_units.py::test_units_scale", "tests/test_shapes_square.py::test_square_scale"];
const FINALIZE = "Finish this task and prepare it for evaluation: complete the work you consider unfinished, then stop.";

interface CorpusRecord {
  instance_id: string;
  base_commit: string;
  patch: string;
  test_patch: string;
  problem_statement: string;
}

/** Every file under `dir`, relative to it. */
export const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)).map((f) => `${e.name}/${f}`) : [e.name]))
    .sort();

export interface HarborFixture {
  bench: OpenedBenchmark;
  spec: SessionSpec;
  heldout: HeldoutTask;
  mirror: string;
  sessionsDir: string;
  configPath: string;
}

/** The tests a test patch adds, as node ids (an interruption's held-out lists: never run here, only its reference is applied). */
const addedTests = (patch: string) =>
  [...patch.matchAll(/^\+\+\+ b\/(\S+)[\s\S]*?(?=^diff --git|$(?![\s\S]))/gm)].flatMap((m) =>
    [...m[0].matchAll(/^\+def (test_\w+)/gm)].map((t) => `${m[1]}::${t[1]}`),
  );

export async function harborFixture(dir: string): Promise<HarborFixture> {
  const demo = await prepareDemoCopy(dir);
  await demo.server.stop();
  const records = new Map(
    readFileSync(demo.corpus.recordsFile, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as CorpusRecord)
      .map((r) => [r.instance_id, r]),
  );
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
  const sessionsDir = join(emitted, "sessions");
  mkdirSync(join(emitted, "heldout"), { recursive: true });
  mkdirSync(sessionsDir, { recursive: true });
  const spec = SessionSpec.parse({
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
  // The focus's upstream change as history holds it (the squashed commit of its pull request, full index), as a derived checkout reverses it.
  const repo = join(demo.corpus.dir, "repos", "demo-org__geometry");
  const merged = execFileSync("git", ["log", "-1", "--format=%H", "--fixed-strings", `--grep=(#${FOCUS.split("-").pop()})`], {
    cwd: repo,
    encoding: "utf8",
  }).trim();
  const focusUpstream = execFileSync("git", ["diff", "--full-index", "--binary", `${merged}~1`, merged], { cwd: repo, encoding: "utf8" });
  const heldoutOf = (id: string) => {
    const r = records.get(id)!;
    return HeldoutTask.parse({
      task_id: id,
      repo: "demo-org/geometry",
      base_commit: r.base_commit,
      implementation_patch: r.patch,
      test_patch: r.test_patch,
      fail_to_pass: id === FOCUS ? F2P : addedTests(r.test_patch),
      pass_to_pass: id === FOCUS ? P2P : [],
      test_command: "python -m pytest",
      environment: { python: "3.11", pip_requirements: ["pytest"] },
      environment_as_of: "2024-03-06T09:00:00Z",
      upstream:
        id === FOCUS
          ? { patch: focusUpstream, pull_number: null, merge_commit: merged }
          : { patch: r.patch + r.test_patch, pull_number: null, merge_commit: null },
    });
  };
  for (const id of tasks) writeFileSync(join(emitted, "heldout", `${id}.json`), JSON.stringify(heldoutOf(id), null, 2));
  const bench = OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, log: silentLogger });
  const mirror = await bench.workspace.mirrors.ensure(
    spec.repo,
    bench.cloneSource(spec.repo, join(sessionsDir, spec.clone_url!)),
    records.get(FOCUS)!.base_commit,
  );
  return { bench, spec, heldout: heldoutOf(FOCUS), mirror, sessionsDir, configPath: demo.configPath };
}
