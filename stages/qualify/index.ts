import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../pipeline/logger.ts";
import { z } from "zod";
import { createExecutor } from "../../pipeline/executors/index.ts";
import { planEnvironments, recipeFor } from "../../pipeline/executors/environment.ts";
import { cloneSourceOf, loadProfiles, type LoadedProfile } from "../../pipeline/profiles.ts";
import type { Candidate } from "../../pipeline/schemas/candidate.ts";
import { QualificationRecord } from "../../pipeline/schemas/qualification.ts";
import type { SplitChange } from "../../pipeline/schemas/split.ts";
import { defineStage, RecordError } from "../../pipeline/stage.ts";
import { designatedTestFiles, qualificationRecord, qualifyTask } from "./run.ts";

export { classifyTests, keepDecision } from "./outcomes.ts";

/** Each task's environment: its repository's recipe (with overrides), as of the earliest PR sharing it. */
export function environmentsForTasks(splits: SplitChange[], candidates: Map<string, Candidate>, profiles: Map<string, LoadedProfile>) {
  const known = splits.filter((s) => profiles.has(s.repo));
  return planEnvironments(
    known.map((s) => ({ id: s.task_id, repo: s.repo, recipe: recipeFor(profiles.get(s.repo)!.profile, { id: s.task_id, version: candidates.get(s.task_id)?.version }), createdAt: candidates.get(s.task_id)?.created_at ?? null })),
  );
}

/** How test runs are executed: shared by qualify and the oracle (and read by `verify`). */
export const ExecutionFields = {
  executor: z.enum(["auto", "docker", "local"]).default("auto"),
  /** Tasks worked on at once; 0 means one per core. */
  jobs: z.number().int().min(0).default(0),
  profiles_dir: z.string().default("data/repos"),
  /** Pauses before the first and second retry after an infrastructure fault. */
  infrastructure_backoff_seconds: z.array(z.number().nonnegative()).min(1).default([15, 30]),
  limits: z.strictObject({ memory_mb: z.number().int().positive().default(2048), pids: z.number().int().positive().default(512), cpus: z.number().positive().default(1) }).default({ memory_mb: 2048, pids: 512, cpus: 1 }),
};

export const QualifyConfig = z.strictObject({
  ...ExecutionFields,
  /** Runs of each state; a test whose outcome differs between them is unstable. */
  runs: z.number().int().min(1).default(3),
  /** Also run the rest of the suite, for pass-to-pass coverage beyond the touched test files. */
  full_suite: z.boolean().default(false),
});
export type QualifyConfig = z.infer<typeof QualifyConfig>;

/** The executor a stage's execution settings ask for; environments live under `<work>/envs`, shared by every stage. */
export function executorFor(config: { executor: "auto" | "docker" | "local"; limits: { memory_mb: number; pids: number; cpus: number } }, workDir: string, log: Logger) {
  const { limits } = config;
  return createExecutor(config.executor, { envRoot: join(workDir, "envs"), workDir, log, limits: { memoryBytes: limits.memory_mb * 2 ** 20, pids: limits.pids, cpus: limits.cpus } });
}

export const qualifyStage = defineStage({
  name: "qualify",
  summary: "run the tests before and after the reference fix, several times; derive stable FAIL_TO_PASS / PASS_TO_PASS",
  example: "switch-swe qualify --config data/demo/pipeline.yaml   |   switch-swe qualify --task split.json --executor docker --runs 3 --json",
  version: "1",
  module: import.meta.url,
  configSchema: QualifyConfig,
  volatileConfig: ["jobs", "infrastructure_backoff_seconds"],
  inputs: [
    { stage: "mine", name: "candidates" },
    { stage: "split", name: "splits" },
  ],
  outputs: [{ name: "qualifications", schema: QualificationRecord, key: (q: QualificationRecord) => q.task_id }],
  externalFiles: (config) => [config.profiles_dir],
  async run(ctx) {
    const { profiles, errors } = loadProfiles(ctx.files);
    const candidates = new Map(ctx.input<Candidate>({ stage: "mine", name: "candidates" }).map((c) => [c.id, c]));
    const splits = ctx.input<SplitChange>({ stage: "split", name: "splits" });
    const environments = environmentsForTasks(splits, candidates, profiles);
    const executor = await executorFor(ctx.config, ctx.workPath(""), ctx.log);
    ctx.log.info(`executor: ${executor.kind}; ${new Set([...environments.values()].map((e) => e.key)).size} environment(s) for ${splits.length} task(s)`);
    const scratch = ctx.workPath("scratch");
    mkdirSync(scratch, { recursive: true });
    const jobs = ctx.config.jobs || (await import("node:os")).availableParallelism();

    const records = await ctx.mapRecords(splits, {
      id: (s) => s.task_id,
      concurrency: jobs,
      dependsOn: (s) => ({ env: environments.get(s.task_id)?.key ?? errors.get(s.repo) ?? null, executor: executor.kind }),
      work: async (split) => {
        const loaded = profiles.get(split.repo);
        if (!loaded) throw new RecordError("unknown_repository", `${split.task_id}: field repo: ${errors.get(split.repo) ?? `no profile for ${split.repo} in ${ctx.config.profiles_dir}`}`, { field: "repo" });
        const env = environments.get(split.task_id)!;
        const mirror = await ctx.mirrors.ensure(split.repo, cloneSourceOf(split.repo, loaded, ctx.resolvePath), split.base_commit);
        const testArgs = ctx.config.full_suite ? [] : designatedTestFiles(split.files);
        const input = { id: split.task_id, mirror, baseCommit: split.base_commit, testPatch: split.test_patch, implementationPatch: split.implementation_patch, env, testArgs, runs: ctx.config.runs, scratch, infrastructureBackoffMs: ctx.config.infrastructure_backoff_seconds.map((s) => s * 1000) };
        const result = await qualifyTask(executor, input, ctx.log);
        for (const r of result.runs) ctx.metric({ task: split.task_id, state: r.state, run: r.run, pytest_seconds: r.pytestSeconds, wall_seconds: r.wallSeconds, executor: executor.kind });
        return qualificationRecord(input, executor.kind, result);
      },
    });
    for (const key of executor.built) ctx.metric({ environment_built: key, executor: executor.kind });
    for (const record of records) {
      if (!record.kept) ctx.reject({ record_id: record.task_id, reason: record.reject_reason!, message: `${record.task_id}: ${record.reject_detail}` });
    }
    return { qualifications: records };
  },
});
