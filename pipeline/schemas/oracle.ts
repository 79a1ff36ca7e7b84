import { z } from "zod";
import { RejectReason, TaskId } from "./common.ts";

/** One verifier run in the oracle: which patch, whether it resolved, and the required tests that did not pass. */
export const OracleRun = z.object({
  patch: z.enum(["reference", "empty"]),
  run: z.number().int().nonnegative(),
  resolved: z.boolean(),
  not_passed: z.record(z.string(), z.string()),
  integrity_problems: z.array(z.string()),
  infrastructure_retries: z.number().int().min(0).max(2),
});

/** The oracle's verdict on one task: the reference resolves in every run, the empty patch in none. */
export const OracleRecord = z.object({
  task_id: TaskId,
  runs_per_patch: z.number().int().positive(),
  runs: z.array(OracleRun),
  passed: z.boolean(),
  reject_reason: RejectReason.optional(),
  reject_detail: z.string().optional(),
});
export type OracleRecord = z.infer<typeof OracleRecord>;
