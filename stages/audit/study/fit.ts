import { type AuditRecord, type FittedRisk, type RiskFeature, type RiskModel, type RuleProvenance, SUBSTANTIAL } from "../../../pipeline/schemas/audit.ts";
import type { Annotation } from "../annotations.ts";
import { writtenFrom } from "../rules/provenance.ts";
import { fitLogistic, predict } from "../risk/logistic.ts";
import { type Blind, featureValue, type RiskInput } from "../risk/model.ts";
import { binaryKappa, weightedKappa } from "./statistics.ts";

/**
 * The features the shipped model reads: the rules' substantial findings beside four general
 * signals (how many sentences leave the outcome open, how much the reference fix adds, how many
 * calls the tests make, how much of the test patch's new vocabulary is the fix's). Chosen by
 * cross-validation on the 108 annotated records (docs/AUDITING.md says which others were tried and
 * what they did; the share of unlinked tests, read until #54's third round, raised the fair records
 * flagged and was dropped).
 */
export const DEFAULT_FEATURES: RiskFeature[] = ["findings", "open_sentences", "reference_lines", "test_calls", "shared_names"];

/** Where a threshold may fall: between neighbouring risks, or below or above them all. */
function cuts(risks: number[]): number[] {
  const sorted = [...new Set(risks)].sort((a, b) => a - b);
  return [sorted[0]! - 1e-9, ...sorted.slice(1).map((r, i) => (r + sorted[i]!) / 2), sorted.at(-1)! + 1e-9];
}

/** The cut at which flagging agrees best with scores of 2 or more (Cohen's kappa); the lowest on a tie. */
function flaggingCut(risks: number[], scores: number[]): number {
  let best = { kappa: -Infinity, at: 0.5 };
  for (const at of cuts(risks)) {
    const kappa = binaryKappa(
      risks.map((r) => r >= at),
      scores.map((s) => s >= SUBSTANTIAL),
    );
    if (kappa !== null && kappa > best.kappa + 1e-12) best = { kappa, at };
  }
  return best.at;
}

/**
 * The cuts of severity 1 (at or below the flagging cut) and 3 (at or above it) at which the bands
 * agree best with the 0–3 scores (quadratically weighted kappa); the lowest on a tie.
 */
function bandCuts(risks: number[], scores: number[], two: number): [number, number, number] {
  const all = cuts(risks);
  const band = (t: [number, number, number]) => weightedKappa(risks.map((r, i) => [t.filter((c) => r >= c).length, scores[i]!]));
  let best: { kappa: number; at: [number, number, number] } = { kappa: -Infinity, at: [two, two, two] };
  for (const one of all.filter((c) => c <= two))
    for (const three of all.filter((c) => c >= two)) {
      const kappa = band([one, two, three]);
      if (kappa !== null && kappa > best.kappa + 1e-12) best = { kappa, at: [one, two, three] };
    }
  return best.at;
}

export const DEFAULT_LAMBDA = 10;

/**
 * Fits the model to annotated records: the weights (logistic, L2 penalty `lambda`), then the three
 * severity thresholds: 2 for the best kappa of flagging against scores of 2 or more, 1 and 3 below
 * and above it for the best weighted kappa of the bands against the scores. `blind` leaves out findings of rules written
 * from a record, so that a weight says what a rule is worth on records it was not written from.
 */
export function fitRisk(features: RiskFeature[], records: { input: RiskInput; score: number }[], blind: Blind, lambda = DEFAULT_LAMBDA): FittedRisk {
  const rows = records.map((r) => features.map((f) => featureValue(f, r.input, blind)));
  const fit = fitLogistic(
    rows,
    records.map((r) => r.score >= SUBSTANTIAL),
    lambda,
  );
  const model = {
    features,
    lambda,
    intercept: fit.intercept,
    weights: Object.fromEntries(features.map((f, j) => [f, fit.weights[j]!])),
    means: Object.fromEntries(features.map((f, j) => [f, fit.means[j]!])),
    thresholds: [0, 0, 0] as [number, number, number],
  };
  const risks = rows.map((row) => predict(fit, row));
  const scores = records.map((r) => r.score);
  model.thresholds = bandCuts(risks, scores, flaggingCut(risks, scores));
  return model;
}

export interface FitOptions {
  records: AuditRecord[];
  annotations: Map<string, Annotation>;
  provenance: RuleProvenance;
  features?: RiskFeature[];
  lambda?: number;
  recordsFile: string;
  annotationsFile: string;
  /** The judge that judged the records, when its score is to be a feature too. */
  judge?: { model: string; prompt_version: string };
}

/**
 * Fits the risk model to the annotated records, with no rule credited on a record it was written
 * from: a weight says what a rule's finding is worth where its author did not look. With a judge,
 * a second model also reads the judge's score.
 */
export function fitRiskModel(options: FitOptions): RiskModel {
  const annotated = options.records.filter((r) => options.annotations.has(r.task_id));
  if (annotated.length < 10) throw new Error(`the risk model needs annotated records to fit: ${annotated.length} of the records audited are annotated`);
  const rows = annotated.map((r) => ({ input: r, score: options.annotations.get(r.task_id)!.false_negative }));
  const blind = writtenFrom(options.provenance);
  const features = options.features ?? DEFAULT_FEATURES;
  const lambda = options.lambda ?? DEFAULT_LAMBDA;
  const model = fitRisk(features, rows, blind, lambda);
  const judged = options.judge && annotated.every((r) => r.judge);
  return {
    why: "The audit's risk model: P(false_negative >= 2) = sigmoid(intercept + sum of weight x feature); a task's severity is the number of thresholds its risk reaches. Fitted by `switch-swe audit fit-risk` on the annotated records below, no rule credited on a record data/audit/rules.yaml says it was written from. Refit after changing a rule, a signal or the annotations.",
    model,
    ...(judged ? { with_judge: { ...fitRisk([...features, "judge"], rows, blind, lambda), judge: options.judge! } } : {}),
    fitted_on: {
      records_file: options.recordsFile,
      annotations_file: options.annotationsFile,
      records: annotated.map((r) => r.task_id).sort(),
      scored_2_or_more: rows.filter((r) => r.score >= SUBSTANTIAL).length,
    },
  };
}
