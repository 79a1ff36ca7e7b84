import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AnyStage } from "../engine/stage.ts";
import { writeFileAtomic } from "../atomic.ts";
import { type Agreement, compareSet, explained, type TaskFidelity } from "./compare.ts";
import { requireFinished } from "../engine/engine.ts";
import { type Logger } from "../logger.ts";
import { Candidate } from "../schemas/candidate.ts";
import { Reject } from "../schemas/common.ts";
import { QualificationRecord } from "../schemas/qualification.ts";
import { ExecutionSettings, PipelineSettings } from "../engine/settings.ts";
import { Project } from "../project/project.ts";
import { WorkLayout } from "../work-layout.ts";
import { localCopyOf } from "../git.ts";
import type { ExecutorChoice } from "../engine/settings.ts";

export interface FidelityOptions {
  /** The stages to run (mine, split and qualify are taken from them): the command line's registry. */
  stages: AnyStage[];
  records: string;
  profilesDir: string;
  workDir: string;
  executor: ExecutorChoice;
  /** With `executor: queue`: the Redis of the queue (its workers run the Docker executor). */
  redis?: string;
  /** With `executor: queue`: host:port of the git service the workers fetch the repositories from. */
  gitService?: string;
  runs: number;
  jobs: number;
  /** Only these task ids of the file (all when empty). */
  tasks?: string[];
  /** A directory of `owner__name.bundle` git bundles to clone from instead of each profile's clone_url. */
  mirrors?: string;
  /** Whether environments may use uv-managed Python downloads (execution.python_downloads). */
  pythonDownloads?: "auto" | "yes" | "no";
  log: Logger;
}

export interface FidelityResult {
  tasks: TaskFidelity[];
  /** Distinct environments (recipe and as-of date) the tasks needed, and how many were built by this run. */
  environments: number;
  builds: { key: string; seconds?: number }[];
}

/** What qualifying a SWE-bench-family file's tasks gave: the records as mined, our qualifications, and why the others were not qualified. */
export interface QualifiedRecords {
  candidates: Candidate[];
  qualifications: Map<string, QualificationRecord>;
  rejects: Map<string, Reject>;
  environments: number;
  builds: { key: string; seconds?: number }[];
}

/**
 * Qualifies a SWE-bench-family file's tasks with the repositories' profiles, as the pipeline
 * would (mine → split → qualify, in `workDir`, which keeps environments between runs).
 */
export async function qualifyRecords(options: FidelityOptions): Promise<QualifiedRecords> {
  const workDir = resolve(options.workDir);
  const layout = new WorkLayout(workDir);
  mkdirSync(workDir, { recursive: true });
  const settings = PipelineSettings.parse({
    profiles_dir: profilesWithMirrors(options.profilesDir, options.mirrors, layout),
    execution: ExecutionSettings.parse({ jobs: options.jobs, ...(options.pythonDownloads ? { python_downloads: options.pythonDownloads } : {}) }),
  });
  // A subset of the file's tasks: the records of those tasks alone, written beside the artifacts.
  let records = resolve(options.records);
  if (options.tasks?.length) {
    const wanted = new Set(options.tasks);
    // a line that is not JSON is kept: mine then rejects it naming the file, the line and why
    const idOf = (line: string) => {
      try {
        return (JSON.parse(line) as { instance_id?: string }).instance_id;
      } catch {
        return undefined;
      }
    };
    const lines = readFileSync(records, "utf8")
      .split("\n")
      .filter((line) => line.trim() && (idOf(line) === undefined || wanted.has(idOf(line)!)));
    records = layout.fidelityRecords;
    await writeFileAtomic(records, lines.map((l) => `${l}\n`).join(""));
  }
  const stageConfigs = { mine: { swebench: [records] }, split: {}, qualify: { runs: options.runs } };
  const project = Project.of(
    { name: "fidelity", seed: "fidelity", workDir, baseDir: workDir, settings, stageConfigs },
    { stages: options.stages, log: options.log, overrides: { executor: options.executor, redis: options.redis, gitService: options.gitService } },
  );
  project.store.clearMetrics();
  try {
    for (const stage of ["mine", "split", "qualify"] as const) requireFinished(await project.run({ only: stage }), `qualifying ${options.records}`);
  } finally {
    await project.close();
  }

  const { store } = project;
  const candidates = (await store.readRecords("mine", "candidates")).records.map((r) => Candidate.parse(r));
  const qualifications = new Map(
    (await store.readRecords("qualify", "qualifications")).records.map((r) => QualificationRecord.parse(r)).map((q) => [q.task_id, q]),
  );
  const rejects = new Map<string, Reject>();
  for (const stage of ["mine", "split", "qualify"] as const) {
    const stored = await store.readRecords(stage, "rejects").catch(() => ({ records: [] as unknown[] }));
    for (const r of stored.records.map((x) => Reject.parse(x))) rejects.set(r.record_id, r);
  }
  const environments = new Set([...qualifications.values()].map((q) => q.environment_key)).size;
  const builds = store
    .readMetrics()
    .filter((m) => m.stage === "qualify" && m.environment_built)
    .map((m) => ({ key: String(m.environment_built), ...(typeof m.build_seconds === "number" ? { seconds: m.build_seconds } : {}) }));
  return { candidates: candidates.filter((c) => !options.tasks?.length || options.tasks.includes(c.id)), qualifications, rejects, environments, builds };
}

