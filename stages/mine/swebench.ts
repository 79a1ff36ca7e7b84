import { z } from "zod";
import { firstIssue } from "../../pipeline/validation.ts";
import { firstInvalidUtf8, type InvalidLine } from "../../pipeline/decode.ts";
import { Candidate, type Candidate as CandidateT } from "../../pipeline/schemas/candidate.ts";
import { CommitSha, RepoName, type Reject } from "../../pipeline/schemas/common.ts";

/** A list of test ids given as a JSON array or as a JSON-encoded string of one (SWE-bench does both). */
const TestList = z.union([
  z.array(z.string()),
  z.string().transform((text, ctx) => {
    try {
      const value: unknown = JSON.parse(text);
      if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value as string[];
    } catch {
      // reported below
    }
    ctx.addIssue({ code: "custom", message: "expected a list of test ids or a JSON string holding one" });
    return z.NEVER;
  }),
]);

/** The SWE-bench family's record: SWE-bench, Lite, Verified, SWE-bench-Live and SWE-Gym use these names. */
export const SwebenchRecord = z.looseObject({
  instance_id: z.string().regex(/^.+__.+-[0-9]+$/, "expected owner__name-NUMBER"),
  repo: RepoName,
  base_commit: CommitSha,
  patch: z.string().min(1, "the reference patch is empty"),
  test_patch: z.string(),
  problem_statement: z.string().optional(),
  created_at: z.string().refine((s) => !Number.isNaN(Date.parse(s)), "expected a date-time such as 2023-01-28T06:14:39Z"),
  version: z.union([z.string(), z.number()]).transform(String).optional(),
  environment_setup_commit: CommitSha.optional(),
  FAIL_TO_PASS: TestList.default([]),
  PASS_TO_PASS: TestList.default([]),
});

const MODELLED = new Set([
  "instance_id",
  "repo",
  "base_commit",
  "patch",
  "test_patch",
  "problem_statement",
  "created_at",
  "version",
  "environment_setup_commit",
  "FAIL_TO_PASS",
  "PASS_TO_PASS",
]);

export interface ImportResult {
  candidates: CandidateT[];
  rejects: Omit<Reject, "stage">[];
}

/**
 * Reads SWE-bench-family records from a JSON array or JSON Lines text. Every bad record is a
 * reject naming the file, the line and the field; the others import.
 */
export function importSwebench(file: string, text: string, invalid: readonly InvalidLine[] = [], bytes?: Uint8Array): ImportResult {
  const candidates: CandidateT[] = [];
  const rejects: Omit<Reject, "stage">[] = [];
  // A line that is not UTF-8 is never guessed at: the record it is in is rejected, where it is.
  // In JSON Lines that is the line. In a JSON array it is the element whose bytes hold it, found
  // by byte position (a one-line array holds every element on its one bad line): each element is
  // decoded from its own bytes, so the others are read exactly as the file holds them.
  const records = invalid.length && bytes && isJsonArray(bytes) ? readArrayBytes(file, bytes, rejects) : readLines(file, text, invalid, rejects);
  for (const { value, line, error } of records) {
    if (error !== undefined) {
      rejects.push({ record_id: `${file}:${line}`, reason: "malformed_record", message: `${file} line ${line}: ${error}`, file, line });
      continue;
    }
    const id = typeof (value as { instance_id?: unknown })?.instance_id === "string" ? (value as { instance_id: string }).instance_id : `${file}:${line}`;
    const parsed = SwebenchRecord.safeParse(value);
    if (!parsed.success) {
      const { field, missing, message } = firstIssue(parsed.error, value);
      rejects.push({
        record_id: id,
        reason: missing ? "missing_field" : "invalid_field",
        message: `${file} line ${line}, record ${id}: field ${field || "(record)"}: ${message}`,
        file,
        line,
        field,
      });
      continue;
    }
    const record = parsed.data;
    const expectedPrefix = record.repo.replace("/", "__") + "-";
    if (!record.instance_id.startsWith(expectedPrefix)) {
      rejects.push({
        record_id: id,
        reason: "invalid_field",
        message: `${file} line ${line}, record ${id}: field instance_id: does not belong to repo ${record.repo} (expected ${expectedPrefix}N)`,
        file,
        line,
        field: "instance_id",
      });
      continue;
    }
    const pull = Number(/-([0-9]+)$/.exec(record.instance_id)![1]);
    const extra = Object.fromEntries(Object.entries(record).filter(([k]) => !MODELLED.has(k)));
    candidates.push(
      Candidate.parse({
        id: record.instance_id,
        repo: record.repo,
        pull_number: pull > 0 ? pull : null,
        base_commit: record.base_commit,
        created_at: new Date(record.created_at).toISOString(),
        source: { kind: "swebench", file, line },
        reference_diff: joinPatches(record.patch, record.test_patch),
        upstream_split: { patch: record.patch, test_patch: record.test_patch },
        problem_statement: record.problem_statement,
        upstream_fail_to_pass: record.FAIL_TO_PASS,
        upstream_pass_to_pass: record.PASS_TO_PASS,
        version: record.version,
        environment_setup_commit: record.environment_setup_commit,
        extra,
      }),
    );
  }
  return { candidates, rejects };
}

