import { z } from "zod";
import { TaskId, TestStatus } from "./common.ts";

/** What `switch-swe verify` writes for one submission (SPEC §3). */
export const VerificationReport = z.object({
  session_id: z.string(),
  task_id: TaskId,
  condition: z.enum(["control", "switched"]),
  artifact_sha256: z.string(),
  applied: z.boolean(),
  apply_error: z.string().optional(),
  tests: z.record(z.string(), TestStatus),
  resolved: z.boolean(),
  infrastructure_retries: z.number().int().min(0).max(2),
  infrastructure_fault: z.string().optional(),
});
export type VerificationReport = z.infer<typeof VerificationReport>;
