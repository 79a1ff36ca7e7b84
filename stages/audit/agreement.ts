import { parse } from "csv-parse/sync";

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

function cohen(pairs: [number, number][], categories: number[], weight: (a: number, b: number) => number): number | null {
  const n = pairs.length;
  if (!n) return null;
  const k = categories.length;
  const index = new Map(categories.map((c, i) => [c, i]));
  const observed = Array.from({ length: k }, () => new Array<number>(k).fill(0));
  const rows = new Array<number>(k).fill(0);
  const cols = new Array<number>(k).fill(0);
  for (const [a, b] of pairs) {
    const i = index.get(a)!;
    const j = index.get(b)!;
    observed[i]![j]! += 1;
    rows[i]! += 1;
    cols[j]! += 1;
  }
  let disagreeObserved = 0;
  let disagreeExpected = 0;
  for (let i = 0; i < k; i++)
    for (let j = 0; j < k; j++) {
      const w = weight(categories[i]!, categories[j]!);
      disagreeObserved += (w * observed[i]![j]!) / n;
      disagreeExpected += (w * rows[i]! * cols[j]!) / (n * n);
    }
  return disagreeExpected === 0 ? null : 1 - disagreeObserved / disagreeExpected;
}

const ratio = (a: number, b: number) => (b ? a / b : null);

/** The agreement of severities with annotations over the records both have. */
export function agreement(scope: string, pairs: { severity: number; score: number }[]): Agreement {
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
    flagged_of_score0: `${zeros.filter((p) => flagged(p.severity)).length} of ${zeros.length}`,
    flagged_of_score3: `${threes.filter((p) => flagged(p.severity)).length} of ${threes.length}`,
  };
}

/** How often a flag kind fires on records by the annotators' score: which kinds help and which do not. */
export interface KindAgreement {
  kind: string;
  /** Records carrying the kind, among those annotators scored 0, 1, 2 and 3. */
  by_score: [number, number, number, number];
  /** Of the records carrying it, the share annotators scored 2 or more. */
  precision: number | null;
}

export function kindAgreement(records: { flags: string[]; score: number }[]): KindAgreement[] {
  const kinds = [...new Set(records.flatMap((r) => r.flags))].sort();
  return kinds.map((kind) => {
    const by: [number, number, number, number] = [0, 0, 0, 0];
    for (const r of records) if (r.flags.includes(kind)) by[r.score as 0 | 1 | 2 | 3] += 1;
    const total = by.reduce((a, b) => a + b, 0);
    return { kind, by_score: by, precision: ratio(by[2] + by[3], total) };
  });
}
