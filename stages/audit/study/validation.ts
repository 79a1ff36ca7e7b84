import seedrandom from "seedrandom";
import type { RiskFeature } from "../../../pipeline/schemas/audit.ts";
import { type Blind, type RiskInput, riskOf, severityOfRisk } from "../risk/model.ts";
import { DEFAULT_LAMBDA, fitRisk } from "./fit.ts";

/**
 * How the risk would do on records it was not fitted on. Every weight and threshold is fitted
 * without the records it scores (k folds by record, or one repository left out at a time), and no
 * rule is credited on a record it was written from, in fitting or in scoring. The records are
 * still those the rules and features were chosen on: these figures overstate what unseen records
 * give (docs/AUDITING.md: kappa 0.34–0.37 here, 0.08 on 123 records nobody here read).
 */

export interface Annotated {
  input: RiskInput;
  repo: string;
  score: number;
}

/** A record's risk and severity as scored by a model fitted without it. */
export interface Scored {
  id: string;
  repo: string;
  score: number;
  risk: number;
  severity: number;
}

export const FOLDS = 10;
/** The seed of the folds: the same records fall in the same folds on every run. */
const FOLD_SEED = "switch-swe audit folds";

/** Assigns records to `k` folds, by record id, in an order drawn from a fixed seed (the shipped one unless another draw is asked). */
export function folds(ids: string[], k = FOLDS, seed = FOLD_SEED): string[][] {
  const random = seedrandom(seed);
  const order = [...ids].sort();
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return Array.from({ length: k }, (_, f) => order.filter((_, i) => i % k === f)).filter((fold) => fold.length);
}

/** Scores every record of `held` with a model fitted on the others, for each group of held-out records. */
function scoreHeldOut(records: Annotated[], groups: string[][], features: RiskFeature[], blind: Blind, lambda: number): Scored[] {
  const out: Scored[] = [];
  for (const held of groups) {
    const out_ = new Set(held);
    const training = records.filter((r) => !out_.has(r.input.task_id));
    if (!training.length) continue;
    const model = fitRisk(features, training, blind, lambda);
    for (const r of records.filter((x) => out_.has(x.input.task_id))) {
      const risk = riskOf(model, r.input, blind);
      out.push({ id: r.input.task_id, repo: r.repo, score: r.score, risk, severity: severityOfRisk(model, risk) });
    }
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** K-fold by record: each record scored by a model fitted on the other folds. */
export function kFold(records: Annotated[], features: RiskFeature[], blind: Blind, lambda = DEFAULT_LAMBDA, seed = FOLD_SEED): Scored[] {
  return scoreHeldOut(
    records,
    folds(
      records.map((r) => r.input.task_id),
      FOLDS,
      seed,
    ),
    features,
    blind,
    lambda,
  );
}

/** The seed of the `n`th other draw of the folds (1, 2, …): the shipped seed's spread is measured over these. */
export const drawSeed = (n: number) => `${FOLD_SEED} draw ${n}`;

/** Leave one repository out: each record scored by a model fitted on the other repositories' records. */
export function leaveOneRepositoryOut(records: Annotated[], features: RiskFeature[], blind: Blind, lambda = DEFAULT_LAMBDA): Scored[] {
  const repos = [...new Set(records.map((r) => r.repo))].sort();
  return scoreHeldOut(
    records,
    repos.map((repo) => records.filter((r) => r.repo === repo).map((r) => r.input.task_id)),
    features,
    blind,
    lambda,
  );
}
