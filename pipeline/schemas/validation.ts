import { z } from "zod";

/** Every check validate ran on one session pair (SPEC §2.9), and whether the pair passed all of them. */
export const ValidationReport = z.object({
  session_id: z.string(),
  passed: z.boolean(),
  checks: z.array(z.object({ check: z.string(), passed: z.boolean(), detail: z.string().optional() })),
});
export type ValidationReport = z.infer<typeof ValidationReport>;
