import { type MeasuredPrecision, type MeasurementMethod, SUBSTANTIAL } from "../../../pipeline/schemas/audit.ts";
import { measuredPrecision } from "../measured.ts";
import { auc, cohen } from "./statistics.ts";

/**
 * Agreement between the audit's severity and human annotations of the SWE-bench Verified kind
 * (`false_negative` 0–3: how far the F2P tests check what the issue does not ask): the confusion
 * matrix with "flagged" read as severity ≥ 2 against false_negative ≥ 2, precision, recall,
 * Cohen's kappa, and the quadratically weighted kappa of severity against the 0–3 score; every
 * row says how it was measured.
 */
export interface Agreement {
  scope: string;
  method: MeasurementMethod;
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

const ratio = (a: number, b: number) => (b ? a / b : null);

/** The agreement of severities (and risks, where there are) with annotations over the records both have. */
export function agreement(scope: string, method: MeasurementMethod, pairs: { severity: number; score: number; risk?: number }[]): Agreement {
  const flagged = (s: number) => s >= SUBSTANTIAL;
  const both = pairs.filter((p) => flagged(p.severity) && flagged(p.score)).length;
  const auditOnly = pairs.filter((p) => flagged(p.severity) && !flagged(p.score)).length;
  const annotatorsOnly = pairs.filter((p) => !flagged(p.severity) && flagged(p.score)).length;
  const zeros = pairs.filter((p) => p.score === 0);
  const threes = pairs.filter((p) => p.score === 3);
  return {
    scope,
    method,
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
  /** Of the records carrying it, the share annotators scored 2 or more, its interval, and how it was measured. */
  measured: MeasuredPrecision;
  /** The records it fired on and those of them scored 2 or more: what a config's `measured` lists. */
  fired: string[];
  unfair: string[];
  /** Annotated records the rule was written from (data/audit/rules.yaml). */
  written_from: number;
  /** Records carrying it that it was not written from, and the share of those scored 2 or more. */
  elsewhere: number;
  elsewhere_precision: number | null;
}

/**
 * Each rule's agreement over annotated records. Its precision is in sample where any of the
 * records was read by the audit's authors (`seen`), and unseen only where none was.
 */
export function ruleAgreement(
  records: { id: string; flags: string[]; score: number }[],
  writtenFrom: (flag: string, id: string) => boolean,
  seen: (id: string) => boolean,
): RuleAgreement[] {
  const kinds = [...new Set(records.flatMap((r) => r.flags))].sort();
  const method = records.some((r) => seen(r.id)) ? "in sample" : "unseen";
  return kinds.map((kind) => {
    const by: [number, number, number, number] = [0, 0, 0, 0];
    const carrying = records.filter((r) => r.flags.includes(kind));
    for (const r of carrying) by[r.score as 0 | 1 | 2 | 3] += 1;
    const unfair = carrying.filter((r) => r.score >= SUBSTANTIAL);
    const elsewhere = carrying.filter((r) => !writtenFrom(kind, r.id));
    return {
      kind,
      by_score: by,
      measured: measuredPrecision(carrying.length, unfair.length, method),
      fired: carrying.map((r) => r.id),
      unfair: unfair.map((r) => r.id),
      written_from: records.filter((r) => writtenFrom(kind, r.id)).length,
      elsewhere: elsewhere.length,
      elsewhere_precision: ratio(elsewhere.filter((r) => r.score >= SUBSTANTIAL).length, elsewhere.length),
    };
  });
}
