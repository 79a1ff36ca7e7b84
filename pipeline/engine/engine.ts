import { resolve } from "node:path";
import { recoverPublishedDirectory, removeStaleTempFiles } from "../atomic.ts";
import { acquireRunLock, removeLeftovers, RunLockError } from "./leftovers.ts";
import type { Logger } from "../logger.ts";
import type { Progress } from "../progress.ts";
import { StageName } from "../schemas/common.ts";
import { PipelineSettings } from "./settings.ts";
import { inputsOf, type AnyStage } from "./stage.ts";
import { PipelineError, runStage, type RunResources } from "./stage-run.ts";
import type { Workspace } from "../executors/workspace.ts";
import type { ArtifactStore } from "./store.ts";

export { parseStageConfig, PipelineError } from "./stage-run.ts";

/** What one run of the stage engine is given: the project's work directory (its store and workspace) and its config. */
export interface EngineOptions {
  /** The work directory's artifacts, record cache and lock file. */
  store: ArtifactStore;
  /** The work directory's mirrors, scratch, logs and executors; the caller opens and closes it. */
  workspace: Workspace;
  /** Relative paths in stage configs are resolved against this (the config file's directory). */
  baseDir: string;
  stages: AnyStage[];
  /** Raw per-stage config, validated here by each stage's schema. */
  stageConfigs: Partial<Record<StageName, unknown>>;
  /** The config's pipeline-level settings (profiles_dir, execution, session); defaults when absent. */
  settings?: PipelineSettings;
  seed: string;
  /** The benchmark's name (the config's `name`). */
  name?: string;
  log: Logger;
  progress: Progress;
}

export interface RunOptions {
  force?: boolean;
  /**
   * Run later stages even after a stage had transient failures. Off by default: a stage that
   * could not do all its work must not let later stages publish a smaller benchmark over a good one.
   */
  keepGoing?: boolean;
  /** Run every stage, forcing this one and all after it. */
  from?: StageName;
  /** Run this stage alone, from the artifacts already in the work directory. */
  only?: StageName;
  /**
   * Run these stages even when their inputs, config and code are unchanged, with their records'
   * caches: what they read lies outside the pipeline and changed (the demo's GitHub API, rebuilt).
   */
  recheck?: StageName[];
}

/** `incomplete`: the stage ran, but some records failed for reasons that may not recur (see failures.ts). */
export type StageStatus = "ran" | "incomplete" | "up_to_date" | "failed" | "not_built";

export interface StageSummary {
  stage: StageName;
  status: StageStatus;
  in: number;
  out: number;
  rejected: number;
  /** Rejects counted by reason, for the run's summary. */
  by_reason?: Record<string, number>;
  /** Set for a gate stage: what it checks, so the summary states its verdict even with no rejects. */
  gate?: string;
  seconds: number;
  /** Records whose cached result was reused inside a stage that ran. */
  reused: number;
  /** The first few transient failures of an incomplete stage, for the summary. */
  transient?: string[];
  /** What the stage said of its run (a model's cost, say). */
  notes?: string[];
  /** A listing gate's rejects, one line each. */
  listed?: string[];
  error?: string;
}

export interface RunSummary {
  ok: boolean;
  stages: StageSummary[];
}

/** A run whose stages did not all finish, where the caller needs their outputs: said as a fact (exit 1), not a bug. */
export class RunIncomplete extends Error {
  override name = "RunIncomplete";
}

/**
 * Throws RunIncomplete, naming each stage that did not finish and why, unless every stage of the
 * summary did: for callers that read a stage's artifacts after running it.
 */
export function requireFinished(summary: RunSummary, what: string): void {
  if (summary.ok) return;
  const unfinished = summary.stages
    .filter((s) => s.status === "failed" || s.status === "incomplete")
    .map((s) => `${s.stage} ${s.status}${s.error ? `: ${s.error}` : s.transient?.length ? `: ${s.transient.join("; ")}` : ""}`);
  throw new RunIncomplete(`${what}: ${unfinished.join("; ") || "the run did not finish"} (run again once the cause is gone: finished records are reused)`);
}

