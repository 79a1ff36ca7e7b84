import {
  AuditMeasurements,
  type AuditRecord,
  type MeasuredPrecision,
  type MeasurementMethod,
  type RiskModel,
  type RuleProvenance,
  SUBSTANTIAL,
} from "../../../pipeline/schemas/audit.ts";
import { measuredPrecision } from "../measured.ts";
import type { Blind } from "../risk/model.ts";
import { shapingRecords, writtenFrom } from "../rules/provenance.ts";
import { type Agreement, agreement, type RuleAgreement, ruleAgreement } from "./agreement.ts";
import type { Annotation } from "../annotations.ts";
import { type Annotated, drawSeed, kFold, leaveOneRepositoryOut, type Scored } from "./validation.ts";

/**
 * The audit measured against human annotations, every figure labelled by how it was measured: as
 * shipped (the shipped model and rules on these records: in sample where the audit's authors read
 * any of them, unseen where they read none), cross-validated on the given records (every weight
 * and threshold fitted without the scored record, no rule credited on a record it was written
 * from), and per rule; what the gate excluded, and how many tasks an auditor reads, in the risk's
 * order, to find half of the unfair ones.
 */
export interface Measured {
  /** Per repository and overall ("all"): the severities and risks as the audit gives them. */
  shipped: Agreement[];
  /** Overall, cross-validated: k folds by record, one repository left out at a time, and the k-fold scores of the records that shaped no rule. */
  cross_validated: Agreement[];
  rules: RuleAgreement[];
  gate: GateAgreement;
  triage: Triage[];
}

/** What the gate excluded of the annotated records, by what decided, against the annotators' scores. */
export interface GateAgreement {
  records: number;
  scored_2_or_more: number;
  base_rate: number | null;
  excluded: MeasuredPrecision;
  /** Of the records annotators scored 0: how many the gate excluded. */
  zeros_excluded: number;
  zeros: number;
  by: Record<string, number>;
}

/** Tasks read in the risk's order, riskiest first, until half of the unfair ones are found; a random order's expectation beside. */
export interface Triage {
  scheme: string;
  method: MeasurementMethod;
  read: number;
  of: number;
  found: number;
  unfair: number;
  random: number;
}

export interface MeasureInput {
  records: AuditRecord[];
  repoOf: (id: string) => string;
  annotations: Map<string, Annotation>;
  /** The risk model whose features and penalty cross-validation refits; none: rules-only severities, no cross-validation. */
  model?: RiskModel;
  provenance: RuleProvenance;
}

const CROSS: MeasurementMethod = "cross-validated on the given records";

