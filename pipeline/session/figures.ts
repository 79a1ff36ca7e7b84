/** One request of a schedule, as the figures see it: which task, and whether it is the finalization. */
export interface ScheduleSlot {
  task: string;
  finalization: boolean;
}

/** SPEC §2.10's per-session figures. */
export function sessionFigures(slots: readonly ScheduleSlot[], checkoutOf: (task: string) => string, focus: string) {
  let switches = 0;
  let returns = 0;
  for (let i = 1; i < slots.length; i++) {
    if (checkoutOf(slots[i]!.task) !== checkoutOf(slots[i - 1]!.task)) switches++;
    if (slots[i]!.task === focus && !slots[i]!.finalization && slots[i - 1]!.task !== focus) returns++;
  }
  return { requests: slots.length, workspace_switches: switches, focus_returns: returns };
}