/** Qualifies a SWE-bench-family file's tasks (qualifyRecords) and compares each task's sets with the record's. */
export async function measureFidelity(options: FidelityOptions): Promise<FidelityResult> {
  const { candidates, qualifications, rejects, environments, builds } = await qualifyRecords(options);
  const tasks: TaskFidelity[] = candidates.map((candidate) => {
    const q = qualifications.get(candidate.id);
    if (!q) {
      const reject = rejects.get(candidate.id);
      return { task: candidate.id, environment: { built: false, reason: reject?.reason ?? "not_run", message: reject?.message ?? "not qualified" } };
    }
    return {
      task: candidate.id,
      environment: { built: true },
      kept: q.kept,
      failToPass: compareSet(q.fail_to_pass, candidate.upstream_fail_to_pass, q, { theirOther: candidate.upstream_pass_to_pass, failToPass: true }),
      passToPass: compareSet(q.pass_to_pass, candidate.upstream_pass_to_pass, q, { theirOther: candidate.upstream_fail_to_pass }),
    };
  });
  return { tasks, environments, builds };
}

/**
 * The profiles to use: as they are, or copied into the work directory with `clone_url` pointed at
 * a local copy for each repository the mirrors directory has one of (offline work, CI): an
 * `OWNER__NAME.bundle`, an `OWNER__NAME.git` bare repository or an `OWNER__NAME` clone.
 */
function profilesWithMirrors(profilesDir: string, mirrors: string | undefined, layout: WorkLayout): string {
  if (!mirrors) return resolve(profilesDir);
  const copy = layout.fidelityProfiles;
  mkdirSync(copy, { recursive: true });
  for (const name of readdirSync(profilesDir).filter((f) => f.endsWith(".json"))) {
    const profile = JSON.parse(readFileSync(join(profilesDir, name), "utf8")) as { clone_url?: string };
    const stem = name.replace(/\.json$/, "");
    const local = localCopyOf(mirrors, stem.replace("__", "/"));
    if (local) profile.clone_url = local;
    writeFileSync(join(copy, name), JSON.stringify(profile, null, 2) + "\n");
  }
  return copy;
}

/** The report a maintainer reads: a line per task, then the totals. */
export function formatFidelity(result: FidelityResult): string {
  const lines: string[] = [];
  const differences = (c: TaskFidelity["failToPass"]) =>
    c ? [...c.missing.map((d) => `-${d.test} [${d.class}]`), ...c.extra.map((d) => `+${d.test} [${d.class}]`)] : [];
  for (const t of result.tasks) {
    if (!t.environment.built) {
      lines.push(`${t.task}: not qualified: ${t.environment.reason}: ${t.environment.message.split("\n")[0]!.slice(0, 400)}`);
      continue;
    }
    lines.push(`${t.task}: ${t.kept ? "kept" : "rejected"}; F2P ${t.failToPass!.agreement}, P2P ${t.passToPass!.agreement}`);
    for (const d of differences(t.failToPass)) lines.push(`    F2P ${d}`);
    const p2p = differences(t.passToPass);
    for (const d of p2p.slice(0, 10)) lines.push(`    P2P ${d}`);
    if (p2p.length > 10) lines.push(`    P2P … ${p2p.length - 10} more`);
  }
  const n = result.tasks.length;
  const built = result.tasks.filter((t) => t.environment.built);
  const count = (which: "failToPass" | "passToPass", a: Agreement) => built.filter((t) => t[which]!.agreement === a).length;
  const classes = new Map<string, number>();
  for (const t of built) for (const d of [...t.failToPass!.missing, ...t.failToPass!.extra]) classes.set(d.class, (classes.get(d.class) ?? 0) + 1);
  lines.push("");
  lines.push(`tasks: ${n}; qualified (environment built and every run reported): ${built.length}/${n}; kept: ${built.filter((t) => t.kept).length}`);
  const agreements: Agreement[] = ["exact", "subset", "superset", "overlap", "disjoint"];
  lines.push(
    `F2P: ${agreements.map((a) => `${a} ${count("failToPass", a)}`).join(", ")}; exact or every difference explained: ${built.filter(explained).length}/${n}`,
  );
  lines.push(`P2P: ${agreements.map((a) => `${a} ${count("passToPass", a)}`).join(", ")}`);
  lines.push(`F2P differences by class: ${[...classes].map(([c, k]) => `${c} ${k}`).join(", ") || "none"}`);
  const notBuilt = new Map<string, number>();
  for (const t of result.tasks) if (!t.environment.built) notBuilt.set(t.environment.reason, (notBuilt.get(t.environment.reason) ?? 0) + 1);
  if (notBuilt.size) lines.push(`not qualified, by reason: ${[...notBuilt].map(([r, k]) => `${r} ${k}`).join(", ")}`);
  const timed = result.builds.filter((b) => b.seconds !== undefined);
  const seconds = timed.reduce((s, b) => s + b.seconds!, 0);
  lines.push(
    `environments: ${result.environments} distinct; layers built by this run: ${result.builds.length}${timed.length ? `, ${(seconds / timed.length).toFixed(1)} s per build, ${(seconds / 60).toFixed(1)} min in all` : ""}`,
  );
  return lines.join("\n") + "\n";
}
