import { availableParallelism } from "node:os";
import { z } from "zod";
import type { EnvironmentSpec, Executor } from "../../pipeline/executors/types.ts";
import type { Logger } from "../../pipeline/logger.ts";
import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import { OracleRecord } from "../../pipeline/schemas/oracle.ts";
import { QualificationRecord } from "../../pipeline/schemas/qualification.ts";
import type { ClassificationRules } from "../../pipeline/schemas/repo-profile.ts";
import { SplitChange } from "../../pipeline/schemas/split.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { defineStage, input, RecordError } from "../../pipeline/engine/stage.ts";
import { verifyArtifact } from "../../pipeline/verifier/verify.ts";

export const OracleConfig = z.strictObject({
  /** Verifier runs of the reference patch (all must resolve) and of the empty patch (none may). */
  runs: z.number().int().min(1).default(3),
});
export type OracleConfig = z.infer<typeof OracleConfig>;

/** The held-out verifier assets of a task, as the verifier reads them. */
export function heldoutTask(task: Task, split: SplitChange, env: EnvironmentSpec): HeldoutTask {
  return HeldoutTask.parse({
    task_id: task.id,
    repo: task.snapshot.repo,
    base_commit: task.snapshot.base_commit,
    implementation_patch: split.implementation_patch,
    test_patch: task.verifier.test_patch,
    fail_to_pass: task.verifier.fail_to_pass,
    pass_to_pass: task.verifier.pass_to_pass,
    test_command: task.verifier.test_command,
    environment: env.recipe,
    environment_as_of: env.asOf,
    upstream: {
      patch: split.upstream_patch,
      pull_number: split.pull_number,
      merge_commit: split.merge_commit,
    },
  });
}

export interface OracleTaskInput {
  heldout: HeldoutTask;
  env: EnvironmentSpec;
  mirror: string;
  rules: ClassificationRules;
  runs: number;
  scratch: string;
  infrastructureBackoffMs?: readonly number[];
}

/**
 * Proves a task solvable and not already solved, under the verifier itself: the reference
 * implementation patch must resolve in every one of `runs` runs and the empty patch in none.
 * Each check stops at its first contrary run; the verdict is decided by then.
 */
export async function oracleTask(executor: Executor, input: OracleTaskInput, log: Logger): Promise<OracleRecord> {
  const runs: OracleRecord["runs"] = [];
  const check = async (patch: "reference" | "empty", wantResolved: boolean): Promise<boolean> => {
    for (let run = 0; run < input.runs; run++) {
      const outcome = await verifyArtifact(
        executor,
        {
          task: input.heldout,
          env: input.env,
          mirror: input.mirror,
          artifact: patch === "reference" ? input.heldout.implementation_patch : "",
          rules: input.rules,
          scratch: input.scratch,
          infrastructureBackoffMs: input.infrastructureBackoffMs,
        },
        log,
      );
      if (outcome.infrastructure_fault)
        throw new RecordError(
          "infrastructure_fault",
          `${input.heldout.task_id}: oracle, ${patch} patch, run ${run + 1}: ${outcome.infrastructure_fault}`,
          {},
          false,
        );
      const notPassed = Object.fromEntries(Object.entries(outcome.tests).filter(([, status]) => status !== "passed"));
      runs.push({
        patch,
        run,
        resolved: outcome.resolved,
        not_passed: outcome.applied ? notPassed : { "(patch)": outcome.apply_error ?? "does not apply" },
        integrity_problems: outcome.integrity_problems,
        infrastructure_retries: outcome.infrastructure_retries,
      });
      if (outcome.resolved !== wantResolved) return false;
    }
    return true;
  };
  const referenceResolves = await check("reference", true);
  const emptyNeverResolves = await check("empty", false);
  const failure = (patch: "reference" | "empty") => runs.find((r) => r.patch === patch && r.resolved !== (patch === "reference"))!;
  let detail: string | undefined;
  if (!referenceResolves) {
    const run = failure("reference");
    const why = [...Object.entries(run.not_passed).map(([t, s]) => `${t} ${s}`), ...run.integrity_problems];
    // Every required test passed with the reference in qualification, over the same whole test
    // files; what differs here is the guarded runner (and a fresh checkout). A test that passes
    // only unguarded leans on something the guard changes: name that, not the task.
    const hint = Object.keys(run.not_passed).some((t) => t !== "(patch)")
      ? ` (these tests passed in qualification over the same test files; under the guarded runner they do not)`
      : "";
    detail = `the reference implementation does not resolve under the verifier (run ${run.run + 1} of ${input.runs}): ${why.join("; ")}${hint}`;
  }
  if (!emptyNeverResolves) {
    const run = failure("empty");
    detail = [detail, `the empty patch resolves (run ${run.run + 1} of ${input.runs}): every required test already passes without a fix`]
      .filter(Boolean)
      .join("; and ");
  }
  return OracleRecord.parse({
    task_id: input.heldout.task_id,
    runs_per_patch: input.runs,
    runs,
    passed: !detail,
    ...(detail ? { reject_reason: "oracle_failed", reject_detail: detail } : {}),
  });
}

