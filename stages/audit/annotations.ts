import { parse } from "csv-parse/sync";
import { stringify } from "yaml";
import { sha256 } from "../../pipeline/canonical.ts";
import { SUBSTANTIAL } from "../../pipeline/schemas/audit.ts";
import { DecisionsError, type ImportedDecisions, ImportedDecisions as ImportedSchema, readImported } from "./decisions.ts";

/**
 * Human annotations of the SWE-bench Verified kind (its ensembled annotations' columns): per
 * record `false_negative` (0–3: how far the F2P tests check what the issue does not ask),
 * `underspecified` (0–3), `other_major_issues` (0–1), `filter_out`, each score's notes and who
 * decided it. Read to measure the audit against, and imported as decisions the gate follows.
 */
export interface Annotation {
  instance_id: string;
  false_negative: number;
  notes: string;
  underspecified: number;
  underspecified_notes: string;
  other_major_issues: number;
  other_notes: string;
  filter_out: boolean;
  /** Who decided each score, as the file names them (SWE-bench Verified: annotator numbers). */
  decided_by: string;
}

export class AnnotationsError extends Error {
  override name = "AnnotationsError";
}

/** A score column: absent or empty is `fallback` (a file of false_negative alone is read); otherwise a number in range. */
function score(row: Record<string, string>, field: string, max: number, where: string, fallback?: number): number {
  const text = row[field];
  if ((text === undefined || text === "") && fallback !== undefined) return fallback;
  const value = Number(text);
  if (text === undefined || text === "" || !Number.isFinite(value) || value < 0 || value > max)
    throw new AnnotationsError(`${where}: field ${field}: expected a score from 0 to ${max}, got ${JSON.stringify(text ?? null)}`);
  return Math.round(value);
}

/** Reads the annotations CSV; errors name the file, row, record and field. */
export function readAnnotations(file: string, text: string): Map<string, Annotation> {
  let rows: Record<string, string>[];
  try {
    rows = parse(text, { columns: true, skip_empty_lines: true, relax_column_count: true });
  } catch (error) {
    throw new AnnotationsError(`${file}: not a CSV file: ${(error as Error).message.split("\n")[0]}`);
  }
  const out = new Map<string, Annotation>();
  rows.forEach((row, i) => {
    if (!row.instance_id) throw new AnnotationsError(`${file} row ${i + 2}: field instance_id: missing`);
    const where = `${file} row ${i + 2}, record ${row.instance_id}`;
    const filter = (row.filter_out ?? "").trim().toLowerCase();
    if (!["", "true", "false", "1", "0"].includes(filter))
      throw new AnnotationsError(`${where}: field filter_out: expected True or False, got ${JSON.stringify(row.filter_out)}`);
    if (out.has(row.instance_id)) throw new AnnotationsError(`${where}: the record is annotated twice`);
    const decided = (["false_negative", "underspecified", "other_major_issues"] as const)
      .map((f) => (row[`${f}_decided_by`] ? `${f} by ${row[`${f}_decided_by`]}` : ""))
      .filter(Boolean);
    out.set(row.instance_id, {
      instance_id: row.instance_id,
      false_negative: score(row, "false_negative", 3, where),
      notes: row.false_negative_notes ?? "",
      underspecified: score(row, "underspecified", 3, where, 0),
      underspecified_notes: row.underspecified_notes ?? "",
      other_major_issues: score(row, "other_major_issues", 1, where, 0),
      other_notes: row.other_notes ?? "",
      filter_out: filter === "true" || filter === "1",
      decided_by: decided.join(", ") || "not named",
    });
  });
  return out;
}

/** Whether annotators' scores exclude a record: `false_negative` at or above the threshold, or `filter_out`. */
export const excludedByAnnotators = (a: Annotation, threshold = SUBSTANTIAL) => a.false_negative >= threshold || a.filter_out;

/** The notes of the score that decided: the tests' when they decide or nothing else does, else the issue's or the other issues'. */
function reasonOf(a: Annotation, threshold: number): string {
  const tests = `false_negative ${a.false_negative}: ${a.notes.trim() || "(no notes)"}`;
  if (a.false_negative >= threshold || !a.filter_out) return tests;
  if (a.underspecified >= SUBSTANTIAL && a.underspecified_notes.trim())
    return `filter_out, underspecified ${a.underspecified}: ${a.underspecified_notes.trim()}`;
  if (a.other_major_issues && a.other_notes.trim()) return `filter_out, other major issues: ${a.other_notes.trim()}`;
  return `filter_out; ${tests}`;
}

/**
 * The annotations as decisions with their provenance: a record scored `false_negative` at or
 * above the threshold, or marked `filter_out`, is excluded; every other annotated record is
 * approved. The notes are the reason; each decision covers the task's upstream stage.
 */
export function importAnnotations(
  file: string,
  bytes: Buffer,
  annotations: Map<string, Annotation>,
  options: { threshold?: number; annotators?: string } = {},
): ImportedDecisions {
  const threshold = options.threshold ?? SUBSTANTIAL;
  const decisions = [...annotations.values()]
    .sort((a, b) => (a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : 0))
    .map((a) => ({
      task: a.instance_id,
      verdict: excludedByAnnotators(a, threshold) ? ("exclude" as const) : ("approve" as const),
      reason: reasonOf(a, threshold),
      scope: "upstream" as const,
      annotators: a.decided_by,
      scores: { false_negative: a.false_negative, underspecified: a.underspecified, other_major_issues: a.other_major_issues, filter_out: a.filter_out },
    }));
  return ImportedSchema.parse({
    imported: {
      from: file,
      sha256: sha256(bytes),
      annotators: options.annotators ?? `the annotators of ${file}`,
      threshold: { false_negative: threshold, filter_out: true },
    },
    decisions,
  });
}

/** The imported decisions as the YAML file the config names. */
export function importedYaml(imported: ImportedDecisions): string {
  const head = [
    "# Decisions imported from human annotations by `switch-swe audit import-annotations`: each covers",
    "# its task's upstream stage (an extended task's authored stages keep their own hard checks).",
    "# Regenerate it from the annotations rather than editing it; an auditor's own decisions go in the",
    "# config's decisions file, which the gate reads first.",
  ];
  return `${head.join("\n")}\n${stringify(imported, { lineWidth: 0 })}`;
}

/**
 * An imported decisions file as the config names it: the YAML `import-annotations` writes, or the
 * annotations CSV itself, imported as it is read (with the threshold of 2), so that a config can
 * name the annotations a benchmark's records come with without a copy of them.
 */
export function importedFrom(file: string, text: string): ImportedDecisions {
  if (!file.toLowerCase().endsWith(".csv")) return readImported(file, text);
  try {
    return importAnnotations(file, Buffer.from(text, "utf8"), readAnnotations(file, text));
  } catch (error) {
    if (error instanceof AnnotationsError) throw new DecisionsError(error.message);
    throw error;
  }
}