/** Concatenates two diffs so that the second starts on a line of its own. */
export function joinPatches(first: string, second: string): string {
  if (!first) return second;
  return first.endsWith("\n") || !second ? first + second : `${first}\n${second}`;
}

function* readRecords(text: string): Generator<ReadRecord> {
  const trimmed = text.trimStart();
  if (trimmed.startsWith("[")) {
    // A JSON array: line numbers are those of each element's first line.
    let array: unknown;
    try {
      array = JSON.parse(text);
    } catch (error) {
      yield { line: 1, error: `not valid JSON: ${(error as Error).message}` };
      return;
    }
    const lines = elementLines(text);
    for (const [index, value] of (array as unknown[]).entries()) yield { value, line: lines[index] ?? 1 };
    return;
  }
  const lines = text.split("\n");
  for (const [index, raw] of lines.entries()) {
    if (!raw.trim()) continue;
    try {
      yield { value: JSON.parse(raw), line: index + 1 };
    } catch (error) {
      yield { line: index + 1, error: `not valid JSON: ${(error as Error).message}` };
    }
  }
}

/** JSON Lines, or a JSON array read whole; each line that is not UTF-8 is rejected and skipped. */
function* readLines(file: string, text: string, invalid: readonly InvalidLine[], rejects: Omit<Reject, "stage">[]): Generator<ReadRecord> {
  for (const bad of invalid)
    rejects.push({
      record_id: `${file}:${bad.line}`,
      reason: "malformed_record",
      message: `${file} line ${bad.line}: not valid UTF-8 (byte offset ${bad.byteOffset}); the record was not read`,
      file,
      line: bad.line,
    });
  const skip = new Set(invalid.map((i) => i.line));
  for (const record of readRecords(text)) if (!skip.has(record.line)) yield record;
}

interface ReadRecord {
  value?: unknown;
  line: number;
  error?: string;
}

/** Whether the file's first byte after a byte-order mark and white space opens an array. */
function isJsonArray(bytes: Uint8Array): boolean {
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x09 || bytes[i] === 0x0a || bytes[i] === 0x0d)) i++;
  return bytes[i] === 0x5b;
}

/** A top-level element of a JSON array by byte offsets, or (`stray`) bytes between elements that belong to none. */
export interface ElementSpan {
  start: number;
  end: number;
  line: number;
  endLine: number;
  stray?: true;
}

/**
 * Each top-level element of a JSON array, by byte offsets, with the lines it starts and ends on.
 * JSON's structure is ASCII and no byte of a multi-byte UTF-8 sequence (nor an invalid byte) is
 * ASCII, so scanning bytes finds the same elements whatever the text holds. A byte above ASCII
 * outside a string between two elements (`}, \xff{`) can belong to neither (no JSON value starts
 * or ends with one): it is a stray span of its own, so the elements either side stay whole.
 */
