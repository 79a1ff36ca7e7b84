import type { AuditFlagRecord } from "../../../pipeline/schemas/audit.ts";

/**
 * What the judge is asked, and how its answer is read. The question is SWE-bench Verified's
 * `false_negative` (as SPICE and SWE-rebench label tasks): how far the fail-to-pass tests check
 * what the requests do not ask, so that reasonable solutions fail; 0–3. The model sees the
 * requests, each test's source as the repository holds it, the reference diff and the rules'
 * findings, and answers in JSON, quoting the test line and the request sentence it weighs.
 */

/** Changes whenever the prompt or the reading of answers changes: it keys the cache. */
export const PROMPT_VERSION = "judge-1";

/** The passes asked of a record unless the config says otherwise. */
export const PASSES = 3;

/** What the judge reads of one record. */
export interface JudgeInputs {
  id: string;
  requests: string[];
  tests: { id: string; file?: string; source?: string }[];
  referenceDiff: string;
  findings: AuditFlagRecord[];
}

const SYSTEM = `You are an auditor of benchmark tasks for coding agents (switch-swe audit judge).
A task gives an agent requests (an issue) and scores its solution with fail-to-pass tests.
Rate how far the tests check what the requests do not ask, so that a reasonable solution of the
requests would fail them (SWE-bench Verified's false_negative):
0: the tests check what the requests ask; a reasonable solution passes.
1: minor gaps; most reasonable solutions pass.
2: the tests need something the requests do not say (a name, message, format, behaviour or choice); many reasonable solutions fail.
3: the tests check something else or much more than the requests ask; almost every reasonable solution fails.
The rules' findings are leads, not verdicts: weigh them against the requests and the tests.
Answer with one JSON object and nothing else:
{"severity": 0-3, "rationale": "one or two sentences", "test_line": "a line of a test, quoted exactly", "request_sentence": "a sentence of the requests, quoted exactly"}`;

/** Text cut to `max` lines, saying how many were left out. */
function capped(text: string, max: number): string {
  const lines = text.split("\n");
  return lines.length <= max ? text : `${lines.slice(0, max).join("\n")}\n[… ${lines.length - max} more lines left out]`;
}

/** The prompt of one pass: the same inputs, the pass named so that each is a sample of its own. */
export function judgePrompt(inputs: JudgeInputs, pass: number, passes = PASSES): { system: string; user: string } {
  const tests = inputs.tests
    .map((t) => `### ${t.id}${t.file ? ` (${t.file})` : ""}\n${t.source ? "```python\n" + capped(t.source, 200) + "\n```" : "(its source was not found)"}`)
    .join("\n\n");
  const findings = inputs.findings.length
    ? inputs.findings
        .map((f) => `- ${f.flag} (${f.severity}) on ${f.subject}: ${f.detail}${f.evidence.map((e) => `\n  ${e.file}:${e.line}: ${e.text}`).join("")}`)
        .join("\n")
    : "(none)";
  const user = [
    `Task ${inputs.id}. Pass ${pass} of ${passes}: judge independently.`,
    `## Requests\n\n${inputs.requests.map((r, i) => `### Request ${i + 1}\n${r}`).join("\n\n")}`,
    `## Fail-to-pass tests\n\n${tests}`,
    `## Reference diff\n\n\`\`\`diff\n${capped(inputs.referenceDiff, 400)}\n\`\`\``,
    `## Rules' findings\n\n${findings}`,
  ].join("\n\n");
  return { system: SYSTEM, user };
}

/** An answer the judge could not use: which record, which pass, what was wrong. */
export class JudgeAnswerError extends Error {
  override name = "JudgeAnswerError";
}

const spaced = (text: string) => text.replace(/\s+/g, " ").trim();

/** Reads one pass's answer: a JSON object whose quotes are found in the tests and the requests. */
export function readAnswer(
  inputs: JudgeInputs,
  pass: number,
  text: string,
): { severity: number; rationale: string; test_line: string; request_sentence: string } {
  const where = `${inputs.id}, pass ${pass}`;
  const json = /\{[\s\S]*\}/.exec(text)?.[0];
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(json ?? "") as Record<string, unknown>;
  } catch {
    throw new JudgeAnswerError(`${where}: the judge's answer holds no JSON object: ${JSON.stringify(text.slice(0, 120))}`);
  }
  const { severity, rationale, test_line: testLine, request_sentence: sentence } = value;
  if (typeof severity !== "number" || !Number.isInteger(severity) || severity < 0 || severity > 3)
    throw new JudgeAnswerError(`${where}: field severity: expected a whole number from 0 to 3, got ${JSON.stringify(severity)}`);
  for (const [field, v] of Object.entries({ rationale, test_line: testLine, request_sentence: sentence }))
    if (typeof v !== "string" || !v.trim()) throw new JudgeAnswerError(`${where}: field ${field}: expected a non-empty string, got ${JSON.stringify(v)}`);
  const sources = spaced(inputs.tests.map((t) => t.source ?? "").join("\n"));
  if (!sources.includes(spaced(testLine as string)))
    throw new JudgeAnswerError(`${where}: field test_line: ${JSON.stringify(testLine)} is no line of the tests`);
  if (!spaced(inputs.requests.join("\n")).includes(spaced(sentence as string)))
    throw new JudgeAnswerError(`${where}: field request_sentence: ${JSON.stringify(sentence)} is not in the requests`);
  return { severity, rationale: rationale as string, test_line: testLine as string, request_sentence: sentence as string };
}

/** The passes' consensus: the severity two passes agree on, else the median. */
export function consensus(severities: number[]): number {
  const counts = new Map<number, number>();
  for (const s of severities) counts.set(s, (counts.get(s) ?? 0) + 1);
  const agreed = [...counts].filter(([, n]) => n >= 2).sort((a, b) => b[1] - a[1] || a[0] - b[0])[0];
  if (agreed) return agreed[0];
  const sorted = [...severities].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}