const byScope = (scope: string, scored: Scored[]) =>
  agreement(
    scope,
    CROSS,
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

/**
 * How many tasks an auditor reads, riskiest first (ties by id), to find half of the unfair ones
 * (scored 2 or more); and how many a random order needs on average (the m-th of u unfair among n
 * falls at m(n + 1)/(u + 1)).
 */
export function triage(scheme: string, method: MeasurementMethod, scored: { id: string; risk: number; score: number }[]): Triage {
  const order = [...scored].sort((a, b) => b.risk - a.risk || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const unfair = order.filter((s) => s.score >= SUBSTANTIAL).length;
  const half = Math.ceil(unfair / 2);
  let found = 0;
  let read = 0;
  for (const s of order) {
    if (found >= half) break;
    read++;
    if (s.score >= SUBSTANTIAL) found++;
  }
  const random = unfair ? Math.round(((half * (order.length + 1)) / (unfair + 1)) * 10) / 10 : 0;
  return { scheme, method, read, of: order.length, found, unfair, random };
}

/** The cross-validated rows and triage, with the model's features (and the judge's score, where every record has one). */
function crossValidated(annotated: Annotated[], input: MeasureInput, blind: Blind): { rows: Agreement[]; triage: Triage[] } {
  const model = crossValidatedModel(input.model!, annotated);
  const folded = kFold(annotated, model.features, blind, model.lambda);
  const repoOut = leaveOneRepositoryOut(annotated, model.features, blind, model.lambda);
  const shaping = shapingRecords(input.provenance);
  return {
    rows: [
      byScope("10 folds by record", folded),
      byScope("one repository left out", repoOut),
      byScope(
        "10 folds, records that shaped no rule",
        folded.filter((s) => !shaping.has(s.id)),
      ),
    ],
    triage: [triage("10 folds by record", CROSS, folded), triage("one repository left out", CROSS, repoOut)],
  };
}

/** The gate's exclusions against the annotators' scores. */
function gateAgreement(annotated: AuditRecord[], score: (r: AuditRecord) => number, method: MeasurementMethod): GateAgreement {
  const excluded = annotated.filter((r) => r.exclusion);
  const unfair = annotated.filter((r) => score(r) >= SUBSTANTIAL).length;
  const by: Record<string, number> = {};
  for (const r of excluded) by[r.exclusion!.by] = (by[r.exclusion!.by] ?? 0) + 1;
  return {
    records: annotated.length,
    scored_2_or_more: unfair,
    base_rate: annotated.length ? Math.round((unfair / annotated.length) * 1e4) / 1e4 : null,
    excluded: measuredPrecision(excluded.length, excluded.filter((r) => score(r) >= SUBSTANTIAL).length, method),
    zeros_excluded: excluded.filter((r) => score(r) === 0).length,
    zeros: annotated.filter((r) => score(r) === 0).length,
    by,
  };
}

/** Agreement per repository and overall, cross-validated, per rule, of the gate and of the triage, over the records the annotations score. */
export function measure(input: MeasureInput): Measured {
  const annotated = input.records.filter((r) => input.annotations.has(r.task_id));
  const score = (r: AuditRecord) => input.annotations.get(r.task_id)!.false_negative;
  const seenIds = new Set([...input.provenance.looked_at.records, ...(input.model?.fitted_on.records ?? [])]);
  const method: MeasurementMethod = annotated.some((r) => seenIds.has(r.task_id)) ? "in sample" : "unseen";
  const pairs = (rs: AuditRecord[]) => rs.map((r) => ({ severity: r.severity, score: score(r), ...(r.risk === undefined ? {} : { risk: r.risk }) }));
  const repos = [...new Set(annotated.map((r) => input.repoOf(r.task_id)))].sort();
  const shipped = repos.map((repo) => agreement(repo, method, pairs(annotated.filter((r) => input.repoOf(r.task_id) === repo))));
  shipped.push(agreement("all", method, pairs(annotated)));
  const blind = writtenFrom(input.provenance);
  const rows = annotatedRows(input);
  const rules = ruleAgreement(
    annotated.map((r) => ({ id: r.task_id, flags: [...new Set(r.flags.map((f) => f.flag))], score: score(r) })),
    blind,
    (id) => seenIds.has(id),
  );
  const cross = input.model && rows.length >= 2 ? crossValidated(rows, input, blind) : { rows: [], triage: [] };
  const risked = annotated.filter((r) => r.risk !== undefined).map((r) => ({ id: r.task_id, risk: r.risk!, score: score(r) }));
  const shippedTriage = risked.length === annotated.length && risked.length ? [triage("the shipped risk", method, risked)] : [];
  return { shipped, cross_validated: cross.rows, rules, gate: gateAgreement(annotated, score, method), triage: [...shippedTriage, ...cross.triage] };
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
  const flagged = (s: Scored[], score: number) => s.filter((x) => x.score === score && x.severity >= SUBSTANTIAL).length;
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

/** What the auditors' page shows of a measurement (data/audit/measurements.json): each rule's precision, the gate's, the triage and the risk's agreement. */
export function measurementsOf(measured: Measured, recordsFile: string, annotationsFile: string): AuditMeasurements {
  const all = measured.shipped.find((a) => a.scope === "all");
  return AuditMeasurements.parse({
    why: "The audit measured against the annotated records it was built on, by `switch-swe audit fit-risk` (with the risk model beside it): each rule's precision, what the gate shipped excludes with no decision, the risk's agreement and how many tasks an auditor reads in its order to find half of the unfair ones, each with how it was measured. The auditors' page shows them. Every rule's author read these records: none of these figures is out of sample.",
    records_file: recordsFile,
    annotations_file: annotationsFile,
    annotated: measured.gate.records,
    scored_2_or_more: measured.gate.scored_2_or_more,
    rules: Object.fromEntries(measured.rules.map((r) => [r.kind, r.measured])),
    gate: { ...measured.gate.excluded, zeros_excluded: measured.gate.zeros_excluded, zeros: measured.gate.zeros },
    triage: measured.triage,
    agreement: [...(all ? [all] : []), ...measured.cross_validated].map((a) => ({
      scope: a.scope === "all" ? "as shipped, all records" : a.scope,
      method: a.method,
      records: a.records,
      kappa: a.kappa === null ? null : Math.round(a.kappa * 1e4) / 1e4,
      auc: a.auc === null ? null : Math.round(a.auc * 1e4) / 1e4,
      flagged_of_score0: a.flagged_of_score0,
      flagged_of_score3: a.flagged_of_score3,
    })),
  });
}
