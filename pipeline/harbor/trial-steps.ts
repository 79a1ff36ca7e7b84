import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { changesBetween, type Snapshot } from "../checkouts/snapshot.ts";
import type { RequestUsage, SessionBehaviour, TrajectoryRequest } from "../schemas/agent.ts";
import type { SessionSpec } from "../schemas/session.ts";
import type { Condition } from "../schemas/session.ts";
import { summarise } from "../session/trajectory.ts";
import { atifUsage, AtifTrajectory, ownSteps } from "./atif.ts";
import { HARBOR_JOB, OBSERVED, observedArtifact } from "./layout.ts";
import { ListingError, readListing } from "./observe.ts";
import type { HarborTrialResult } from "./trial-result.ts";

/**
 * What the agent did in a Harbor trial, request by request, read as the session runner records a
 * run (its trajectory lines, then its behaviour through the same summary): each step's timing
 * and exception from Harbor's result, the files it changed in every checkout from the step's
 * observation of the checkouts (collected as artifacts), and its usage from the agent's ATIF
 * trajectory. What Harbor does not give is left out: continuations (Harbor has none), exits of
 * attempts, and the seconds to a focus return's first change (nothing watches the checkout).
 */

type StepResult = NonNullable<HarborTrialResult["step_results"]>[number];

/** Harbor's exceptions that are a provider's fault (harbor/models/trial/error_policy.py: retried, graded, no valid reward). */
const PROVIDER_FAULTS =
  /^(Api\w*Error|UnknownApiError|NetworkConnectionError|RateLimitError|InternalServerError|ServiceUnavailableError|APIConnectionError|APIError|Timeout)$/;

function readJson<T>(file: string, parse: (value: unknown) => T): T | undefined {
  return existsSync(file) ? parse(JSON.parse(readFileSync(file, "utf8"))) : undefined;
}

/** A step's observation of the checkouts (`which`: the one before the first request, or the one after this step). */
function listing(trialDir: string, step: string, which: "base" | "current"): Map<string, Snapshot> | undefined {
  const file = join(trialDir, HARBOR_JOB.steps, step, HARBOR_JOB.artifacts, observedArtifact(OBSERVED[which]));
  return existsSync(file) ? readListing(readFileSync(file, "utf8"), file) : undefined;
}

function failureOf(step: StepResult): TrajectoryRequest["failure"] | undefined {
  const e = step.exception_info;
  if (!e || e.exception_type === "AgentTimeoutError") return undefined;
  const detail = `Harbor recorded ${e.exception_type}: ${(e.exception_message ?? "").split("\n")[0]!.slice(0, 300)}`;
  return { kind: PROVIDER_FAULTS.test(e.exception_type) ? "infrastructure" : "exit", detail };
}

interface StepReading {
  line: TrajectoryRequest;
  trajectory?: AtifTrajectory;
}

/** One step as a trajectory line; `before` is the observation before it (updated to the one after). */
function readStep(
  trialDir: string,
  spec: SessionSpec,
  condition: Condition,
  index: number,
  step: StepResult,
  state: { before: Map<string, Snapshot>; trajectory?: AtifTrajectory },
): StepReading {
  const request = spec.conditions[condition][index]!;
  const after = listing(trialDir, step.step_name, "current");
  if (!after) throw new ListingError(`${join(trialDir, HARBOR_JOB.steps, step.step_name)}: no observation of the checkouts after this request`);
  const changes: TrajectoryRequest["changes"] = {};
  for (const checkout of spec.checkouts) {
    const changed = changesBetween(state.before.get(checkout.path) ?? new Map(), after.get(checkout.path) ?? new Map());
    if (changed) changes[checkout.path] = changed;
  }
  state.before = after;
  const file = join(trialDir, HARBOR_JOB.steps, step.step_name, HARBOR_JOB.agent, HARBOR_JOB.trajectory);
  const trajectory = readJson(file, (v) => AtifTrajectory.parse(v));
  const usage: RequestUsage | undefined = trajectory && atifUsage(ownSteps(trajectory, state.trajectory));
  if (trajectory) state.trajectory = trajectory;
  const started = step.agent_execution?.started_at ?? "";
  const ended = step.agent_execution?.finished_at ?? started;
  const failure = failureOf(step);
  const line: TrajectoryRequest = {
    request: index,
    task_id: request.task_id,
    focus: request.task_id === spec.focus,
    ...(request.stage !== undefined ? { stage: request.stage } : {}),
    finalization: request.finalization,
    checkout: request.message.checkout,
    started_at: started,
    ended_at: ended,
    seconds: started && ended ? Math.max(0, (Date.parse(ended) - Date.parse(started)) / 1000) : 0,
    budget_seconds: spec.budget.per_request_seconds,
    continuations: 0,
    timed_out: step.exception_info?.exception_type === "AgentTimeoutError",
    exits: [],
    changes,
    ...(usage ? { usage } : {}),
    ...(failure ? { failure } : {}),
  };
  return { line, ...(trajectory ? { trajectory } : {}) };
}

/** The behaviour of a trial from its steps (in the schedule's order: `steps` are Harbor's step results). */
export function harborTrialBehaviour(
  trialDir: string,
  spec: SessionSpec,
  condition: Condition,
  steps: StepResult[],
  agent: string,
): { behaviour?: SessionBehaviour; problems: string[] } {
  const first = steps[0];
  const base = first && listing(trialDir, first.step_name, "base");
  if (!first || !base) return { problems: [`${trialDir}: no observation of the checkouts before the first request; no behaviour read`] };
  const state: { before: Map<string, Snapshot>; trajectory?: AtifTrajectory } = { before: base };
  const readings: StepReading[] = [];
  try {
    steps.forEach((step, i) => readings.push(readStep(trialDir, spec, condition, i, step, state)));
  } catch (error) {
    if (!(error instanceof ListingError)) throw error;
    return { problems: [`${error.message}; no behaviour read`] };
  }
  const lines = readings.map((r) => r.line);
  const focusPath = spec.checkouts.find((c) => c.task_id === spec.focus)!.path;
  const everChanged = new Set(
    lines.flatMap((l) =>
      Object.entries(l.changes)
        .filter(([p]) => p === focusPath)
        .flatMap(([, c]) => [...c.added, ...c.modified, ...c.deleted]),
    ),
  );
  const lost = [...everChanged].filter((p) => state.before.get(focusPath)?.get(p) === base.get(focusPath)?.get(p)).length;
  const fault = lines.find((l) => l.failure?.kind === "infrastructure");
  const withUsage = readings.some((r) => r.trajectory);
  const behaviour = summarise(
    // Every Harbor agent runs in the task's environment.
    { name: agent, runs: "environment", ...(withUsage ? { usage: "atif" } : {}) },
    withUsage ? lines.map((l) => ({ ...l, usage: l.usage ?? null })) : lines,
    lost,
    0,
    join(trialDir, HARBOR_JOB.steps),
    fault ? `request ${fault.request}: ${fault.failure!.detail}` : undefined,
  );
  const scheduled = spec.conditions[condition].length;
  const problems = steps.length < scheduled && !fault ? [`${trialDir}: ${steps.length} of ${scheduled} requests ran (Harbor ended the trial early)`] : [];
  return { behaviour, problems };
}
