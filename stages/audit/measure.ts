import type { AuditRecord, RiskModel, RuleProvenance } from "../../pipeline/schemas/audit.ts";
import { type Agreement, agreement, type Annotation, type RuleAgreement, ruleAgreement } from "./agreement.ts";
import type { Blind } from "./risk/model.ts";
import { type Annotated, kFold, leaveOneRepositoryOut, type Scored } from "./risk/validation.ts";
import { shapingRecords, writtenFrom } from "./rules/provenance.ts";

/**
 * The audit measured against human annotations: in the sample (the shipped model on the records
 * the rules were written looking at), and cross-validated (every weight and threshold fitted
 * without the scored record, no rule credited on a record it was written from), the figures to
 * expect of records nobody has looked at; and per rule, where it fires and how it does on records
 * it was not written from.
 */
export interface Measured {
  /** Per repository and overall ("all"): the severities and risks as the audit gives them. */
  in_sample: Agreement[];
  /** Overall, cross-validated: k folds by record, one repository left out at a time, and the k-fold scores of the records that shaped no rule. */
  cross_validated: Agreement[];
  rules: RuleAgreement[];
}

export interface MeasureInput {
  records: AuditRecord[];
  repoOf: (id: string) => string;
  annotations: Map<string, Annotation>;
  /** The risk model whose features and penalty cross-validation refits; none: rules-only severities, no cross-validation. */
  model?: RiskModel;
  provenance: RuleProvenance;
}

const byScope = (scope: string, scored: Scored[]) =>
  agreement(
    scope,
    scored.map((s) => ({ severity: s.severity, score: s.score, risk: s.risk })),
  );

/** The cross-validated rows, with the model's features (and the judge's score, where every record has one). */
function crossValidated(annotated: Annotated[], input: MeasureInput, blind: Blind): Agreement[] {
  const file = input.model!;
  const judged = annotated.every((r) => r.input.judge !== undefined) && file.with_judge !== undefined;
  const model = judged ? file.with_judge! : file.model;
  const folded = kFold(annotated, model.features, blind, model.lambda);
  const shaping = shapingRecords(input.provenance);
  return [
    byScope("10 folds by record", folded),
    byScope("one repository left out", leaveOneRepositoryOut(annotated, model.features, blind, model.lambda)),
    byScope(
      "10 folds, records that shaped no rule",
      folded.filter((s) => !shaping.has(s.id)),
    ),
  ];
}

/** Agreement per repository and overall, cross-validated, and per rule, over the records the annotations score. */
export function measure(input: MeasureInput): Measured {
  const annotated = input.records.filter((r) => input.annotations.has(r.task_id));
  const score = (r: AuditRecord) => input.annotations.get(r.task_id)!.false_negative;
  const pairs = (rs: AuditRecord[]) => rs.map((r) => ({ severity: r.severity, score: score(r), ...(r.risk === undefined ? {} : { risk: r.risk }) }));
  const repos = [...new Set(annotated.map((r) => input.repoOf(r.task_id)))].sort();
  const inSample = repos.map((repo) => agreement(repo, pairs(annotated.filter((r) => input.repoOf(r.task_id) === repo))));
  inSample.push(agreement("all", pairs(annotated)));
  const blind = writtenFrom(input.provenance);
  const rows: Annotated[] = annotated.map((r) => ({ input: r, repo: input.repoOf(r.task_id), score: score(r) }));
  const rules = ruleAgreement(
    annotated.map((r) => ({ id: r.task_id, flags: [...new Set(r.flags.map((f) => f.flag))], score: score(r) })),
    blind,
  );
  return { in_sample: inSample, cross_validated: input.model && rows.length >= 2 ? crossValidated(rows, input, blind) : [], rules };
}