/**
 * The stage graph, ordered by what each stage reads: a stage comes after every stage whose
 * artifacts it declares as inputs (a stage a plugin adds finds its place so), and among stages
 * ready at once the one registered first goes first, so the order is the same on every run.
 * Checked when the pipeline is built (before any stage runs): every input a stage declares is an
 * output of an earlier stage, with the same schema. A stage registered twice, an input nobody
 * produces, or stages that read each other's outputs in a circle are programming errors.
 */
export function orderStages(stages: AnyStage[]): AnyStage[] {
  const byName = new Map(stages.map((s) => [s.name, s]));
  if (byName.size !== stages.length) throw new PipelineError("a stage is registered twice");
  const ordered = byInputs(stages);
  for (const [index, stage] of ordered.entries()) {
    for (const [arg, spec] of inputsOf(stage)) {
      const producer = ordered.slice(0, index).find((s) => s.name === spec.stage);
      const output = producer?.outputs.find((o) => o.name === spec.name);
      if (!output) throw new PipelineError(`stage ${stage.name}: input '${arg}' reads ${spec.stage}/${spec.name}, which no earlier stage writes`);
      if (output.schema !== spec.schema)
        throw new PipelineError(`stage ${stage.name}: input '${arg}' expects another schema than ${spec.stage} writes for ${spec.name}`);
    }
  }
  return ordered;
}

/** Stages in an order where each comes after the producers of its inputs that are registered; ties keep the registration order. */
function byInputs(stages: AnyStage[]): AnyStage[] {
  const registered = new Set(stages.map((s) => s.name));
  const producers = (stage: AnyStage) =>
    new Set(inputsOf(stage).flatMap(([, spec]) => (registered.has(spec.stage) && spec.stage !== stage.name ? [spec.stage] : [])));
  const ordered: AnyStage[] = [];
  const placed = new Set<string>();
  const waiting = [...stages];
  while (waiting.length) {
    const next = waiting.findIndex((stage) => [...producers(stage)].every((p) => placed.has(p)));
    if (next < 0) throw new PipelineError(`stages ${waiting.map((s) => s.name).join(", ")} read each other's outputs in a circle`);
    const [stage] = waiting.splice(next, 1);
    ordered.push(stage!);
    placed.add(stage!.name);
  }
  return ordered;
}

export async function runPipeline(options: EngineOptions, runOptions: RunOptions = {}): Promise<RunSummary> {
  const { store, workspace } = options;
  const workDir = workspace.dir;
  let release: () => void;
  try {
    release = acquireRunLock(workspace.layout);
  } catch (error) {
    if (error instanceof RunLockError) throw new PipelineError(error.message);
    throw error;
  }
  try {
    const leftovers = await removeLeftovers(workspace.layout, options.log);
    if (leftovers.length) options.log.info(`removed what an interrupted run left behind: ${leftovers.join(", ")}`);
    let removed = removeStaleTempFiles(workDir);
    for (const entry of Object.values(store.readLock().stages)) {
      for (const dir of entry?.published_dirs ?? [])
        removed += recoverPublishedDirectory(resolve(options.baseDir, dir)) + removeStaleTempFiles(resolve(options.baseDir, dir));
    }
    if (removed) options.log.info(`removed ${removed} temporary file(s) left by an interrupted run`);
    const settings = options.settings ?? PipelineSettings.parse({});
    const run: RunResources = {
      baseDir: options.baseDir,
      seed: options.seed,
      benchmark: options.name ?? "benchmark",
      settings,
      log: options.log,
      progress: options.progress,
      workspace,
    };
    return await runStages(store, run, options, runOptions);
  } finally {
    release();
  }
}

