import type { ModelCall } from "./wire.ts";

/**
 * The scripted model's answers to the audit's judge (`switch-swe audit --judge`), read from the
 * prompt as a model would read it: the rules' findings it lists, the tests' sources and the
 * requests it quotes, and which pass of three it is. `judge` answers the highest severity among
 * the findings on every pass; `judge-split` answers 0, 3 and 1 on passes 1, 2 and 3 (no two
 * agree: the consensus is the median); `judge-malformed` answers prose without the JSON asked for.
 */

export const JUDGE_SCRIPTS = ["judge", "judge-split", "judge-malformed"] as const;
export type JudgeScript = (typeof JUDGE_SCRIPTS)[number];

/** The first line of the first test source the prompt quotes. */
function firstTestLine(prompt: string): string {
  const block = /```python\n([\s\S]*?)\n```/.exec(prompt)?.[1] ?? "";
  return (
    block
      .split("\n")
      .map((l) => l.trim())
      .find(Boolean) ?? ""
  );
}

/** The first sentence of the first request the prompt quotes. */
function firstRequestSentence(prompt: string): string {
  const request = /### Request 1\n([\s\S]*?)(?:\n### Request |\n## )/.exec(prompt)?.[1] ?? "";
  const line =
    request
      .split("\n")
      .map((l) => l.trim())
      .find(Boolean) ?? "";
  return /^.*?[.?!](?=\s|$)/.exec(line)?.[0] ?? line;
}

/** The answer of a judge script to a call, or undefined when the call is not the audit judge's. */
export function judgeAnswer(script: string, call: ModelCall): string | undefined {
  if (!(JUDGE_SCRIPTS as readonly string[]).includes(script) || !call.system.includes("switch-swe audit judge")) return undefined;
  const prompt = call.turns.flatMap((t) => (t.role === "user" ? [t.text] : [])).join("\n");
  if (script === "judge-malformed") return "I have read the task. The tests look fair to me, more or less.";
  const pass = Number(/Pass (\d) of \d/.exec(prompt)?.[1] ?? "1");
  const findings = [...prompt.matchAll(/^- \w+ \((\d)\) on /gm)].map((m) => Number(m[1]));
  const severity = script === "judge-split" ? ([0, 3, 1][pass - 1] ?? 1) : Math.min(3, Math.max(0, ...findings));
  return JSON.stringify({
    severity,
    rationale: `${findings.length} finding(s) of the rules, the highest ${Math.max(0, ...findings)}; pass ${pass}.`,
    test_line: firstTestLine(prompt),
    request_sentence: firstRequestSentence(prompt),
  });
}
