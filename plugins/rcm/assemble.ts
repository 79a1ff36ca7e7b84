/**
 * The context of one model call (Section 5.2's Assemble): the current request, the routed history
 * (the interaction groups of its tasks and related tasks, shared and unassigned ones) and, with
 * memory, the tasks' state records on resumption. Groups are kept or dropped whole, so a tool call
 * is never separated from its result; the stored conversation is never changed (a new array, new
 * message objects where one changes).
 */
import { interactionGroups, type InteractionGroup, type SessionMessage } from "./history.ts";
import { renderRecord, type TaskRecord } from "./memory.ts";
import { MIN_CONFIDENCE, type Assignment } from "./router.ts";

/** The most recent groups of a resumed task kept whole even where its record covers them. */
export const RECENT_VERBATIM = 2;

export interface Assembled {
  messages: SessionMessage[];
  /** Why the history went whole, when it did. */
  unfiltered?: "compaction" | "unassigned" | "low_confidence";
  droppedGroups: number;
  /** Groups whose assistant and tool messages the injected record stands for. */
  condensedGroups: number;
  /** The tasks whose record was injected. */
  records: string[];
}

/** A group's tasks; undefined for a group the router left unassigned (it stays visible to every task). */
function tasksOf(group: InteractionGroup, assignments: Record<string, Assignment>): string[] | undefined {
  const tasks = group.request ? assignments[group.request.info.id]?.tasks : undefined;
  return tasks?.length ? tasks : undefined;
}

/** Whether the current request resumes one of `tasks`: it has earlier groups, and the latest request before this one was another task's. */
function resumes(groups: InteractionGroup[], tasks: Set<string>, assignments: Record<string, Assignment>): boolean {
  const earlier = groups.slice(0, -1).filter((g) => !g.shared && g.request);
  const hasHistory = earlier.some((g) => (tasksOf(g, assignments) ?? []).some((t) => tasks.has(t)));
  const previous = earlier.at(-1);
  return hasHistory && previous !== undefined && !(tasksOf(previous, assignments) ?? []).some((t) => tasks.has(t));
}

/** `read`: the messages' groups, when the caller has read them already (interactionGroups of the same messages). */
export function assemble(
  messages: SessionMessage[],
  assignments: Record<string, Assignment>,
  memory?: Record<string, TaskRecord>,
  read?: InteractionGroup[],
): Assembled {
  const whole = (unfiltered: Assembled["unfiltered"]): Assembled => ({ messages, unfiltered, droppedGroups: 0, condensedGroups: 0, records: [] });
  const groups = read ?? interactionGroups(messages);
  const current = groups.at(-1);
  if (!current?.request || current.shared) return whole("compaction");
  const assignment = assignments[current.request.info.id];
  if (!assignment) return whole("unassigned");
  if (assignment.confidence < MIN_CONFIDENCE) return whole("low_confidence");
  const own = new Set(assignment.tasks);
  const visible = new Set([...assignment.tasks, ...assignment.related]);
  const kept = groups.slice(0, -1).filter((g) => {
    const tasks = tasksOf(g, assignments);
    return g.shared || !tasks || tasks.some((t) => visible.has(t));
  });
  const records =
    memory && resumes(groups, own, assignments) ? assignment.tasks.map((t) => memory[t]).filter((r): r is TaskRecord => !!r && r.covers.length > 0) : [];
  const covered = new Set(records.flatMap((r) => r.covers));
  // The task's latest groups stay whole: only older exchanges the record covers are condensed.
  const ownGroups = kept.filter((g) => (tasksOf(g, assignments) ?? []).some((t) => own.has(t)));
  const recent = new Set(ownGroups.slice(-RECENT_VERBATIM));
  let condensedGroups = 0;
  const out: SessionMessage[] = [];
  for (const group of kept) {
    const condense = records.length > 0 && group.request && !recent.has(group) && ownGroups.includes(group) && covered.has(group.request.info.id);
    if (condense) {
      condensedGroups++;
      out.push(group.request!);
    } else out.push(...group.messages);
  }
  const request = current.request;
  const injected = records.length
    ? {
        info: request.info,
        parts: [
          {
            type: "text",
            id: `prt_rcm_${request.info.id}`,
            sessionID: request.info.sessionID,
            messageID: request.info.id,
            synthetic: true,
            text: records.map(renderRecord).join("\n\n"),
          },
          ...request.parts,
        ],
      }
    : request;
  out.push(injected, ...current.messages.slice(1));
  return { messages: out, droppedGroups: groups.length - 1 - kept.length, condensedGroups, records: records.map((r) => r.task) };
}
