import { parse } from "csv-parse/sync";
import { auc, cohen } from "./risk/statistics.ts";

/**
 * Agreement between the audit's severity and human annotations of the SWE-bench Verified kind
 * (`false_negative` 0–3: how far the F2P tests check what the issue does not ask): the confusion
 * matrix with "flagged" read as severity ≥ 2 against false_negative ≥ 2, precision, recall,
 * Cohen's kappa, and the quadratically weighted kappa of severity against the 0–3 score.
 */
export interface Annotation {
  instance_id: string;
  false_negative: number;
  notes: string;
}

export interface Agreement {
  scope: string;
  records: number;
  /** audit flagged & annotators ≥ 2, flagged & < 2, not flagged & ≥ 2, neither. */
  both: number;
  audit_only: number;
  annotators_only: number;
  neither: number;
  precision: number | null;
  recall: number | null;
  kappa: number | null;
  weighted_kappa: number | null;
  /** The area under the ROC curve of the risk against scores of 2 or more (null without a risk, or without both kinds of record). */
  auc: number | null;
  /** Of the records annotators scored 0 and 3: how many the audit flagged. */
  flagged_of_score0: string;
  flagged_of_score3: string;
}

export const FLAGGED_AT = 2;

/** Reads the annotations CSV (SWE-bench Verified's columns); errors name the file, row and field. */
export function readAnnotations(file: string, text: string): Map<string, Annotation> {
  let rows: Record<string, string>[];
  try {
    rows = parse(text, { columns: true, skip_empty_lines: true, relax_column_count: true });
  } catch (error) {
    throw new AnnotationsError(`${file}: not a CSV file: ${(error as Error).message.split("\n")[0]}`);
  }
  const out = new Map<string, Annotation>();
  rows.forEach((row, i) => {
    const where = `${file} row ${i + 2}`;
    if (!row.instance_id) throw new AnnotationsError(`${where}: field instance_id: missing`);
    const score = Number(row.false_negative);
    if (row.false_negative === undefined || row.false_negative === "" || !Number.isFinite(score) || score < 0 || score > 3)
      throw new AnnotationsError(
        `${where}, record ${row.instance_id}: field false_negative: expected a score from 0 to 3, got ${JSON.stringify(row.false_negative ?? null)}`,
      );
    out.set(row.instance_id, { instance_id: row.instance_id, false_negative: Math.round(score), notes: row.false_negative_notes ?? "" });
  });
  return out;
}

export class AnnotationsError extends Error {
  override name = "AnnotationsError";
}

const ratio = (a: number, b: number) => (b ? a / b : null);

/** The agreement of severities (and risks, where there are) with annotations over the records both have. */
export function agreement(scope: string, pairs: { severity: number; score: number; risk?: number }[]): Agreement {
  const flagged = (s: number) => s >= FLAGGED_AT;
  const both = pairs.filter((p) => flagged(p.severity) && flagged(p.score)).length;
  const auditOnly = pairs.filter((p) => flagged(p.severity) && !flagged(p.score)).length;
  const annotatorsOnly = pairs.filter((p) => !flagged(p.severity) && flagged(p.score)).length;
  const zeros = pairs.filter((p) => p.score === 0);
  const threes = pairs.filter((p) => p.score === 3);
  return {
    scope,
    records: pairs.length,
    both,
    audit_only: auditOnly,
    annotators_only: annotatorsOnly,
    neither: pairs.length - both - auditOnly - annotatorsOnly,
    precision: ratio(both, both + auditOnly),
    recall: ratio(both, both + annotatorsOnly),
    kappa: cohen(
      pairs.map((p) => [Number(flagged(p.severity)), Number(flagged(p.score))]),
      [0, 1],
      (a, b) => (a === b ? 0 : 1),
    ),
    weighted_kappa: cohen(
      pairs.map((p) => [p.severity, p.score]),
      [0, 1, 2, 3],
      (a, b) => (a - b) ** 2,
    ),
    auc:
      pairs.length && pairs.every((p) => p.risk !== undefined)
        ? auc(
            pairs.map((p) => p.risk!),
            pairs.map((p) => flagged(p.score)),
          )
        : null,
    flagged_of_score0: `${zeros.filter((p) => flagged(p.severity)).length} of ${zeros.length}`,
    flagged_of_score3: `${threes.filter((p) => flagged(p.severity)).length} of ${threes.length}`,
  };
}

/**
 * How often a rule fires on records by the annotators' score, and how it does where nobody wrote
 * it from the record: which rules carry signal, and which only learned their own records.
 */
export interface RuleAgreement {
  kind: string;
  /** Records carrying the rule's flag, among those annotators scored 0, 1, 2 and 3. */
  by_score: [number, number, number, number];
  /** Of the records carrying it, the share annotators scored 2 or more. */
  precision: number | null;
  /** Annotated records the rule was written from (data/audit/rules.yaml). */
  written_from: number;
  /** Records carrying it that it was not written from, and the share of those scored 2 or more. */
  elsewhere: number;
  elsewhere_precision: number | null;
}

export function ruleAgreement(records: { id: string; flags: string[]; score: number }[], writtenFrom: (flag: string, id: string) => boolean): RuleAgreement[] {
  const kinds = [...new Set(records.flatMap((r) => r.flags))].sort();
  return kinds.map((kind) => {
    const by: [number, number, number, number] = [0, 0, 0, 0];
    const carrying = records.filter((r) => r.flags.includes(kind));
    for (const r of carrying) by[r.score as 0 | 1 | 2 | 3] += 1;
    const elsewhere = carrying.filter((r) => !writtenFrom(kind, r.id));
    return {
      kind,
      by_score: by,
      precision: ratio(by[2] + by[3], carrying.length),
      written_from: records.filter((r) => writtenFrom(kind, r.id)).length,
      elsewhere: elsewhere.length,
      elsewhere_precision: ratio(elsewhere.filter((r) => r.score >= 2).length, elsewhere.length),
    };
  });
}
