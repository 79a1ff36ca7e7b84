import { z } from "zod";
import { SelectedSession } from "../../pipeline/schemas/selection.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { defineStage, input } from "../../pipeline/engine/stage.ts";
import { selectSessions } from "./select.ts";

export { caseSeed, selectSessions } from "./select.ts";

export const SelectConfig = z.strictObject({
  near: z.number().int().min(0).default(100),
  far: z.number().int().min(0).default(100),
  min_focus_stages: z.number().int().min(2).default(2),
});

export const selectStage = defineStage({
  name: "select",
  summary: "choose focus tasks (near and far) and their same-repository interruptions, with seeded draws",
  example: "switch-swe select --config data/demo/pipeline.yaml",
  version: "1",
  module: import.meta.url,
  configSchema: SelectConfig,
  usesSeed: true,
  settings: ["session"],
  inputs: { tasks: input("oracle", "tasks", Task) },
  outputs: [{ name: "sessions", schema: SelectedSession, key: (s: SelectedSession) => s.focus }],
  async run(ctx, { tasks }) {
    const result = selectSessions(
      tasks.map((t) => ({ id: t.id, repo: t.snapshot.repo, sourceFiles: t.source_files, sourceDirs: t.source_dirs, stages: t.requests.length })),
      {
        seed: ctx.seed,
        sizes: { near: ctx.config.near, far: ctx.config.far },
        interruptions: ctx.session.interruptions,
        minFocusStages: ctx.config.min_focus_stages,
      },
    );
    await ctx.mapRecords(result.sessions, { id: (s) => s.focus, cache: false, work: () => undefined });
    const chosen = new Set(result.sessions.map((s) => s.focus));
    const skippedOnce = new Map<string, string[]>();
    for (const s of result.skipped) if (!chosen.has(s.focus)) skippedOnce.set(s.focus, [...(skippedOnce.get(s.focus) ?? []), `${s.group}: ${s.reason}`]);
    for (const [focus, reasons] of skippedOnce)
      ctx.reject({ record_id: focus, reason: "not_enough_interruptions", message: `${focus}: skipped as a focus (${reasons.join("; ")})` });
    const short = result.sessions.filter((s) => s.single_request_interruptions > 0);
    if (short.length)
      ctx.log.info(
        `${short.length} session(s) had to take interruptions of a single request (too few eligible ones had two or more): ${short.map((s) => `${s.focus} (${s.single_request_interruptions})`).join(", ")}`,
      );
    ctx.log.info(
      `${result.sessions.filter((s) => s.locality === "near").length} near and ${result.sessions.filter((s) => s.locality === "far").length} far sessions; ${Object.keys(result.interruptionReuse).length} distinct interruption tasks`,
    );
    return { sessions: result.sessions };
  },
});
