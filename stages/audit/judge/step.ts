import { z } from "zod";
import { Gate, type JudgeAdapter, type JudgeVerdict, Measurement } from "../../../pipeline/schemas/audit.ts";
import type { WorkLayout } from "../../../pipeline/work-layout.ts";
import { type CallJudge, judgeCaller, loadJudgeAdapter } from "./client.ts";
import { cachedVerdict, emptyUsage, JudgeFailed, judgeRecord, type JudgeUsage } from "./judge.ts";
import { type JudgeInputs, JudgeAnswerError, PASSES } from "./prompt.ts";

/**
 * The model judge as a step of the audit: named in the config (its adapter, and the endpoint,
 * model, passes and budget of this run), asked once per task's content (a verdict is cached in the
 * work directory under the hash of the model, the prompt version and the prompts), and what it
 * cost said in the run's summary. Its verdicts rank tasks for an auditor; they exclude only where
 * a config puts them in force on a measurement, as a rule's findings do.
 */
export const JudgeConfig = z
  .strictObject({
    /** An adapter file (data/audit/judges/<name>.yaml's shape), or the name of a shipped one: the protocol, the key's variable, the prices. */
    adapter: z.string().min(1),
    /** The model to ask, instead of the adapter's. */
    model: z.string().min(1).optional(),
    /** The API's base URL, instead of the adapter's. */
    endpoint: z.string().url().optional(),
    passes: z.number().int().min(1).max(9).default(PASSES),
    /** Dollars this run may spend on new verdicts; a task left once it is spent is said so (cached verdicts cost nothing). */
    budget_usd: z.number().positive(),
    gate: Gate.default("only with a decision"),
    measured: Measurement.optional(),
  })
  .refine((j) => j.gate === "only with a decision" || j.measured !== undefined, {
    message:
      "a judge whose verdict excludes needs `measured`: the annotated records it was measured on, those it rated 2 or more and those of them annotators scored 2 or more",
    path: ["measured"],
  });
export type JudgeConfig = z.infer<typeof JudgeConfig>;

export interface JudgeStep {
  adapter: JudgeAdapter;
  passes: number;
  /** What this run's calls took. */
  usage: JudgeUsage;
  /** Tasks left unjudged: the budget was spent, or the judge failed on them (with why). */
  unjudged: string[];
  /** The task's verdict, or undefined when it was left unjudged. */
  judge(inputs: JudgeInputs): Promise<JudgeVerdict | undefined>;
  /** This run in one line, for the run's summary. */
  summary(): string;
}

/** The adapter with the run's model and endpoint in place of its own. */
export function adapterFor(config: Pick<JudgeConfig, "adapter" | "model" | "endpoint">, resolve: (path: string) => string = (p) => p): JudgeAdapter {
  const { adapter } = loadJudgeAdapter(config.adapter.includes("/") || config.adapter.endsWith(".yaml") ? resolve(config.adapter) : config.adapter);
  return { ...adapter, ...(config.model ? { model: config.model } : {}), ...(config.endpoint ? { base_url: config.endpoint, base_url_env: undefined } : {}) };
}

/** A judge for a run; `call` stands for the adapter's SDK (the key must then be in the environment). */
export function openJudge(options: { adapter: JudgeAdapter; layout: WorkLayout; passes?: number; budgetUsd?: number; call?: CallJudge }): JudgeStep {
  const { adapter, layout } = options;
  const passes = options.passes ?? PASSES;
  const call = options.call ?? judgeCaller(adapter);
  const usage = emptyUsage(adapter);
  const unjudged: string[] = [];
  let judged = 0;
  return {
    adapter,
    passes,
    usage,
    unjudged,
    async judge(inputs) {
      const cached = cachedVerdict(adapter, layout, inputs, passes).verdict;
      if (!cached && options.budgetUsd !== undefined && usage.cost_usd >= options.budgetUsd) {
        unjudged.push(`${inputs.id}: the budget of $${options.budgetUsd.toFixed(2)} was spent`);
        return undefined;
      }
      try {
        const verdict = await judgeRecord(adapter, call, layout, inputs, usage, passes);
        judged++;
        return verdict;
      } catch (error) {
        if (!(error instanceof JudgeFailed || error instanceof JudgeAnswerError)) throw error;
        unjudged.push(error.message);
        return undefined;
      }
    },
    summary() {
      const budget = options.budgetUsd === undefined ? "" : ` of a $${options.budgetUsd.toFixed(2)} budget`;
      const left = unjudged.length ? `; ${unjudged.length} task(s) left unjudged (${unjudged[0]}${unjudged.length > 1 ? "; …" : ""})` : "";
      return `judge ${adapter.model} (${passes} passes): ${judged} task(s) judged, ${usage.cached} from the cache; ${usage.calls} calls, ${usage.input_tokens} input and ${usage.output_tokens} output tokens, $${usage.cost_usd.toFixed(4)} this run${budget}${left}`;
    },
  };
}
