import { isDeepStrictEqual } from "node:util";
import type { SessionSpec } from "../../pipeline/schemas/session.ts";
import { RequestMessage } from "../../pipeline/schemas/session.ts";
import { classifyPair, type LocalityTask } from "../../pipeline/locality.ts";

export interface Check {
  check: string;
  passed: boolean;
  detail?: string;
}

/**
 * Every invariant SPEC §2.9 asks of a session pair, each a named check with what failed, so a
 * failing session is not emitted and the report says why.
 */
export function validateSession(
  spec: SessionSpec,
  tasks: Map<string, LocalityTask & { stages: number }>,
  allowedPaths: readonly string[],
  interruptionsPerSession: number,
): Check[] {
  const checks: Check[] = [];
  const add: Add = (check, passed, detail) => checks.push(passed ? { check, passed } : { check, passed, detail });
  scheduleChecks(spec, tasks, allowedPaths, add);
  interruptionChecks(spec, tasks, interruptionsPerSession, add);
  return checks;
}

type Add = (check: string, passed: boolean, detail?: string) => void;
type Tasks = Map<string, LocalityTask & { stages: number }>;

/** Each schedule: the control is the focus's own requests in order, finalization last, every message well formed. */
function scheduleChecks(spec: SessionSpec, tasks: Tasks, allowedPaths: readonly string[], add: Add): void {
  const { control, switched } = spec.conditions;
  const focus = spec.focus;
  const projected = switched.filter((r) => r.task_id === focus);
  add("projection", isDeepStrictEqual(projected, control), "removing non-focus requests from the switched schedule does not give the control schedule");

  const focusTask = tasks.get(focus);
  const expectedControl = focusTask ? [...Array.from({ length: focusTask.stages }, (_, i) => `${i + 1}`), "final"] : [];
  add(
    "control_is_focus_in_order",
    isDeepStrictEqual(
      control.map((r) => (r.finalization ? "final" : String(r.stage))),
      expectedControl,
    ) && control.every((r) => r.task_id === focus),
    "the control schedule is not the focus's stages in order then finalization",
  );

  for (const [name, schedule] of [
    ["control", control],
    ["switched", switched],
  ] as const) {
    const last = schedule.at(-1);
    add(
      `${name}_finalization_last`,
      Boolean(last?.finalization && last.task_id === focus) && schedule.filter((r) => r.finalization).length === 1,
      `${name}: finalization must be the single last request`,
    );
    const orderOk = [...new Set(schedule.map((r) => r.task_id))].every((t) => {
      const stages = schedule.filter((r) => r.task_id === t && !r.finalization).map((r) => r.stage);
      return stages.every((s, i) => s === i + 1);
    });
    add(`${name}_task_order`, orderOk, `${name}: some task's requests are out of order or skip a stage`);
    const paths = schedule.every(
      (r) => allowedPaths.includes(r.message.checkout) && spec.checkouts.find((c) => c.task_id === r.task_id)?.path === r.message.checkout,
    );
    add(`${name}_checkouts`, paths, `${name}: a request names a checkout that is not its task's`);
    const messagesOk = schedule.every((r) => RequestMessage.safeParse(r.message).success && r.message.repository === spec.repo);
    add(`${name}_messages`, messagesOk, `${name}: a message carries something besides repository, checkout and text`);
  }
}

/** The interruptions: distinct, of the same repository, disjoint and of the session's locality, suspended and resumed. */
function interruptionChecks(spec: SessionSpec, tasks: Tasks, interruptionsPerSession: number, add: Add): void {
  const { switched } = spec.conditions;
  const focus = spec.focus;
  const focusTask = tasks.get(focus);
  const interruptions = spec.interruptions;
  const distinct = new Set(interruptions).size === interruptions.length && !interruptions.includes(focus);
  add(
    "interruptions",
    interruptions.length === interruptionsPerSession && distinct,
    `expected ${interruptionsPerSession} distinct interruptions other than the focus, found ${interruptions.length}`,
  );
  add(
    "same_repository",
    interruptions.every((t) => tasks.get(t)?.repo === spec.repo) && focusTask?.repo === spec.repo,
    "an interruption is from another repository",
  );
  // Locality is defined within one repository; a task from another one fails same_repository above.
  const locality = focusTask ? interruptions.map((t) => (tasks.get(t)?.repo === focusTask.repo ? classifyPair(focusTask, tasks.get(t)!) : undefined)) : [];
  add(
    "disjoint_files",
    locality.every((c) => c?.eligible),
    "an interruption modifies a source file the focus modifies",
  );
  add(
    "locality",
    locality.every((c) => c?.class === spec.locality),
    `an interruption is not ${spec.locality} to the focus`,
  );
  add(
    "layout",
    new Set(spec.checkouts.map((c) => c.path)).size === spec.checkouts.length && spec.checkouts.length === interruptionsPerSession + 1,
    "checkouts must be one distinct path per task",
  );
  add(
    "switched_uses_interruptions",
    interruptions.every((t) => switched.some((r) => r.task_id === t)) && switched.every((r) => r.task_id === focus || interruptions.includes(r.task_id)),
    "the switched schedule must use every interruption and nothing else",
  );

  // Every gap between two focus stages holds interruption work.
  const focusPositions = switched.map((r, i) => (r.task_id === focus && !r.finalization ? i : -1)).filter((i) => i >= 0);
  const gapsFilled = focusPositions.slice(1).every((p, i) => p - focusPositions[i]! > 1);
  add("focus_returns", gapsFilled, "two focus stages follow each other with no interruption work between them");
  // SPEC §2.8: where the focus leaves room (two gaps or more), every interruption of two requests
  // or more is suspended and resumed: its requests come in two runs or more between focus stages.
  const gaps = Math.max(0, focusPositions.length - 1);
  const unresumed = gaps >= 2 ? interruptions.filter((t) => (tasks.get(t)?.stages ?? 0) >= 2 && runsOf(switched, t) < 2) : [];
  add(
    "interruptions_resumed",
    !unresumed.length,
    `interruption(s) ${unresumed.join(", ")} have two or more requests but are never resumed, although the focus has ${gaps} gaps`,
  );
}

/** How many separate runs of a task's requests a schedule has (interrupted by other tasks' requests). */
function runsOf(schedule: SessionSpec["conditions"]["switched"], task: string): number {
  let runs = 0;
  schedule.forEach((r, i) => {
    if (r.task_id === task && schedule[i - 1]?.task_id !== task) runs++;
  });
  return runs;
}
