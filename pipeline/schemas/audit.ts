import { z } from "zod";
import { TaskId } from "./common.ts";

/**
 * What the audit can say of a task. Linkage (SPEC §2.5): `unjustified_test` (no request mentions
 * what an F2P test checks), `unverified_stage`, `not_substantive`, `needs_reference`. Fairness, in
 * the terms of SWE-bench Verified's `false_negative` annotations: `new_name`, `exact_message`, `unrequested_exception`, `unrequested_warning`, `unrequested_test`,
 * `exact_format`, `unrequested_behaviour`, `unrequested_code`, `open_choice`, `changed_expectation`, `unchanged_test`, `unshown_case`,
 * `untested_alternative`. What the audit could not read: `no_repository` (per
 * task), `source_not_found` (per test); these never count against a task.
 */
export const AuditFlag = z.enum([
  "unjustified_test",
  "unverified_stage",
  "not_substantive",
  "needs_reference",
  "new_name",
  "exact_message",
  "exact_format",
  "unrequested_exception",
  "unrequested_warning",
  "unrequested_test",
  "unrequested_behaviour",
  "unrequested_code",
  "open_choice",
  "changed_expectation",
  "unchanged_test",
  "unshown_case",
  "untested_alternative",
  "no_repository",
  "source_not_found",
]);
export type AuditFlag = z.infer<typeof AuditFlag>;

/** 0 fine, 1 minor gaps, 2 substantial, 3 severe: the annotators' scale. */
export const Severity = z.number().int().min(0).max(3);

export const AuditFlagRecord = z.object({
  flag: AuditFlag,
  subject: z.string(),
  detail: z.string(),
  /** What this flag alone makes of the task, on the 0–3 scale. */
  severity: Severity,
  /** Lines a person can check: the file (at the base with the test patch applied), line number and text. */
  evidence: z.array(z.object({ file: z.string(), line: z.number().int().positive(), text: z.string() })).default([]),
});
export type AuditFlagRecord = z.infer<typeof AuditFlagRecord>;

/** Stage 5's output: requirement ↔ verifier alignment for one task. */
export const AuditRecord = z.object({
  task_id: TaskId,
  /** Where test sources were read: the repository at the base with the test patch applied, or the test patch alone. */
  source: z.enum(["repository", "test_patch"]),
  /** The task's severity on the 0–3 scale: the highest of its flags', 3 when two kinds of substantial flag meet. */
  severity: Severity,
  links: z.array(
    z.object({
      test: z.string(),
      stages: z.array(z.number().int().positive()),
      evidence: z.array(z.object({ stage: z.number().int().positive(), token: z.string() })),
      public_contract: z.string().optional(),
    }),
  ),
  flags: z.array(AuditFlagRecord),
  decision: z.object({ verdict: z.enum(["approve", "exclude"]), auditor: z.string(), reason: z.string() }).optional(),
});
export type AuditRecord = z.infer<typeof AuditRecord>;
