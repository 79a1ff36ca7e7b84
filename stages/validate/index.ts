import { z } from "zod";
import { SessionSpec } from "../../pipeline/schemas/session.ts";
import { ValidationReport } from "../../pipeline/schemas/validation.ts";
import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { openRepositoryAnswers } from "../../pipeline/answers/open.ts";
import { answerChecks, quoteCheck } from "./answers.ts";
import { defineStage, input, RecordError } from "../../pipeline/engine/stage.ts";
import { validateSession } from "./validate.ts";

export { validateSession } from "./validate.ts";

/** validate's own settings: none; what it checks against is the pipeline's session shape. */
export const ValidateConfig = z.strictObject({});

export const validateStage = defineStage({
  name: "validate",
  summary: "check every session pair's invariants; only sessions that pass all of them go on",
  example: "switch-swe validate --config data/demo/pipeline.yaml",
  version: "2",
  module: import.meta.url,
  configSchema: ValidateConfig,
  settings: ["session", "profiles"],
  inputs: { specs: input("schedule", "sessions", SessionSpec), taskList: input("oracle", "tasks", Task), heldoutList: input("oracle", "heldout", HeldoutTask) },
  outputs: [
    { name: "sessions", schema: SessionSpec, key: (s: SessionSpec) => s.session_id },
    { name: "reports", schema: ValidationReport, key: (r: ValidationReport) => r.session_id },
  ],
  async run(ctx, { specs, taskList, heldoutList }) {
    const tasks = new Map(
      taskList.map((t) => [t.id, { id: t.id, repo: t.snapshot.repo, sourceFiles: t.source_files, sourceDirs: t.source_dirs, stages: t.requests.length }]),
    );
    const heldout = new Map(heldoutList.map((h) => [h.task_id, h]));
    const requests = new Map(taskList.map((t) => [t.id, t.requests]));
    // The answer rule is checked from the repositories themselves, never from what select measured.
    const sessionTasks = new Set(specs.flatMap((s) => s.checkouts.map((c) => c.task_id)));
    const { repositories } = await openRepositoryAnswers(
      heldoutList.filter((h) => sessionTasks.has(h.task_id)),
      ctx.resources,
    );
    const results = await ctx.mapRecords(specs, {
      id: (s) => s.session_id,
      cache: false,
      work: async (spec): Promise<{ report: ValidationReport; spec?: SessionSpec }> => {
        const answers = await answerChecks(spec, heldout, repositories.get(spec.repo), ctx.session.answer_rule);
        const checks = [
          ...validateSession(spec, tasks, ctx.session.checkouts, ctx.session.interruptions),
          ...answers.checks,
          quoteCheck(spec, heldout, requests),
        ];
        const failed = checks.filter((c) => !c.passed);
        const report = { session_id: spec.session_id, passed: !failed.length, checks, interruption_answers: answers.interruptionAnswers };
        if (failed.length)
          throw new RecordError("validation_failed", `${spec.session_id}: ${failed.map((c) => `${c.check}: ${c.detail}`).join("; ")}`, {}, true, { report });
        return { report, spec };
      },
    });
    return { sessions: results.flatMap((r) => (r.spec ? [r.spec] : [])), reports: results.map((r) => r.report) };
  },
});
