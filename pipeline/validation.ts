import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";

/** What a value is, in the words of a JSON user: string, number, boolean, null, array, object. */
export function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

export interface FirstIssue {
  /** Dotted path of the field, "" for the value itself. */
  field: string;
  /** True when the field is absent (as opposed to present with a bad value). */
  missing: boolean;
  /** "is required", "expected string, got number", or zod's own words for other problems. */
  message: string;
}

/**
 * The first problem zod found in `input`, said the way a user fixes it: a missing field "is
 * required"; a present field of the wrong type "expected string, got number"; anything else in
 * zod's words. One place, so every bad-input message in the project reads the same.
 */
export function firstIssue(error: z.ZodError, input: unknown): FirstIssue {
  const issue = error.issues[0]!;
  const path = issue.path as PropertyKey[];
  const field = path.map(String).join(".");
  if (issue.code === "unrecognized_keys") {
    const keys = (issue as { keys: string[] }).keys;
    return {
      field: [field, keys[0]].filter(Boolean).join("."),
      missing: false,
      message: "unknown key (expected one of the documented keys; check its spelling)",
    };
  }
  const value = valueAt(input, path);
  // Whatever zod calls it (a type, a union, a refinement), an absent field is missing.
  if (value === undefined) return { field, missing: true, message: "is required" };
  if (issue.code === "invalid_type")
    return { field, missing: false, message: `expected ${(issue as { expected: string }).expected}, got ${jsonTypeOf(value)}` };
  return { field, missing: false, message: issue.message };
}

/** `field X: message`, or `(root): message` for the value itself. */
export function describeFirstIssue(error: z.ZodError, input: unknown): string {
  const first = firstIssue(error, input);
  return `field ${first.field || "(root)"}: ${first.message}`;
}

/**
 * Bad input from the user: a file, option or field that is missing or wrong. The CLI prints its
 * message on one line and exits 2; the message names the file, record and field, and what fixes it.
 */
export class InputError extends Error {
  override name = "InputError";
}

export interface ReviewedOptions {
  /** What the file should have been, for the message (`a held-out task`). */
  what?: string;
  /** JSON or YAML; by default JSON for a `.json` file, YAML (of which JSON is a part) otherwise. */
  format?: "json" | "yaml";
  /** The caller's error for a bad file (its message made here); an InputError by default. */
  error?: (message: string) => Error;
  /** What an empty YAML file stands for (a file with nothing decided yet, say). */
  empty?: unknown;
}

/**
 * A reviewed file (the files people write and review: adapters, rule provenance, decisions,
 * held-out tasks, session specifications) checked against its schema: the value, or an error
 * naming the file and what is wrong: the line and column of a syntax error, else the field a
 * value breaks, and what the file should have been. The one reader of such files; `text` when
 * the engine has read it already.
 */
export function readReviewed<T>(path: string, schema: z.ZodType<T>, options: ReviewedOptions & { text?: string } = {}): T {
  const fail = options.error ?? ((message: string) => new InputError(message));
  const json = (options.format ?? (path.endsWith(".json") ? "json" : "yaml")) === "json";
  const expected = options.what ? `; expected ${options.what}` : "";
  let text: string;
  try {
    text = options.text ?? readFileSync(path, "utf8");
  } catch (error) {
    throw fail(`${path}: not readable (${(error as Error).message})${expected}`);
  }
  let raw: unknown;
  try {
    const value: unknown = json ? JSON.parse(text) : parseYaml(text);
    raw = value === null && options.empty !== undefined ? options.empty : value;
  } catch (error) {
    // YAML's message goes on to quote the line; its first line names the line and column.
    throw fail(`${path}: not valid ${json ? "JSON" : "YAML"} (${(error as Error).message.split("\n")[0]})${expected}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw fail(`${path}: ${describeFirstIssue(parsed.error, raw)}${options.what ? ` (expected ${options.what})` : ""}`);
  return parsed.data;
}

/** A JSON file checked against a schema, as readReviewed reads it. */
export function readJsonFile<T>(file: string, schema: z.ZodType<T>, what: string): T {
  return readReviewed(file, schema, { what, format: "json" });
}

/**
 * A whole number in [min, max] from text (a command-line value), or an error saying what was
 * expected: a value like 0, -1 or a word never reaches the code that uses it.
 */
export function parseWholeNumber(value: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = /^\s*-?\d+\s*$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new InputError(max === Number.MAX_SAFE_INTEGER ? `expected a whole number of at least ${min}` : `expected a whole number from ${min} to ${max}`);
  return n;
}