export function arrayElementSpans(bytes: Uint8Array): ElementSpan[] {
  const spans: ElementSpan[] = [];
  const QUOTE = 0x22;
  const BACKSLASH = 0x5c;
  let depth = 0;
  let line = 1;
  let inString = false;
  let open: { start: number; line: number } | undefined;
  let last = { end: 0, line: 1 };
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b === 0x0a) line++;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
      if (!inString) last = { end: i + 1, line };
      continue;
    }
    if (b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d) continue;
    if (depth === 1 && b >= 0x80) {
      const previous = spans[spans.length - 1];
      if (previous?.stray && previous.end === i) previous.end = i + 1;
      else spans.push({ start: i, end: i + 1, line, endLine: line, stray: true });
      continue;
    }
    const ch = String.fromCharCode(b);
    if (depth === 1 && !open && ch !== "," && ch !== "]") open = { start: i, line };
    if (depth === 1 && open && (ch === "," || ch === "]")) {
      spans.push({ start: open.start, end: last.end, line: open.line, endLine: last.line });
      open = undefined;
    }
    if (b === QUOTE) inString = true;
    else if (ch === "[" || ch === "{") depth++;
    else if (ch === "]" || ch === "}") depth--;
    if (!inString) last = { end: i + 1, line };
  }
  return spans;
}

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The elements of a JSON array with bytes that are not UTF-8, each decoded from its own bytes: an
 * element holding such a byte is rejected (file, line, byte offset), every other one is read
 * exactly as the file holds it.
 */
function* readArrayBytes(file: string, bytes: Uint8Array, rejects: Omit<Reject, "stage">[]): Generator<ReadRecord> {
  for (const span of arrayElementSpans(bytes)) {
    const element = bytes.subarray(span.start, span.end);
    if (span.stray) {
      rejects.push({
        record_id: `${file}:${span.line}`,
        reason: "malformed_record",
        message: `${file} line ${span.line}: ${firstInvalidUtf8(element) >= 0 ? "bytes that are not valid UTF-8" : "text that is not JSON"} (byte offset ${span.start}${
          span.end - span.start > 1 ? `-${span.end - 1}` : ""
        }) between two records, part of neither; skipped, and the records either side read`,
        file,
        line: span.line,
      });
      continue;
    }
    const bad = firstInvalidUtf8(element);
    if (bad >= 0) {
      const offset = span.start + bad;
      let badLine = span.line;
      for (let i = span.start; i < offset; i++) if (bytes[i] === 0x0a) badLine++;
      rejects.push({
        record_id: `${file}:${span.line}`,
        reason: "malformed_record",
        message: `${file} line ${badLine}: not valid UTF-8 (byte offset ${offset}); the record of ${
          span.line === span.endLine ? `line ${span.line}, bytes ${span.start}-${span.end - 1},` : `lines ${span.line}-${span.endLine}`
        } was not read`,
        file,
        line: span.line,
      });
      continue;
    }
    try {
      yield { value: JSON.parse(STRICT_UTF8.decode(element)), line: span.line };
    } catch (error) {
      yield { line: span.line, error: `not valid JSON: ${(error as Error).message}` };
    }
  }
}

/** The line on which each top-level element of a JSON array starts. */
function elementLines(text: string): number[] {
  const result: number[] = [];
  let depth = 0;
  let line = 1;
  let inString = false;
  let expectingElement = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "\n") line++;
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (depth === 1 && expectingElement && !/\s/.test(ch) && ch !== "]") {
      result.push(line);
      expectingElement = false;
    }
    if (ch === '"') inString = true;
    else if (ch === "[" || ch === "{") {
      depth++;
      if (depth === 1) expectingElement = true;
    } else if (ch === "]" || ch === "}") depth--;
    else if (ch === "," && depth === 1) expectingElement = true;
  }
  return result;
}
