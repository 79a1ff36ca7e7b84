import type { AgentSpec } from "../schemas/agent.ts";
import type { ScheduledRequest } from "../schemas/session.ts";
import { git } from "../git.ts";
import type { AgentRequest, AgentRunOptions } from "./types.ts";

/** Runs a scripted test agent's step for one request; only these read the held-out assets. */
export type ScriptedStep = (index: number, request: AgentRequest) => Promise<void>;

/**
 * The built-in scripted agents. `replay-reference` applies each task's reference implementation
 * at that task's last request, to the active checkout; `noop` never edits; `wrong-checkout`
 * applies the focus task's reference to the checkout of the request before, at the focus's first
 * return from another checkout (switched) or, when it never leaves (control), at its last request.
 */
export function scriptedAgent(
  kind: NonNullable<AgentSpec["scripted"]>,
  schedule: ScheduledRequest[],
  focus: string,
  hostPath: (path: string) => string,
  heldout: AgentRunOptions["heldout"],
): ScriptedStep {
  const lastIndex = new Map(schedule.map((r, i) => [r.task_id, i] as const));
  const firstReturn = schedule.findIndex((r, i) => i > 0 && r.task_id === focus && schedule[i - 1]!.message.checkout !== r.message.checkout);
  const wrongAt = firstReturn >= 0 ? firstReturn : lastIndex.get(focus)!;
  const apply = async (taskId: string, dir: string, where: "own" | "other") => {
    const task = heldout?.(taskId);
    if (!task) throw new Error(`the ${kind} agent needs the held-out assets of ${taskId}`);
    if (!task.implementation_patch) return;
    // In another task's checkout the patch may not fit (a near task changed the same files):
    // what fits is written and the rest left as .rej files, as a hurried edit would leave it.
    const args = where === "own" ? ["apply", "--whitespace=nowarn", "--binary", "-"] : ["apply", "--whitespace=nowarn", "--binary", "--reject", "-"];
    await git(args, { cwd: dir, input: task.implementation_patch }).catch((error) => {
      if (where === "own") throw error;
    });
  };
  return async (index, request) => {
    const scheduled = schedule[index]!;
    if (kind === "noop") return;
    if (kind === "replay-reference") return lastIndex.get(scheduled.task_id) === index ? apply(scheduled.task_id, request.checkout, "own") : undefined;
    const previous = schedule[index - 1];
    if (scheduled.task_id !== focus || index !== wrongAt) return;
    const target = previous ? hostPath(previous.message.checkout) : request.checkout;
    await apply(focus, target, target === request.checkout ? "own" : "other");
  };
}
