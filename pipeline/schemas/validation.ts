import { z } from "zod";

/** Every check validate ran on one session pair (SPEC §2.9), and whether the pair passed all of them. */
export const ValidationReport = z.object({
  session_id: z.string(),
  passed: z.boolean(),
  checks: z.array(z.object({ check: z.string(), passed: z.boolean(), detail: z.string().optional() })),
  /**
   * Where a checkout of the session holds an interruption's answer, found by validate from the
   * repository (SPEC §2.7): reported per session, and refused when the answer rule excludes them.
   */
  interruption_answers: z.array(z.object({ task_id: z.string(), checkout: z.string(), checkout_task: z.string(), evidence: z.string() })).default([]),
});
export type ValidationReport = z.infer<typeof ValidationReport>;
