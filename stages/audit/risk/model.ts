import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { AuditRecord, FittedRisk, RiskFeature } from "../../../pipeline/schemas/audit.ts";
import { RiskModel } from "../../../pipeline/schemas/audit.ts";
import { describeFirstIssue } from "../../../pipeline/validation.ts";
import { fitLogistic, predict } from "./logistic.ts";
import { binaryKappa, weightedKappa } from "./statistics.ts";

/**
 * The calibrated risk of a task: the probability that annotators would score its tests unfair
 * (`false_negative` ≥ 2), from a small logistic model over the rules' findings and the general
 * signals; the task's severity is the band its risk falls in. The weights are data
 * (data/audit/risk-model.json), fitted by `switch-swe audit fit-risk` over annotated records.
 */

/** What the model reads of an audited record. */
export type RiskInput = Pick<AuditRecord, "task_id" | "flags" | "links" | "signals" | "judge">;

/** The rules whose findings do not count on a record: those written from it (cross-validation's blinding). */
export type Blind = (flag: string, record: string) => boolean;
const SEES_ALL: Blind = () => false;

/** Kinds of finding that weigh on fairness, substantial on their own (severity 2 or more). */
function findings(record: RiskInput, blind: Blind): Set<string> {
  return new Set(record.flags.filter((f) => f.severity >= 2 && !blind(f.flag, record.task_id)).map((f) => f.flag));
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

const weightsOf = (model: FittedRisk) => ({ intercept: model.intercept, weights: model.features.map((f) => model.weights[f] ?? 0) });

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
      scores.map((s) => s >= 2),
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
    records.map((r) => r.score >= 2),
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
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new RiskModelError(`${path}: not a readable JSON file: ${(error as Error).message.split("\n")[0]}`);
  }
  const parsed = RiskModel.safeParse(raw);
  if (!parsed.success) throw new RiskModelError(`${path}: ${describeFirstIssue(parsed.error, raw)}`);
  return parsed.data;
}

export class RiskModelError extends Error {
  override name = "RiskModelError";
}
