import { z } from "zod";
import type { RequestUsage } from "../schemas/agent.ts";

/**
 * The usage of one request from the ATIF trajectory a Harbor agent leaves in its step's agent/
 * (Harbor's Agent Trajectory Interchange Format, harbor/models/trajectories): tokens, model calls
 * and tool calls, in the session runner's terms (RequestUsage). An agent that resumes its
 * conversation may write the whole conversation again at every step; the steps a request's
 * trajectory shares with the previous request's are the previous request's, and are not counted
 * again, nor is what a trajectory marks as copied context.
 */

const Metrics = z.object({
  prompt_tokens: z.number().int().nonnegative().nullable().optional(),
  completion_tokens: z.number().int().nonnegative().nullable().optional(),
  cached_tokens: z.number().int().nonnegative().nullable().optional(),
});
const AtifStep = z.object({
  step_id: z.number().int(),
  timestamp: z.string().nullable().optional(),
  source: z.enum(["system", "user", "agent"]),
  message: z.unknown().optional(),
  tool_calls: z.array(z.unknown()).nullable().optional(),
  metrics: Metrics.nullable().optional(),
  is_copied_context: z.boolean().nullable().optional(),
  llm_call_count: z.number().int().nonnegative().nullable().optional(),
});
export const AtifTrajectory = z.object({
  schema_version: z.string(),
  session_id: z.string().nullable().optional(),
  agent: z.object({ name: z.string(), version: z.string().optional(), model_name: z.string().nullable().optional() }),
  steps: z.array(AtifStep),
});
export type AtifTrajectory = z.infer<typeof AtifTrajectory>;
type Step = AtifTrajectory["steps"][number];

/** The same step in two writings of one conversation: its id, where it came from, when, and what it said. */
const sameStep = (a: Step, b: Step) =>
  a.step_id === b.step_id && a.source === b.source && a.timestamp === b.timestamp && JSON.stringify(a.message) === JSON.stringify(b.message);

/** The steps of `current` that are this request's own: after those it shares, from the start, with the previous request's trajectory. */
export function ownSteps(current: AtifTrajectory, previous: AtifTrajectory | undefined): Step[] {
  let shared = 0;
  if (previous && previous.session_id === current.session_id)
    while (shared < previous.steps.length && shared < current.steps.length && sameStep(previous.steps[shared]!, current.steps[shared]!)) shared++;
  return current.steps.slice(shared).filter((s) => !s.is_copied_context);
}

/**
 * The usage of a request's own steps: input tokens not read from cache (prompt minus cached),
 * cached input tokens, output tokens, model calls (each agent step's count of inferences, one
 * where it has metrics and no count) and tool calls.
 */
export function atifUsage(steps: Step[]): RequestUsage {
  const usage: RequestUsage = { input_tokens: 0, cached_input_tokens: 0, output_tokens: 0, model_calls: 0, tool_calls: 0 };
  for (const step of steps) {
    if (step.source !== "agent") continue;
    const m = step.metrics;
    const cached = m?.cached_tokens ?? 0;
    usage.input_tokens += Math.max(0, (m?.prompt_tokens ?? 0) - cached);
    usage.cached_input_tokens! += cached;
    usage.output_tokens += m?.completion_tokens ?? 0;
    usage.model_calls! += step.llm_call_count ?? (m ? 1 : 0);
    usage.tool_calls += step.tool_calls?.length ?? 0;
  }
  return usage;
}
