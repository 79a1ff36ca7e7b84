/**
 * Agreement statistics: Cohen's kappa (plain and quadratically weighted) and the area under the
 * ROC curve. Shared by the agreement report, the risk model's thresholds and cross-validation.
 */

/** Cohen's kappa of rating pairs over `categories`, with a disagreement weight; null without pairs or without chance disagreement. */
export function cohen(pairs: [number, number][], categories: number[], weight: (a: number, b: number) => number): number | null {
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

/** Cohen's kappa of two yes/no ratings. */
export function binaryKappa(rated: boolean[], truth: boolean[]): number | null {
  const n = rated.length;
  if (!n) return null;
  const agree = rated.filter((r, i) => r === truth[i]).length / n;
  const p = rated.filter(Boolean).length / n;
  const q = truth.filter(Boolean).length / n;
  const chance = p * q + (1 - p) * (1 - q);
  return chance === 1 ? null : (agree - chance) / (1 - chance);
}

/** The quadratically weighted kappa of severities against 0–3 scores. */
export function weightedKappa(pairs: [number, number][]): number | null {
  return cohen(pairs, [0, 1, 2, 3], (a, b) => (a - b) ** 2);
}

/** The area under the ROC curve of `risks` against `truth` (ties count half); null without both classes. */
export function auc(risks: number[], truth: boolean[]): number | null {
  const positives = risks.filter((_, i) => truth[i]);
  const negatives = risks.filter((_, i) => !truth[i]);
  if (!positives.length || !negatives.length) return null;
  let wins = 0;
  for (const p of positives) for (const n of negatives) wins += p > n ? 1 : p === n ? 0.5 : 0;
  return wins / (positives.length * negatives.length);
}