async function runStages(store: ArtifactStore, run: RunResources, options: EngineOptions, runOptions: RunOptions): Promise<RunSummary> {
  const stages = orderStages(options.stages);
  const built = new Set(stages.map((s) => s.name));
  const summaries: StageSummary[] = [];
  const order = stages.map((s) => s.name);
  const forceFromIndex = runOptions.from ? order.indexOf(runOptions.from) : Infinity;
  if (runOptions.only && !built.has(runOptions.only)) {
    throw new PipelineError(`stage '${runOptions.only}' is not built in this version of switch-swe`);
  }
  if (runOptions.from && !built.has(runOptions.from)) {
    throw new PipelineError(`stage '${runOptions.from}' is not built in this version of switch-swe`);
  }

  let failed = false;
  let stopped = false;
  for (const stage of stages) {
    const name = stage.name;
    if (runOptions.only && runOptions.only !== name) continue;
    if (stopped) break;
    const force = Boolean(runOptions.force) || order.indexOf(name) >= forceFromIndex;
    const started = performance.now();
    try {
      const summary = await runStage(
        store,
        run,
        stage,
        options.stageConfigs[name],
        force,
        Boolean(runOptions.keepGoing),
        Boolean(runOptions.recheck?.includes(name)),
      );
      summaries.push({ ...summary, seconds: (performance.now() - started) / 1000, ...(stage.gate ? { gate: stage.gate.noun } : {}) });
      if (summary.status === "incomplete") {
        failed = true;
        if (!runOptions.keepGoing) {
          stopped = true;
          options.log.warn(
            `${name}: stopping here; later stages keep the outputs of their last complete run (run again once the cause is gone, or pass --keep-going)`,
          );
        }
      }
    } catch (error) {
      stopped = true;
      failed = true;
      const message = error instanceof Error ? error.message : String(error);
      options.log.error(`${name}: ${message}`);
      summaries.push({ ...emptySummary(name, "failed"), seconds: (performance.now() - started) / 1000, error: message });
    }
  }
  // The stages of SPEC §2 this build lacks, said as such.
  if (!runOptions.only) for (const name of StageName.options) if (!built.has(name)) summaries.push(emptySummary(name, "not_built"));
  return { ok: !failed, stages: summaries };
}

function emptySummary(stage: StageName, status: StageStatus): StageSummary {
  return { stage, status, in: 0, out: 0, rejected: 0, seconds: 0, reused: 0 };
}

export function formatSummary(summary: RunSummary): string {
  const rows = [["stage", "status", "in", "out", "rejected", "reused", "time"]];
  for (const s of summary.stages) {
    rows.push([s.stage, s.status.replaceAll("_", " "), String(s.in), String(s.out), String(s.rejected), String(s.reused), `${s.seconds.toFixed(2)}s`]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const table = rows.map((r) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")).join("\n");
  // What could not be done this time, first: these stages run again next time.
  const unfinished = summary.stages
    .filter((s) => s.status === "incomplete" || s.status === "failed")
    .map((s) =>
      s.status === "failed"
        ? `  ${s.stage}: failed: ${s.error}`
        : [`  ${s.stage}: records failed for reasons that may not recur (nothing of theirs was cached):`, ...(s.transient ?? []).map((t) => `    ${t}`)].join(
            "\n",
          ),
    );
  // Why records left, stage by stage; a gate's verdict is always stated, rejects or not.
  const reasons = summary.stages
    .filter((s) => s.rejected > 0 || (s.gate && (s.status === "ran" || s.status === "incomplete" || s.status === "up_to_date")))
    .map((s) => {
      const list = Object.entries(s.by_reason ?? {})
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([reason, n]) => `${reason} ${n}`)
        .join(", ");
      const line = s.gate
        ? `${s.stage}: ${s.rejected} of ${s.in} ${s.gate} rejected${list ? ` (${list})` : ""}`
        : `${s.stage}: ${s.rejected} rejected (${list || "see its rejects.jsonl"})`;
      return [line, ...(s.listed ?? []).map((l) => `  ${l}`)].join("\n  ");
    });
  const notes = summary.stages.flatMap((s) => (s.notes ?? []).map((n) => `  ${s.stage}: ${n}${s.status === "up_to_date" ? " (its last run)" : ""}`));
  const sections = [table];
  if (unfinished.length) sections.push(`not finished (the run exits non-zero; run it again once the cause is gone):\n${unfinished.join("\n")}`);
  if (reasons.length) sections.push(`rejects by reason:\n${reasons.map((l) => `  ${l}`).join("\n")}`);
  if (notes.length) sections.push(`notes:\n${notes.join("\n")}`);
  return sections.join("\n\n");
}
