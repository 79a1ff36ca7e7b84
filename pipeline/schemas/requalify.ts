import { z } from "zod";

/** The defects `switch-swe requalify` finds in a SWE-bench-family record (see DEFECT_MEANINGS). */
export const DefectKind = z.enum([
  "not_requalified",
  "gold_patch_fails",
  "f2p_passes_before",
  "f2p_unstable",
  "f2p_needs_network",
  "f2p_not_collected",
  "p2p_fails",
  "p2p_not_collected",
  "malformed_id",
  "f2p_set_differs",
]);
export type DefectKind = z.infer<typeof DefectKind>;

export const RecordDefect = z.strictObject({
  kind: DefectKind,
  /** The record's test ids concerned (for f2p_set_differs: `-id` the record's alone, `+id` ours alone). */
  tests: z.array(z.string()),
  detail: z.string(),
});
export type RecordDefect = z.infer<typeof RecordDefect>;

export const RecordAudit = z.strictObject({
  instance_id: z.string(),
  repo: z.string(),
  /** False when the record could not be re-run here: its only defect is then `not_requalified`. */
  requalified: z.boolean(),
  defects: z.array(RecordDefect),
});
export type RecordAudit = z.infer<typeof RecordAudit>;

/** `requalify-report.json`: every record of the audited file, with its defects. */
export const RequalifyReport = z.strictObject({
  source: z.string(),
  runs_per_state: z.number().int().positive(),
  executor: z.enum(["docker", "local", "auto"]),
  records: z.array(RecordAudit),
  /** Records with at least one defect of each kind. */
  by_kind: z.record(z.string(), z.number().int().nonnegative()),
});
export type RequalifyReport = z.infer<typeof RequalifyReport>;
