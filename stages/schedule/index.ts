import { z } from "zod";
import { SelectedSession } from "../../pipeline/schemas/selection.ts";
import { SessionSpec } from "../../pipeline/schemas/session.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { defineStage, input, RecordError } from "../../pipeline/engine/stage.ts";
import { ScheduleError, sessionSpec } from "./schedule.ts";

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
        try {
          return sessionSpec({
            session,
            benchmark: ctx.benchmark,
            seed: ctx.seed,
            task: (id) => ({ stages: tasks.get(id)!.requests.length, baseCommit: tasks.get(id)!.snapshot.base_commit }),
            text: (slot) => (slot.finalization ? FINALIZATION_TEXT : tasks.get(slot.task)!.requests[slot.stage! - 1]!.text),
            checkoutPaths: ctx.session.checkouts,
            budget: { per_request_seconds: ctx.config.per_request_seconds, timeout_continuations: ctx.config.timeout_continuations },
          });
        } catch (error) {
          if (error instanceof ScheduleError) throw new RecordError("validation_failed", `${session.focus}: ${error.message}`);
          throw error;
        }
      },
    });
    return { sessions: specs };
  },
});
