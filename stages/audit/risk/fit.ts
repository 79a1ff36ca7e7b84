import type { AuditRecord, RiskFeature, RiskModel, RuleProvenance } from "../../../pipeline/schemas/audit.ts";
import type { Annotation } from "../agreement.ts";
import { writtenFrom } from "../rules/provenance.ts";
import { DEFAULT_LAMBDA, fitRisk } from "./model.ts";

/**
 * The features the shipped model reads: the rules' substantial findings beside four general
 * signals (how many sentences leave the outcome open, how much the reference fix adds, how many
 * calls the tests make, how much of the test patch's new vocabulary is the fix's). Chosen by
 * cross-validation on the 108 annotated records (docs/AUDITING.md says which others were tried and
 * what they did; the share of unlinked tests, read until #54's third round, raised the fair records
 * flagged and was dropped).
 */
export const DEFAULT_FEATURES: RiskFeature[] = ["findings", "open_sentences", "reference_lines", "test_calls", "shared_names"];

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
      scored_2_or_more: rows.filter((r) => r.score >= 2).length,
    },
  };
}
