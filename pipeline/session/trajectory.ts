import type { AgentSpec, SessionBehaviour, TrajectoryRequest } from "../schemas/agent.ts";
import { changesBetween, snapshot, type HashCache, type Snapshot } from "../checkouts/snapshot.ts";
import { addRouting, addUsage, NO_USAGE } from "./usage.ts";

/** The behaviour the study discusses, from a run's trajectory. */
export function summarise(
  /** `usage`: the reader of the agent's usage (a harness's output, or a Harbor agent's ATIF trajectory), when it reports any; `runs`: where the agent ran. */
  agent: { name: string; usage?: string | undefined; runs: AgentSpec["runs"] },
  lines: TrajectoryRequest[],
  workLostFiles: number,
  runnerSeconds: number,
  trajectory: string,
  infrastructureFault: string | undefined,
): SessionBehaviour {
  const elsewhere = (l: TrajectoryRequest) => Object.entries(l.changes).filter(([path]) => path !== l.checkout);
  // Switch-Focus: the substantive focus requests after intervening work (not the first, not the finalization).
  const resumed = lines.filter((l, i) => l.focus && !l.finalization && i > 0 && !lines[i - 1]!.focus);
  const total = (ls: TrajectoryRequest[]) => ls.reduce((sum, l) => (l.usage ? addUsage(sum, l.usage) : sum), NO_USAGE);
  const routing = lines.reduce<ReturnType<typeof addRouting>>((sum, l) => addRouting(sum, l.routing), null);
  return {
    agent: agent.name,
    agent_runs: agent.runs,
    requests: lines.length,
    cross_task_write_requests: lines.filter((l) => elsewhere(l).length > 0).length,
    cross_task_write_files: lines.reduce((n, l) => n + elsewhere(l).reduce((m, [, c]) => m + c.added.length + c.modified.length + c.deleted.length, 0), 0),
    focus_recovery_seconds: lines.filter((l) => l.focus_first_change_seconds !== undefined).map((l) => l.focus_first_change_seconds ?? null),
    work_lost_files: workLostFiles,
    continuations_used: lines.reduce((n, l) => n + l.continuations, 0),
    timed_out_requests: lines.filter((l) => l.timed_out).length,
    failed_requests: lines.filter((l) => l.failure).length,
    ...(infrastructureFault ? { infrastructure_fault: infrastructureFault } : {}),
    ...(agent.usage ? { usage: { all: total(lines), focus_resumed: total(resumed) } } : {}),
    ...(routing ? { routing } : {}),
    runner_seconds: runnerSeconds,
    trajectory,
  };
}

/** Snapshots every checkout after a request, updates `snapshots`, and says what changed where. */
export async function recordChanges(
  paths: string[],
  hostPath: (path: string) => string,
  snapshots: Map<string, Snapshot>,
  hashes: HashCache,
): Promise<TrajectoryRequest["changes"]> {
  const changes: TrajectoryRequest["changes"] = {};
  for (const path of paths) {
    const after = await snapshot(hostPath(path), hashes);
    const changed = changesBetween(snapshots.get(path)!, after);
    if (changed) changes[path] = changed;
    snapshots.set(path, after);
  }
  return changes;
}

/** The files a request changed in one checkout, whatever the kind of change. */
export function pick(changes: TrajectoryRequest["changes"], path: string): string[] {
  const c = changes[path];
  return c ? [...c.added, ...c.modified, ...c.deleted] : [];
}
