/**
 * A logistic regression with an L2 penalty, fitted by Newton's method on standardised features:
 * small, deterministic (no random start, a fixed order of sums), and enough for a handful of
 * features over about a hundred records. The intercept is not penalised.
 */

export interface LogisticFit {
  /** The intercept and one weight per feature, in the features' raw units. */
  intercept: number;
  weights: number[];
  /** Each feature's mean over the records fitted: a contribution is read against it. */
  means: number[];
}

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/** Solves `a x = b` by Gaussian elimination with partial pivoting (a small, well-posed system). */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let pivot = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[pivot]![c]!)) pivot = r;
    [m[c], m[pivot]] = [m[pivot]!, m[c]!];
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = m[r]![c]! / m[c]![c]!;
      for (let k = c; k <= n; k++) m[r]![k]! -= f * m[c]![k]!;
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
}

/** Column means and standard deviations (1 where a column is constant). */
function scales(x: number[][]): { means: number[]; sds: number[] } {
  const d = x[0]?.length ?? 0;
  const means = Array.from({ length: d }, (_, j) => x.reduce((s, row) => s + row[j]!, 0) / x.length);
  const sds = means.map((mu, j) => Math.sqrt(x.reduce((s, row) => s + (row[j]! - mu) ** 2, 0) / x.length) || 1);
  return { means, sds };
}

/** Fits P(y) = sigmoid(intercept + weights · x) to the rows `x` and outcomes `y`, with penalty `lambda`. */
export function fitLogistic(x: number[][], y: boolean[], lambda: number): LogisticFit {
  if (!x.length) throw new Error("the risk model needs at least one record to fit");
  const { means, sds } = scales(x);
  const z = x.map((row) => [1, ...row.map((v, j) => (v - means[j]!) / sds[j]!)]);
  const d = z[0]!.length;
  let w = new Array<number>(d).fill(0);
  for (let iteration = 0; iteration < 100; iteration++) {
    const gradient = new Array<number>(d).fill(0);
    const hessian = Array.from({ length: d }, () => new Array<number>(d).fill(0));
    z.forEach((row, i) => {
      const p = sigmoid(row.reduce((s, v, k) => s + v * w[k]!, 0));
      for (let a = 0; a < d; a++) {
        gradient[a]! += (p - Number(y[i])) * row[a]!;
        for (let b = 0; b < d; b++) hessian[a]![b]! += p * (1 - p) * row[a]! * row[b]!;
      }
    });
    for (let a = 1; a < d; a++) {
      gradient[a]! += lambda * w[a]!;
      hessian[a]![a]! += lambda;
    }
    const step = solve(hessian, gradient);
    w = w.map((v, k) => v - step[k]!);
    if (Math.max(...step.map(Math.abs)) < 1e-10) break;
  }
  const weights = means.map((_, j) => w[j + 1]! / sds[j]!);
  const intercept = w[0]! - weights.reduce((s, wj, j) => s + wj * means[j]!, 0);
  return { intercept, weights, means };
}

/** The probability the fit gives a row. */
export function predict(fit: Pick<LogisticFit, "intercept" | "weights">, row: number[]): number {
  return sigmoid(fit.intercept + fit.weights.reduce((s, w, j) => s + w * row[j]!, 0));
}
