import { fileURLToPath } from "node:url";
import type { AuditRecord, FittedRisk, RiskFeature } from "../../../pipeline/schemas/audit.ts";
import { RiskModel, SUBSTANTIAL } from "../../../pipeline/schemas/audit.ts";
import { readReviewed } from "../../../pipeline/validation.ts";
import { predict } from "./logistic.ts";

/**
 * The calibrated risk of a task: the probability that annotators would score its tests unfair
 * (`false_negative` ≥ 2), from a small logistic model over the rules' findings and the general
 * signals; the task's severity is the band its risk falls in. The weights are data
 * (data/audit/risk-model.json), fitted by `switch-swe audit fit-risk` over annotated records
 * (study/fit.ts). The risk ranks tasks for an auditor: it never excludes one.
 */

/** What the model reads of an audited record. */
export type RiskInput = Pick<AuditRecord, "task_id" | "flags" | "links" | "signals" | "judge">;

/** The rules whose findings do not count on a record: those written from it (cross-validation's blinding). */
export type Blind = (flag: string, record: string) => boolean;
export const SEES_ALL: Blind = () => false;

/** Kinds of finding that weigh on fairness, substantial on their own. */
function findings(record: RiskInput, blind: Blind): Set<string> {
  return new Set(record.flags.filter((f) => f.severity >= SUBSTANTIAL && !blind(f.flag, record.task_id)).map((f) => f.flag));
}

/** Each feature of a record, as the model reads it: counts damped (log, capped), shares as they are. */
export function featureValue(feature: RiskFeature, record: RiskInput, blind: Blind = SEES_ALL): number {
  const s = record.signals;
  switch (feature) {
    case "findings":
      return Math.min(3, findings(record, blind).size);
    case "unlinked": {
      const unlinked = new Set(record.flags.filter((f) => f.flag === "unjustified_test" && !blind(f.flag, record.task_id)).map((f) => f.subject));
      return record.links.length ? unlinked.size / record.links.length : 0;
    }
    case "open_sentences":
      return Math.min(3, s.open_sentences);
    case "reference_lines":
      return Math.log1p(s.reference_lines);
    case "test_calls":
      return Math.log1p(s.test_calls);
    case "leaked_names":
      return Math.log1p(s.leaked_names);
    case "tests_added":
      return s.tests_added;
    case "shared_names":
      return s.shared_names;
    case "judge":
      if (!record.judge) throw new Error(`${record.task_id}: the risk model reads the judge's score, and the judge has not judged it`);
      return record.judge.severity / 3;
  }
}

export const featureRow = (model: Pick<FittedRisk, "features">, record: RiskInput, blind?: Blind) => model.features.map((f) => featureValue(f, record, blind));

export const weightsOf = (model: FittedRisk) => ({ intercept: model.intercept, weights: model.features.map((f) => model.weights[f] ?? 0) });

/** The record's risk under the model. */
export function riskOf(model: FittedRisk, record: RiskInput, blind?: Blind): number {
  return predict(weightsOf(model), featureRow(model, record, blind));
}

/** Each feature's share of a record's risk: its weight times its distance from the mean of the records fitted, on the log-odds scale. */
export function shares(model: FittedRisk, record: RiskInput): { feature: RiskFeature; value: number; share: number }[] {
  return model.features.map((feature) => {
    const value = featureValue(feature, record);
    return { feature, value, share: (model.weights[feature] ?? 0) * (value - (model.means[feature] ?? 0)) };
  });
}

/** The severity band of a risk. */
export function severityOfRisk(model: Pick<FittedRisk, "thresholds">, risk: number): number {
  return model.thresholds.filter((t) => risk >= t).length;
}

const rounded = (x: number) => Math.round(x * 10000) / 10000;

/** The model that scores a record: the one that reads the judge's score where the judge judged it and the file has one. */
export function modelFor(file: RiskModel, record: RiskInput): FittedRisk {
  return record.judge !== undefined && file.with_judge !== undefined ? file.with_judge : file.model;
}

/**
 * A record's risk (four decimals) and the severity band it falls in, under the model with the
 * judge's score where the judge judged the record and the file has such a model, else the model
 * without it.
 */
export function assess(file: RiskModel, record: RiskInput): { risk: number; severity: number; judged: boolean } {
  const model = modelFor(file, record);
  const judged = model !== file.model;
  const risk = rounded(riskOf(model, record));
  return { risk, severity: severityOfRisk(model, risk), judged };
}

/** The shipped model, read next to the code (its weights are part of the audit's code identity). */
const SHIPPED = new URL("../../../data/audit/risk-model.json", import.meta.url);

/** Reads a risk model file; errors name the file and the field. */
export function loadRiskModel(path: string = fileURLToPath(SHIPPED)): RiskModel {
  return readReviewed(path, RiskModel, { error: (message) => new RiskModelError(message) });
}

export class RiskModelError extends Error {
  override name = "RiskModelError";
}
