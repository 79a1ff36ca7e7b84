import { z } from "zod";
import { SelectedSession } from "../../pipeline/schemas/selection.ts";
import { SessionSpec, type ScheduledRequest } from "../../pipeline/schemas/session.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { defineStage, input, RecordError } from "../../pipeline/engine/stage.ts";
import { assignCheckouts, buildSchedules, ScheduleError, type Slot } from "./schedule.ts";

export { assignCheckouts, buildSchedules } from "./schedule.ts";

/**
 * The one finalization request (SPEC §1): it closes every session, in both conditions, and states
 * no requirement. reconstruct never produces it; schedule appends it.
 */
export const FINALIZATION_TEXT = "Finish this task and prepare it for evaluation: complete the work you consider unfinished, then stop.";

export const ScheduleConfig = z.strictObject({
  per_request_seconds: z.number().int().positive().default(900),
  timeout_continuations: z.number().int().nonnegative().default(3),
});

export const scheduleStage = defineStage({
  name: "schedule",
  summary: "build the control and switched schedules of every session, with role-neutral checkouts",
  example: "switch-swe schedule --config data/demo/pipeline.yaml",
  version: "1",
  module: import.meta.url,
  configSchema: ScheduleConfig,
  usesSeed: true,
  settings: ["session"],
  inputs: { selected: input("select", "sessions", SelectedSession), taskList: input("oracle", "tasks", Task) },
  outputs: [{ name: "sessions", schema: SessionSpec, key: (s: SessionSpec) => s.session_id }],
  async run(ctx, { selected, taskList }) {
    const tasks = new Map(taskList.map((t) => [t.id, t]));
    const specs = await ctx.mapRecords(selected, {
      id: (s) => s.focus,
      dependsOn: (s) => [s.focus, ...s.interruptions].map((id) => tasks.get(id)?.requests ?? null),
      work: (session) => {
        const focus = tasks.get(session.focus)!;
        let schedules;
        try {
          schedules = buildSchedules({
            focus: { id: focus.id, stages: focus.requests.length },
            interruptions: session.interruptions.map((id) => ({ id, stages: tasks.get(id)!.requests.length })),
            caseSeed: session.case_seed,
          });
        } catch (error) {
          if (error instanceof ScheduleError) throw new RecordError("validation_failed", `${session.focus}: ${error.message}`);
          throw error;
        }
        const members = [focus.id, ...session.interruptions];
        const checkout = assignCheckouts(members, ctx.session.checkouts, session.case_seed);
        const toRequest = (slot: Slot): ScheduledRequest => {
          const task = tasks.get(slot.task)!;
          const text = slot.finalization ? FINALIZATION_TEXT : task.requests[slot.stage! - 1]!.text;
          return {
            task_id: slot.task,
            ...(slot.stage ? { stage: slot.stage } : {}),
            finalization: slot.finalization,
            message: { repository: task.snapshot.repo, checkout: checkout.get(slot.task)!, text },
          };
        };
        return SessionSpec.parse({
          session_id: `session-${focus.id}`,
          benchmark: ctx.benchmark,
          repo: session.repo,
          focus: focus.id,
          interruptions: session.interruptions,
          locality: session.locality,
          seeds: { benchmark: ctx.seed, case: session.case_seed },
          checkouts: members
            .map((id) => {
              const derived = session.derived_checkouts.find((d) => d.task_id === id);
              return {
                path: checkout.get(id)!,
                task_id: id,
                base_commit: tasks.get(id)!.snapshot.base_commit,
                ...(derived ? { derived: { without: derived.without, commit: derived.commit } } : {}),
              };
            })
            .sort((a, b) => (a.path < b.path ? -1 : 1)),
          budget: { per_request_seconds: ctx.config.per_request_seconds, timeout_continuations: ctx.config.timeout_continuations },
          conditions: { control: schedules.control.map(toRequest), switched: schedules.switched.map(toRequest) },
        });
      },
    });
    return { sessions: specs };
  },
});
