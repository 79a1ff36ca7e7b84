import { createHash, randomUUID } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { AgentSpec, RequestUsage, RoutingDecisions, TrajectoryRequest } from "../schemas/agent.ts";
import { changesBetween, snapshot, type HashCache, type Snapshot } from "../checkouts/snapshot.ts";
import { addRouting, addUsage, NO_USAGE, readAttempt, readRouting, usageSince, type AttemptReading } from "./usage.ts";
import type { ContextManagerLog } from "./context-relay.ts";
import type { Attempt } from "./environment.ts";
import { agentArgv, agentMessage, agentStdin, messageFileOf } from "./agent-commands.ts";
import type { AgentPlace } from "./placement.ts";
import { scriptedAgent, type ScriptedStep } from "./scripted-agents.ts";
import { pick, recordChanges } from "./trajectory.ts";
import { type AgentRequest, CONTINUATION_MESSAGE, INFRASTRUCTURE_RETRIES, type AgentRunOptions } from "./types.ts";

/** The delivery loop: each request in order, its attempts and continuations, and what each did to the checkouts. */

/** Polls the focus checkout while a focus return runs; resolves to the seconds to its first change. */
function watchFirstChange(dir: string, before: Snapshot, startedAt: number, pollSeconds: number, hashes: HashCache): { stop: () => Promise<number | null> } {
  let found: number | null = null;
  let stopped = false;
  const loop = (async () => {
    while (!stopped && found === null) {
      await new Promise((r) => setTimeout(r, pollSeconds * 1000));
      // A look that fails (the agent is rewriting the tree) is only a look: the next one tries again.
      const now = await snapshot(dir, hashes).catch(() => undefined);
      if (now && changesBetween(before, now)) found = (Date.now() - startedAt) / 1000;
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return found;
    },
  };
}

export interface Delivery {
  hostPath: (path: string) => string;
  focusPath: string;
  logs: string;
  hashes: HashCache;
  /** Each checkout's state after the last request; updated as requests end. */
  snapshots: Map<string, Snapshot>;
  /** Where a command agent runs (none for a scripted agent). */
  place?: AgentPlace;
  /** What a context relay logged since the last request: its auxiliary calls' usage (added to the request's own) and routing decisions. */
  relayLog?: () => Promise<ContextManagerLog>;
}

/** What the runner learnt from one request's attempts: usage summed over them, the last failure, the retries the provider cost. */
interface RequestOutcome {
  exits: (number | null)[];
  continuations: number;
  timedOut: boolean;
  usage: RequestUsage | null;
  /** The context manager's routing decisions during the request (null: it logged none). */
  routing: RoutingDecisions | null;
  failure?: NonNullable<TrajectoryRequest["failure"]>;
  infrastructureRetries: number;
}

/**
 * The conversation id for `{conversation}`: fixed (from session, condition and agent), fresh (a new
 * one each run, so a re-run never continues an earlier run's), or captured from the harness's first
 * output (undefined until then).
 */
function conversationOf(agent: AgentSpec, sessionId: string, condition: string): string | undefined {
  if (agent.conversation === "fresh") return randomUUID();
  if (agent.conversation !== "fixed") return undefined;
  return createHash("sha256")
    .update(`${sessionId}/${condition}/${agent.name}`)
    .digest("hex")
    .slice(0, 32)
    .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5");
}

/** Delivers every request of the condition in order, and records what each did. */
export async function deliverRequests(
  options: AgentRunOptions,
  d: Delivery,
): Promise<{ lines: TrajectoryRequest[]; everChanged: Set<string>; agentMs: number; infrastructureFault?: string; conversation?: string }> {
  const { spec, condition, agent } = options;
  const schedule = spec.conditions[condition];
  const scripted = agent.scripted ? scriptedAgent(agent.scripted, schedule, spec.focus, d.hostPath, options.heldout) : undefined;
  const state: { conversation: string | undefined; agentMs: number; runningTotal?: RequestUsage; usageFileRead?: number } = {
    conversation: conversationOf(agent, spec.session_id, condition),
    agentMs: 0,
  };
  const everChanged = new Set<string>();
  const lines: TrajectoryRequest[] = [];
  let infrastructureFault: string | undefined;
  for (const [index, scheduled] of schedule.entries()) {
    const active = scheduled.message.checkout;
    const isFocus = scheduled.task_id === spec.focus;
    const focusReturn = isFocus && index > 0 && schedule[index - 1]!.task_id !== spec.focus;
    const started = Date.now();
    const watcher = focusReturn
      ? watchFirstChange(d.hostPath(d.focusPath), d.snapshots.get(d.focusPath)!, started, options.pollSeconds ?? 0.5, d.hashes)
      : undefined;
    const outcome = await deliverOne(options, d, index, scripted, state);
    const firstChange = watcher ? await watcher.stop() : undefined;
    const ended = Date.now();
    const changes = await recordChanges(
      spec.checkouts.map((c) => c.path),
      d.hostPath,
      d.snapshots,
      d.hashes,
    );
    for (const p of pick(changes, d.focusPath)) everChanged.add(p);
    // A change seen only at the end of the request still counts as the first, at its end.
    const focusFirst = focusReturn ? (firstChange ?? (changes[d.focusPath] ? (ended - started) / 1000 : null)) : undefined;
    lines.push({
      request: index,
      task_id: scheduled.task_id,
      focus: isFocus,
      ...(scheduled.stage !== undefined ? { stage: scheduled.stage } : {}),
      finalization: scheduled.finalization,
      checkout: active,
      started_at: new Date(started).toISOString(),
      ended_at: new Date(ended).toISOString(),
      seconds: (ended - started) / 1000,
      budget_seconds: spec.budget.per_request_seconds,
      continuations: outcome.continuations,
      timed_out: outcome.timedOut,
      exits: outcome.exits,
      changes,
      ...(focusFirst !== undefined ? { focus_first_change_seconds: focusFirst } : {}),
      ...(agent.usage ? { usage: outcome.usage } : {}),
      ...(outcome.routing ? { routing: outcome.routing } : {}),
      ...(outcome.failure ? { failure: outcome.failure } : {}),
      ...(outcome.infrastructureRetries ? { infrastructure_retries: outcome.infrastructureRetries } : {}),
    });
    if (outcome.failure?.kind === "infrastructure") {
      // Out of retries: the provider, not the agent, ended the run; what it did so far stands.
      infrastructureFault = `request ${index}: ${outcome.failure.detail}`;
      options.log.warn(
        `${spec.session_id} (${condition}): an infrastructure fault outlasted ${INFRASTRUCTURE_RETRIES} retries at ${infrastructureFault}; the run ends there`,
      );
      break;
    }
  }
  return {
    lines,
    everChanged,
    agentMs: state.agentMs,
    ...(infrastructureFault ? { infrastructureFault } : {}),
    ...(state.conversation && !scripted ? { conversation: state.conversation } : {}),
  };
}

/**
 * One request: attempts until it ends within its budget (continuations after a timeout, in the same
 * conversation) or the provider fails it more than INFRASTRUCTURE_RETRIES times. A model-side
 * error or a non-zero exit is the agent's and is never retried.
 */
async function deliverOne(
  options: AgentRunOptions,
  d: Delivery,
  index: number,
  scripted: ScriptedStep | undefined,
  state: { conversation: string | undefined; agentMs: number; runningTotal?: RequestUsage; usageFileRead?: number },
): Promise<RequestOutcome> {
  const { spec, condition, agent, log } = options;
  const scheduled = spec.conditions[condition][index]!;
  const budget = spec.budget.per_request_seconds;
  const outcome: RequestOutcome = { exits: [], continuations: 0, timedOut: false, usage: null, routing: null, infrastructureRetries: 0 };
  let text = scheduled.message.text;
  for (let attempt = 0; ; attempt++) {
    const request: AgentRequest = {
      repository: scheduled.message.repository,
      checkout: d.place ? d.place.checkout(scheduled.message.checkout) : d.hostPath(scheduled.message.checkout),
      text,
      // A captured conversation continues only once the harness has said its id.
      continued: (index > 0 || attempt > 0) && state.conversation !== undefined,
    };
    const attemptStarted = Date.now();
    const logFile = join(d.logs, `request-${String(index).padStart(2, "0")}-attempt-${attempt}.log`);
    const cwd = agent.working_directory === "workspace" && d.place ? d.place.paths.workspace : request.checkout;
    const argv = scripted ? [] : agentArgv(agent, request, d.place!.paths, state.conversation ?? "");
    if (!scripted && argv.some((a) => a.includes(messageFileOf(d.place!.paths))))
      await writeFile(d.place!.hostFile(messageFileOf(d.place!.paths)), agentMessage(agent, request));
    const result: Attempt = scripted
      ? await scripted(index, request).then(() => ({ exit: 0, timedOut: false }))
      : await d.place!.attempt(argv, cwd, budget, logFile, agentStdin(agent, request, d.place!.paths, state.conversation ?? ""));
    state.agentMs += Date.now() - attemptStarted;
    outcome.exits.push(result.exit);
    outcome.timedOut = result.timedOut;
    const said = agent.usage ? await attemptOutput(agent, d, request, logFile, state) : undefined;
    const reading: AttemptReading | undefined = agent.usage && said !== undefined ? readAttempt(agent.usage, said) : undefined;
    // A context manager inside the harness (the OpenCode plugin) logs its routing to the usage file read with the output.
    if (said !== undefined) outcome.routing = addRouting(outcome.routing, readRouting(said));
    if (reading?.usage) {
      // A running total (Codex's) becomes this attempt's own by the difference from the last one seen.
      const own = reading.cumulative ? usageSince(reading.usage, state.runningTotal) : reading.usage;
      if (reading.cumulative) state.runningTotal = reading.usage;
      outcome.usage = addUsage(outcome.usage ?? NO_USAGE, own);
    }
    // The context manager's own calls during the attempt count in the request, like the harness's.
    const relayed = await d.relayLog?.();
    if (relayed?.usage) outcome.usage = addUsage(outcome.usage ?? NO_USAGE, relayed.usage);
    if (relayed) outcome.routing = addRouting(outcome.routing, relayed.routing);
    if (state.conversation === undefined && typeof agent.conversation === "object")
      state.conversation = await capturedConversation(agent.conversation.capture, logFile);
    outcome.failure =
      reading?.failure ?? (!result.timedOut && result.exit !== 0 ? { kind: "exit", detail: `exited with ${result.exit} (its output: ${logFile})` } : undefined);
    if (result.timedOut) {
      if (outcome.continuations >= spec.budget.timeout_continuations) break;
      outcome.continuations++;
      text = CONTINUATION_MESSAGE;
      log.info(
        `${spec.session_id} (${condition}) request ${index}: out of its ${budget}s budget; continuation ${outcome.continuations} of ${spec.budget.timeout_continuations}`,
      );
      continue;
    }
    if (outcome.failure?.kind !== "infrastructure" || outcome.infrastructureRetries >= INFRASTRUCTURE_RETRIES) break;
    outcome.infrastructureRetries++;
    log.info(
      `${spec.session_id} (${condition}) request ${index}: ${outcome.failure.detail}; retry ${outcome.infrastructureRetries} of ${INFRASTRUCTURE_RETRIES}`,
    );
  }
  return outcome;
}

/** What an attempt said: its output, and what it added to the agent's usage file during it. */
async function attemptOutput(agent: AgentSpec, d: Delivery, request: AgentRequest, logFile: string, state: { usageFileRead?: number }): Promise<string> {
  const output = await readFile(logFile, "utf8").catch(() => "");
  if (!agent.usage_file || !d.place) return output;
  // The file is named as the agent sees it; in its environment it is in a directory shared with this machine.
  const file = d.place.hostFile(agentArgv({ ...agent, command: [agent.usage_file], continue_command: [agent.usage_file] }, request, d.place.paths, "")[0]!);
  const all = await readFile(file, "utf8").catch(() => "");
  const added = all.slice(state.usageFileRead ?? 0);
  state.usageFileRead = all.length;
  return `${output}\n${added}`;
}

/** The conversation id a harness printed in its first request's output (the capture regex's first group). */
async function capturedConversation(pattern: string, logFile: string): Promise<string | undefined> {
  const output = await readFile(logFile, "utf8").catch(() => "");
  return new RegExp(pattern).exec(output)?.[1];
}
