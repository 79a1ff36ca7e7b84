import { mkdir } from "node:fs/promises";
import { basename, join } from "node:path";
import { writeFileAtomic } from "../atomic.ts";
import type { SessionSpec } from "../schemas/session.ts";
import { sessionRunLayout } from "../work-layout.ts";
import { provisionCheckout, snapshot, type HashCache, type Snapshot } from "../checkouts/snapshot.ts";
import { startContextRelay } from "./context-relay.ts";
import { deliverRequests } from "./delivery.ts";
import { agentPlace, warnOfInstructionsAbove } from "./placement.ts";
import { summarise } from "./trajectory.ts";
import type { AgentRunOptions, AgentRunResult } from "./types.ts";

/**
 * Drives an agent through one condition of a session (SPEC §2.8, §3), without scoring it (the
 * scored run, runs.ts, verifies what it leaves): provisions the five
 * checkouts at their base revisions under the session's paths, delivers each message in order
 * with only repository, checkout and text, gives each request its budget and at most
 * `timeout_continuations` continuations, and records a trajectory: every request's times,
 * budget used, continuations, exits, and the files changed in every checkout during it.
 */
export async function driveAgent(given: AgentRunOptions): Promise<AgentRunResult> {
  const { spec, agent, runDir } = given;
  const runStarted = Date.now();
  const { workspace, logs, trajectory: trajectoryFile, contextRelay } = sessionRunLayout(runDir);
  await mkdir(logs, { recursive: true });
  // The session's absolute paths (/workspace/w00, ...) map to directories of the same names here.
  const hostPath = (path: string) => join(workspace, basename(path));
  await provisionSessionCheckouts(spec, given.mirror, given.checkoutCommits, hostPath);
  const focusPath = focusPathOf(spec);
  const hashes: HashCache = new Map();
  const snapshots = new Map<string, Snapshot>();
  for (const checkout of spec.checkouts) snapshots.set(checkout.path, await snapshot(hostPath(checkout.path), hashes));
  const base = new Map(snapshots);
  if (!agent.scripted && agent.runs === "host") warnOfInstructionsAbove(workspace, given.log);
  // A context relay stands between the harness and the endpoint: the harness is given its URL.
  const relay =
    agent.context_relay && given.model
      ? await startContextRelay(agent.context_relay, given.model.url, contextRelay, join(logs, "context-relay.log"), given.log)
      : undefined;
  const options = relay && given.model ? { ...given, model: { ...given.model, url: relay.url } } : given;
  let requests: Awaited<ReturnType<typeof deliverRequests>>;
  try {
    const place = agent.scripted ? undefined : await agentPlace(options, hostPath, logs);
    try {
      requests = await deliverRequests(options, { hostPath, focusPath, logs, hashes, snapshots, place, ...(relay ? { relayLog: relay.takeLog } : {}) });
    } finally {
      await place?.close();
    }
  } finally {
    await relay?.close();
  }
  await writeFileAtomic(trajectoryFile, requests.lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  const lost = [...requests.everChanged].filter((p) => snapshots.get(focusPath)!.get(p) === base.get(focusPath)!.get(p)).length;
  const behaviour = {
    ...summarise(agent, requests.lines, lost, Math.max(0, (Date.now() - runStarted - requests.agentMs) / 1000), trajectoryFile, requests.infrastructureFault),
    ...(requests.conversation ? { conversation: requests.conversation } : {}),
  };
  return { focusCheckout: focusCheckoutIn(runDir, spec), trajectoryFile, behaviour };
}

/**
 * The session's checkouts, each made as the agent gets it (its commit's files, committed once: the
 * base, or for a derived checkout the commit `commits` gives, made by sessionCheckoutCommits), at
 * `dirOf(its session path)`: the one place a checkout is made from a session spec, for the session
 * runner and the Harbor export alike.
 */
export async function provisionSessionCheckouts(
  spec: SessionSpec,
  mirror: string,
  commits: ReadonlyMap<string, string>,
  dirOf: (path: string) => string,
): Promise<void> {
  for (const checkout of spec.checkouts) await provisionCheckout(mirror, commits.get(checkout.path) ?? checkout.base_commit, dirOf(checkout.path));
}

const focusPathOf = (spec: SessionSpec) => spec.checkouts.find((c) => c.task_id === spec.focus)!.path;

/** Where a run in `runDir` keeps the focus checkout (the session's path, under its workspace). */
export const focusCheckoutIn = (runDir: string, spec: SessionSpec) => join(sessionRunLayout(runDir).workspace, basename(focusPathOf(spec)));
