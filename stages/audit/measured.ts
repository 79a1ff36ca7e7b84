import { fileURLToPath } from "node:url";
import { AuditMeasurements, type MeasuredPrecision, type MeasurementMethod } from "../../pipeline/schemas/audit.ts";
import { readReviewed } from "../../pipeline/validation.ts";

/**
 * A precision as the gate and the page read it: k right of n, with its 95 % Wilson score
 * interval, which stays inside 0–1 and is honest for the few firings a rule has (5 of 7 is
 * [0.36, 0.92], not 0.71 ± 0.33).
 */

const Z = 1.959964;

/** The 95 % Wilson score interval of k successes in n trials; null without trials. */
export function wilson(k: number, n: number): [number, number] | null {
  if (n <= 0) return null;
  const p = k / n;
  const centre = p + (Z * Z) / (2 * n);
  const half = Z * Math.sqrt((p * (1 - p)) / n + (Z * Z) / (4 * n * n));
  const denominator = 1 + (Z * Z) / n;
  const round = (x: number) => Math.round(x * 1e4) / 1e4;
  return [round(Math.max(0, (centre - half) / denominator)), round(Math.min(1, (centre + half) / denominator))];
}

/** `unfair` of `fired` right, with its interval and how it was measured. */
export function measuredPrecision(fired: number, unfair: number, method: MeasurementMethod): MeasuredPrecision {
  return { fired, unfair, precision: fired ? Math.round((unfair / fired) * 1e4) / 1e4 : null, interval: wilson(unfair, fired), method };
}

/** "0.71 [0.36, 0.92], 5 of 7, in sample" */
export function precisionText(m: MeasuredPrecision): string {
  if (m.precision === null || m.interval === null) return `never fired (${m.method})`;
  return `${m.precision.toFixed(2)} [${m.interval[0].toFixed(2)}, ${m.interval[1].toFixed(2)}], ${m.unfair} of ${m.fired}, ${m.method}`;
}

/** The shipped measurements (data/audit/measurements.json), read next to the code: the page shows them. */
const SHIPPED = new URL("../../data/audit/measurements.json", import.meta.url);

/** Reads a measurements file; errors name the file and the field. */
export function loadMeasurements(path: string = fileURLToPath(SHIPPED)): AuditMeasurements {
  return readReviewed(path, AuditMeasurements);
}
