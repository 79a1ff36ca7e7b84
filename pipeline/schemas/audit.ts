import { z } from "zod";
import { TaskId } from "./common.ts";

export const AuditFlag = z.enum(["unjustified_test", "unverified_stage", "not_substantive", "needs_reference"]);

/** Stage 5's output: requirement ↔ verifier alignment for one task. */
export const AuditRecord = z.object({
  task_id: TaskId,
  links: z.array(
    z.object({
      test: z.string(),
      stages: z.array(z.number().int().positive()),
      evidence: z.array(z.object({ stage: z.number().int().positive(), token: z.string() })),
      public_contract: z.string().optional(),
    }),
  ),
  flags: z.array(z.object({ flag: AuditFlag, subject: z.string(), detail: z.string() })),
  decision: z.object({ verdict: z.enum(["approve", "exclude"]), auditor: z.string(), reason: z.string() }).optional(),
});
export type AuditRecord = z.infer<typeof AuditRecord>;
