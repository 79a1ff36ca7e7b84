import type { AuditRecord, RiskModel, RuleProvenance } from "../../pipeline/schemas/audit.ts";
import { type Agreement, agreement, type Annotation, type RuleAgreement, ruleAgreement } from "./agreement.ts";
import type { Blind } from "./risk/model.ts";
import { type Annotated, drawSeed, kFold, leaveOneRepositoryOut, type Scored } from "./risk/validation.ts";
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

/** The annotated records as the cross-validation reads them. */
const annotatedRows = (input: MeasureInput): Annotated[] =>
  input.records
    .filter((r) => input.annotations.has(r.task_id))
    .map((r) => ({ input: r, repo: input.repoOf(r.task_id), score: input.annotations.get(r.task_id)!.false_negative }));

/** The model cross-validated: the one reading the judge's score where every record has one. */
const crossValidatedModel = (file: RiskModel, annotated: Annotated[]) =>
  annotated.every((r) => r.input.judge !== undefined) && file.with_judge ? file.with_judge : file.model;

/** The cross-validated rows, with the model's features (and the judge's score, where every record has one). */
function crossValidated(annotated: Annotated[], input: MeasureInput, blind: Blind): Agreement[] {
  const model = crossValidatedModel(input.model!, annotated);
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
  const rows = annotatedRows(input);
  const rules = ruleAgreement(
    annotated.map((r) => ({ id: r.task_id, flags: [...new Set(r.flags.map((f) => f.flag))], score: score(r) })),
    blind,
  );
  return { in_sample: inSample, cross_validated: input.model && rows.length >= 2 ? crossValidated(rows, input, blind) : [], rules };
}

/** A figure's mean and standard deviation over draws of the folds. */
export interface Spread {
  mean: number;
  sd: number;
}

/** The 10-fold figures over other draws of the folds: how far the shipped draw's row is luck. */
export interface FoldSpread {
  draws: number;
  kappa: Spread;
  auc: Spread;
  /** Mean number of the records scored 0 (and 3) flagged, of how many there are. */
  flagged_of_score0: Spread;
  flagged_of_score3: Spread;
  scored0: number;
  scored3: number;
}

const spread = (xs: number[]): Spread => {
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  return { mean, sd: Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / xs.length) };
};

/**
 * The cross-validated 10-fold figures over `draws` other draws of the folds (each fitted and scored
 * as the shipped row is): one draw's kappa moves by a few hundredths with the folds alone, so two
 * models are compared over many.
 */
export function foldSpread(input: MeasureInput, draws: number): FoldSpread {
  if (!input.model) throw new Error("the spread over draws of the folds needs a risk model");
  const blind = writtenFrom(input.provenance);
  const rows = annotatedRows(input);
  const model = crossValidatedModel(input.model, rows);
  const scored = Array.from({ length: draws }, (_, i) => kFold(rows, model.features, blind, model.lambda, drawSeed(i + 1)));
  const measured = scored.map((s) => byScope("10 folds by record", s));
  const flagged = (s: Scored[], score: number) => s.filter((x) => x.score === score && x.severity >= 2).length;
  return {
    draws,
    kappa: spread(measured.map((m) => m.kappa ?? 0)),
    auc: spread(measured.map((m) => m.auc ?? 0.5)),
    flagged_of_score0: spread(scored.map((s) => flagged(s, 0))),
    flagged_of_score3: spread(scored.map((s) => flagged(s, 3))),
    scored0: rows.filter((r) => r.score === 0).length,
    scored3: rows.filter((r) => r.score === 3).length,
  };
}
