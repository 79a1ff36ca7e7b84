import { z } from "zod";
import { SessionSpec } from "../../pipeline/schemas/session.ts";
import type { Task } from "../../pipeline/schemas/task.ts";
import { defineStage, RecordError } from "../../pipeline/stage.ts";
import { DEFAULT_CHECKOUTS } from "../schedule/index.ts";
import { validateSession } from "./validate.ts";

export { validateSession } from "./validate.ts";

export const ValidationReport = z.object({
  session_id: z.string(),
  passed: z.boolean(),
  checks: z.array(z.object({ check: z.string(), passed: z.boolean(), detail: z.string().optional() })),
});
export type ValidationReport = z.infer<typeof ValidationReport>;

export const ValidateConfig = z.strictObject({
  checkouts: z.array(z.string()).default(DEFAULT_CHECKOUTS),
  interruptions: z.number().int().min(1).default(4),
});

export const validateStage = defineStage({
  name: "validate",
  summary: "check every session pair's invariants; only sessions that pass all of them go on",
  example: "switch-swe validate --config data/demo/pipeline.yaml",
  version: "1",
  module: import.meta.url,
  configSchema: ValidateConfig,
  inputs: [
    { stage: "schedule", name: "sessions" },
    { stage: "oracle", name: "tasks" },
  ],
  outputs: [
    { name: "sessions", schema: SessionSpec, key: (s: SessionSpec) => s.session_id },
    { name: "reports", schema: ValidationReport, key: (r: ValidationReport) => r.session_id },
  ],
  async run(ctx) {
    const tasks = new Map(ctx.input<Task>({ stage: "oracle", name: "tasks" }).map((t) => [t.id, { id: t.id, repo: t.snapshot.repo, sourceFiles: t.source_files, sourceDirs: t.source_dirs, stages: t.requests.length }]));
    const specs = ctx.input<SessionSpec>({ stage: "schedule", name: "sessions" });
    const results = await ctx.mapRecords(specs, {
      id: (s) => s.session_id,
      cache: false,
      work: (spec): { report: ValidationReport; spec?: SessionSpec } => {
        const checks = validateSession(spec, tasks, ctx.config.checkouts, ctx.config.interruptions);
        const failed = checks.filter((c) => !c.passed);
        const report = { session_id: spec.session_id, passed: !failed.length, checks };
        if (failed.length) throw new RecordError("validation_failed", `${spec.session_id}: ${failed.map((c) => `${c.check}: ${c.detail}`).join("; ")}`, {}, true, { report });
        return { report, spec };
      },
    });
    return { sessions: results.flatMap((r) => (r.spec ? [r.spec] : [])), reports: results.map((r) => r.report) };
  },
});
