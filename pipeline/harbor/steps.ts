import { basename } from "node:path";
import type { AgentSpec } from "../schemas/agent.ts";
import type { Condition } from "../schemas/session.ts";
import type { ScheduledRequest, SessionSpec } from "../schemas/session.ts";
import { quote } from "../executors/recipe-scripts.ts";
import { agentMessage } from "../session/agent-commands.ts";

/**
 * The steps of an exported task: one per scheduled request of the condition, in schedule order
 * (the control condition is the projection of the switched one onto the focus requests, as
 * emitted), each named for its place, its checkout and its stage, with its instruction (the
 * request as `session run` delivers it) and Harbor's oracle solution for it.
 */

export interface TaskStep {
  /** `NN-wXX-stageK`, or `NN-wXX-final` for the finalization: what the step directory is called. */
  name: string;
  request: ScheduledRequest;
  /** The instruction: the request's message from the agent's template, as `session run` gives it. */
  instruction: string;
  /** Whether this is the last request of its task in the schedule: the oracle applies the task's reference here. */
  lastOfTask: boolean;
}

/** The step's name: its 1-based place (two digits at least), its checkout's directory, and the task's stage or `final`. */
export function stepName(index: number, total: number, request: ScheduledRequest): string {
  const place = String(index + 1).padStart(Math.max(2, String(total).length), "0");
  return `${place}-${basename(request.message.checkout)}-${request.finalization ? "final" : `stage${request.stage ?? 1}`}`;
}

/** The condition's steps; `messages` is the agent description whose message template the instructions use. */
export function taskSteps(spec: SessionSpec, condition: Condition, messages: AgentSpec): TaskStep[] {
  const schedule = spec.conditions[condition];
  const last = new Map(schedule.map((r, i) => [r.task_id, i] as const));
  return schedule.map((request, i) => ({
    name: stepName(i, schedule.length, request),
    request,
    instruction: agentMessage(messages, { ...request.message, continued: i > 0 }),
    lastOfTask: last.get(request.task_id) === i,
  }));
}

/**
 * A step's solve.sh for Harbor's oracle, as switch-swe's `replay-reference` agent works: a task's
 * reference implementation is applied to its own checkout at the task's last request (`reference`
 * set), and nothing is done at its earlier ones.
 */
export function solveScript(step: TaskStep, reference: boolean): string {
  const lines = ["#!/bin/bash", "# Harbor's oracle (switch-swe export harbor), as switch-swe's replay-reference agent: a task's reference"];
  if (!reference) return [...lines, "# implementation goes in at the task's last request. This request is not one: nothing to do.", "exit 0", ""].join("\n");
  return [
    ...lines,
    "# implementation goes in at the task's last request, this one, applied to the task's own checkout.",
    "set -euo pipefail",
    `cd ${quote(step.request.message.checkout)}`,
    "git -c safe.directory='*' apply --whitespace=nowarn --binary /solution/reference.patch",
    "",
  ].join("\n");
}
