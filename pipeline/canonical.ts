import { createHash } from "node:crypto";

/**
 * JSON with object keys sorted at every depth. Every artifact and every cache key goes through
 * this, so that the same value always gives the same bytes (and the same hash), whatever order
 * its keys were built in.
 */
export function canonicalJson(value: unknown, indent?: number): string {
  return JSON.stringify(sortKeys(value), null, indent);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) sorted[key] = sortKeys(v);
    }
    return sorted;
  }
  return value;
}

export function sha256(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

export function hashValue(value: unknown): string {
  return sha256(canonicalJson(value));
}

/** Plain code-unit order, independent of the machine's locale: every sorted output uses it. */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
