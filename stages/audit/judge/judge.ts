import { existsSync, readFileSync } from "node:fs";
import { writeFileAtomic } from "../../../pipeline/atomic.ts";
import { sha256 } from "../../../pipeline/canonical.ts";
import { JudgeVerdict, type JudgeAdapter } from "../../../pipeline/schemas/audit.ts";
import type { WorkLayout } from "../../../pipeline/work-layout.ts";
import type { CallJudge } from "./client.ts";
import { consensus, type JudgeInputs, judgePrompt, PASSES, PROMPT_VERSION, readAnswer } from "./prompt.ts";

/**
 * The judge's protocol: passes over the same inputs (three unless the config says), each read and checked, and their
 * consensus. A record's verdict is cached in the work directory under the hash of the model, the
 * prompt version and the prompts; a pass that fails or answers malformed is an error naming the
 * record and the pass, and nothing of that record is cached.
 */

/** What the judge cost a run: calls made, records answered from the cache, tokens and dollars. */
export interface JudgeUsage {
  model: string;
  prompt_version: string;
  calls: number;
  cached: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

export function emptyUsage(adapter: JudgeAdapter): JudgeUsage {
  return { model: adapter.model, prompt_version: PROMPT_VERSION, calls: 0, cached: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0 };
}

/** What the verdicts of a set of records cost when they were asked: records judged, tokens and dollars at the adapter's prices. */
export interface JudgeCost {
  model: string;
  prompt_version: string;
  records: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

export function judgeCost(adapter: JudgeAdapter, records: { judge?: JudgeVerdict }[]): JudgeCost {
  const verdicts = records.flatMap((r) => (r.judge ? [r.judge] : []));
  const input = verdicts.reduce((n, v) => n + v.usage.input_tokens, 0);
  const output = verdicts.reduce((n, v) => n + v.usage.output_tokens, 0);
  const cost = (input * adapter.price_per_million.input + output * adapter.price_per_million.output) / 1e6;
  return {
    model: adapter.model,
    prompt_version: PROMPT_VERSION,
    records: verdicts.length,
    input_tokens: input,
    output_tokens: output,
    cost_usd: Math.round(cost * 1e6) / 1e6,
  };
}

export class JudgeFailed extends Error {
  override name = "JudgeFailed";
}

/** The cache key: model, prompt version and every pass's prompt (the task's content, and how many passes). */
export function judgeKey(adapter: JudgeAdapter, inputs: JudgeInputs, passes = PASSES): string {
  const prompts = Array.from({ length: passes }, (_, i) => judgePrompt(inputs, i + 1, passes));
  return sha256(JSON.stringify({ protocol: adapter.protocol, model: adapter.model, prompt_version: PROMPT_VERSION, prompts }));
}

/** Where a record's verdict is cached, and whether it is there. */
export function cachedVerdict(adapter: JudgeAdapter, layout: WorkLayout, inputs: JudgeInputs, passes = PASSES): { file: string; verdict?: JudgeVerdict } {
  const file = layout.judgeAnswers(judgeKey(adapter, inputs, passes));
  if (!existsSync(file)) return { file };
  const cached = JudgeVerdict.safeParse(JSON.parse(readFileSync(file, "utf8")));
  return cached.success ? { file, verdict: cached.data } : { file };
}

/** One record's verdict: from the cache, or `passes` passes of the model (then cached). */
export async function judgeRecord(
  adapter: JudgeAdapter,
  call: CallJudge,
  layout: WorkLayout,
  inputs: JudgeInputs,
  usage: JudgeUsage,
  passes = PASSES,
): Promise<JudgeVerdict> {
  const { file, verdict: cached } = cachedVerdict(adapter, layout, inputs, passes);
  if (cached) {
    usage.cached += 1;
    return cached;
  }
  const answers: JudgeVerdict["passes"] = [];
  let input = 0;
  let output = 0;
  for (let pass = 1; pass <= passes; pass++) {
    const { system, user } = judgePrompt(inputs, pass, passes);
    let answer;
    try {
      answer = await call(system, user);
    } catch (error) {
      throw new JudgeFailed(`${inputs.id}, pass ${pass}: the judge's call failed: ${(error as Error).message.split("\n")[0]}`);
    } finally {
      usage.calls += 1;
    }
    input += answer.input_tokens;
    output += answer.output_tokens;
    usage.input_tokens += answer.input_tokens;
    usage.output_tokens += answer.output_tokens;
    usage.cost_usd += (answer.input_tokens * adapter.price_per_million.input + answer.output_tokens * adapter.price_per_million.output) / 1e6;
    answers.push(readAnswer(inputs, pass, answer.text));
  }
  const verdict: JudgeVerdict = {
    model: adapter.model,
    prompt_version: PROMPT_VERSION,
    severity: consensus(answers.map((p) => p.severity)),
    passes: answers,
    usage: { input_tokens: input, output_tokens: output },
  };
  await writeFileAtomic(file, JSON.stringify(verdict, null, 2) + "\n");
  return verdict;
}
