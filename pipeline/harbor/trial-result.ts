import { z } from "zod";

/**
 * A Harbor trial's result.json, as far as switch-swe reads it (harbor/models/trial/result.py):
 * the task, the agent, Harbor's own reward (the last step's, `multi_step_reward_strategy =
 * "final"`), and each step's timing, reward and exception. Everything else Harbor writes is kept
 * as it is and not read.
 */

const Timing = z.object({ started_at: z.string().nullable().optional(), finished_at: z.string().nullable().optional() }).nullable().optional();
const ExceptionInfo = z.object({ exception_type: z.string(), exception_message: z.string().nullable().optional() }).nullable().optional();
const VerifierResult = z
  .object({ rewards: z.record(z.string(), z.number()).nullable().optional() })
  .nullable()
  .optional();

export const HarborTrialResult = z.looseObject({
  task_name: z.string(),
  trial_name: z.string().optional(),
  agent_info: z.looseObject({ name: z.string(), version: z.string().nullable().optional() }).nullable().optional(),
  verifier_result: VerifierResult,
  exception_info: ExceptionInfo,
  step_results: z
    .array(
      z.looseObject({
        step_name: z.string(),
        verifier_result: VerifierResult,
        exception_info: ExceptionInfo,
        agent_execution: Timing,
        verifier: Timing,
      }),
    )
    .nullable()
    .optional(),
});
export type HarborTrialResult = z.infer<typeof HarborTrialResult>;