export const oracleStage = defineStage({
  name: "oracle",
  summary: "prove every task solvable under the verifier: the reference patch resolves in every run, the empty patch in none",
  example: "switch-swe oracle --config data/demo/pipeline.yaml",
  version: "1",
  module: import.meta.url,
  configSchema: OracleConfig,
  gate: { noun: "task(s)" },
  settings: ["profiles", "execution"],
  inputs: {
    qualifications: input("qualify", "qualifications", QualificationRecord),
    splitList: input("split", "splits", SplitChange),
    tasks: input("audit", "tasks", Task),
  },
  outputs: [
    { name: "results", schema: OracleRecord, key: (r: OracleRecord) => r.task_id },
    { name: "tasks", schema: Task, key: (t: Task) => t.id },
    { name: "heldout", schema: HeldoutTask, key: (h: HeldoutTask) => h.task_id },
  ],
  async run(ctx, { qualifications, splitList, tasks }) {
    const splits = new Map(splitList.map((s) => [s.task_id, s]));
    // Each task runs in the environment it was qualified in, read from qualify's record, never planned again.
    const qualified = new Map(qualifications.map((q) => [q.task_id, q]));
    const executor = await ctx.executor();
    const scratch = ctx.scratchDir();

    const checked = await ctx.mapRecords(tasks, {
      id: (t) => t.id,
      concurrency: ctx.execution.jobs || availableParallelism(),
      dependsOn: (t) => ({
        split: splits.get(t.id) ?? null,
        env: qualified.get(t.id)?.environment_key ?? null,
        executor: executor.kind,
      }),
      work: async (task) => {
        const split = splits.get(task.id);
        const loaded = ctx.resources.profileOf(task.snapshot.repo);
        if (!split) throw new RecordError("malformed_record", `${task.id}: no split record of this task`);
        const env = ctx.resources.environmentOf(task, qualified.get(task.id));
        const heldout = heldoutTask(task, split, env);
        const mirror = await ctx.resources.mirrorAt(task.snapshot.repo, task.snapshot.base_commit);
        const record = await oracleTask(
          executor,
          {
            heldout,
            env,
            mirror,
            rules: loaded.profile.classification,
            runs: ctx.config.runs,
            scratch,
            infrastructureBackoffMs: ctx.execution.infrastructure_backoff_seconds.map((s) => s * 1000),
          },
          ctx.log,
        );
        return { record, task, heldout };
      },
    });
    const passed = checked.filter((c) => c.record.passed);
    for (const { record } of checked) {
      if (!record.passed) {
        ctx.reject({ record_id: record.task_id, reason: "oracle_failed", message: `${record.task_id}: ${record.reject_detail}` });
        // Said on the console too: an unsolvable task is news to whoever regenerates the benchmark.
        ctx.log.warn(`oracle rejected ${record.task_id}: ${record.reject_detail}`);
      }
    }
    ctx.log.info(
      `oracle: ${checked.length} task(s) checked (${ctx.config.runs} verifier run(s) of the reference and of the empty patch each): ${passed.length} pass, ${checked.length - passed.length} rejected`,
    );
    return { results: checked.map((c) => c.record), tasks: passed.map((c) => c.task), heldout: passed.map((c) => c.heldout) };
  },
});
