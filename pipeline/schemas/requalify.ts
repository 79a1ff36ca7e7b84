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

export const Agreement = z.enum(["exact", "subset", "superset", "overlap", "disjoint"]);
export const DifferenceClass = z.enum(["needs_network", "unstable", "id_format", "environment", "unlisted", "passes_before", "other"]);

/** One test in one of our sets and not the record's (extra), or the other way round (missing), with why (see switch-swe fidelity). */
export const SetDifference = z.strictObject({
  set: z.enum(["f2p", "p2p"]),
  side: z.enum(["missing", "extra"]),
  test: z.string(),
  class: DifferenceClass,
});

export const RecordAudit = z.strictObject({
  instance_id: z.string(),
  repo: z.string(),
  /** The record's SWE-bench version (its era), when it has one. */
  version: z.string().optional(),
  /** False when the record could not be re-run here: its only defect is then `not_requalified`. */
  requalified: z.boolean(),
  /** How our FAIL_TO_PASS and PASS_TO_PASS relate to the record's (requalified records only). */
  f2p_agreement: Agreement.optional(),
  p2p_agreement: Agreement.optional(),
  differences: z.array(SetDifference).default([]),
  defects: z.array(RecordDefect),
});
export type RecordAudit = z.infer<typeof RecordAudit>;

/** One repository and era (SWE-bench version) of the audited file, summed up. */
export const EraSummary = z.strictObject({
  repo: z.string(),
  version: z.string(),
  records: z.number().int().nonnegative(),
  /** Records whose environment built and whose every run reported outcomes. */
  requalified: z.number().int().nonnegative(),
  f2p_exact: z.number().int().nonnegative(),
  /** Exact, or every difference of a named class other than `other`. */
  f2p_explained: z.number().int().nonnegative(),
  p2p_exact: z.number().int().nonnegative(),
  /** Differences of the F2P and P2P sets by class, over the era's records. */
  f2p_classes: z.record(z.string(), z.number().int().nonnegative()),
  p2p_classes: z.record(z.string(), z.number().int().nonnegative()),
  /** Why the other records were not requalified, by reason. */
  not_requalified: z.record(z.string(), z.number().int().nonnegative()),
});
export type EraSummary = z.infer<typeof EraSummary>;

/** `requalify-report.json`: every record of the audited file, with its defects. */
export const RequalifyReport = z.strictObject({
  source: z.string(),
  runs_per_state: z.number().int().positive(),
  executor: z.enum(["docker", "local", "auto"]),
  /** Per repository and era, sorted by both: what was built and how the sets agree. */
  eras: z.array(EraSummary),
  records: z.array(RecordAudit),
  /** Records with at least one defect of each kind. */
  by_kind: z.record(z.string(), z.number().int().nonnegative()),
});
export type RequalifyReport = z.infer<typeof RequalifyReport>;
