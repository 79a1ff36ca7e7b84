import { availableParallelism } from "node:os";
import { z } from "zod";
import { QualificationRecord } from "../../pipeline/schemas/qualification.ts";
import { SplitChange } from "../../pipeline/schemas/split.ts";
import { defineStage, input } from "../../pipeline/engine/stage.ts";
import { parseWholeNumber } from "../../pipeline/validation.ts";
import { designatedTestFiles, qualificationRecord, qualifyTask, qualifyTaskInput } from "../../pipeline/qualification/qualify-task.ts";

export { classifyTests, keepDecision } from "../../pipeline/qualification/outcomes.ts";

export const QualifyConfig = z.strictObject({
  /** Runs of each state; a test whose outcome differs between them is unstable. */
  runs: z.number().int().min(1).default(3),
  /** Also run the rest of the suite, for pass-to-pass coverage beyond the touched test files. */
  full_suite: z.boolean().default(false),
});
export type QualifyConfig = z.infer<typeof QualifyConfig>;

export const qualifyStage = defineStage({
  name: "qualify",
  summary: "run the tests before and after the reference fix, several times; derive stable FAIL_TO_PASS / PASS_TO_PASS",
  example: "switch-swe qualify --config data/demo/pipeline.yaml   |   switch-swe qualify task split.json --executor docker --runs 3 --json",
  version: "1",
  module: import.meta.url,
  configSchema: QualifyConfig,
  settings: ["profiles", "execution"],
  inputs: { splits: input("split", "splits", SplitChange) },
  outputs: [{ name: "qualifications", schema: QualificationRecord, key: (q: QualificationRecord) => q.task_id }],
  flags: [{ flag: "--runs <n>", description: "runs of each state", key: "runs", parse: (value: string) => parseWholeNumber(value, 1) }],
  async run(ctx, { splits }) {
    const { profiles, errors } = ctx.profiles;
    const executor = await ctx.executor();
    const plan = ctx.resources.planEnvironments(splits, await executor.pythonOffer());
    ctx.log.info(`executor: ${executor.kind}; ${plan.size} environment(s) for ${splits.length} task(s)`);
    const jobs = ctx.execution.jobs || availableParallelism();

    const records = await ctx.mapRecords(splits, {
      id: (s) => s.task_id,
      concurrency: jobs,
      dependsOn: (s) => ({
        env: plan.dependency(s.task_id) ?? errors.get(s.repo) ?? null,
        executor: executor.kind,
        test_modules: profiles.get(s.repo)?.profile.classification.test_modules ?? null,
      }),
      work: async (split) => {
        const loaded = ctx.resources.profileOf(split.repo);
        const env = plan.environmentOf(split.task_id);
        const mirror = await ctx.resources.mirrorAt(split.repo, split.base_commit);
        const testArgs = ctx.config.full_suite ? [] : designatedTestFiles(split.files, loaded.profile.classification.test_modules);
        const checkout = (patches: { name: string; text: string }[]) => ctx.checkout(mirror, split.base_commit, patches);
        const task = qualifyTaskInput(split, {
          env,
          testArgs,
          runs: ctx.config.runs,
          checkout,
          mirror,
          infrastructureBackoffMs: ctx.execution.infrastructure_backoff_seconds.map((s) => s * 1000),
          saveLog: ctx.saveLog,
        });
        const result = await qualifyTask(executor, task, ctx.log);
        for (const r of result.runs)
          ctx.metric({
            task: split.task_id,
            state: r.state,
            run: r.run,
            pytest_seconds: r.pytestSeconds,
            wall_seconds: r.wallSeconds,
            executor: executor.kind,
          });
        return qualificationRecord(task, executor.kind, result);
      },
    });
    for (const key of executor.built) ctx.metric({ environment_built: key, build_seconds: executor.buildSeconds.get(key), executor: executor.kind });
    for (const record of records) {
      if (!record.kept) ctx.reject({ record_id: record.task_id, reason: record.reject_reason!, message: `${record.task_id}: ${record.reject_detail}` });
    }
    return { qualifications: records };
  },
});
