import { z } from "zod";
import { LocalityPair } from "../../pipeline/schemas/locality.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { defineStage, input } from "../../pipeline/engine/stage.ts";
import { LocalityIndex } from "../../pipeline/locality.ts";

export { classifyPair, LocalityIndex } from "../../pipeline/locality.ts";

export const LocalityConfig = z.strictObject({});

export const localityStage = defineStage({
  name: "locality",
  summary: "classify every same-repository pair of tasks as near, far or ineligible",
  example: "switch-swe locality --config data/demo/pipeline.yaml",
  version: "1",
  module: import.meta.url,
  configSchema: LocalityConfig,
  // The pool is what qualify, reconstruct, audit and the oracle kept.
  inputs: { tasks: input("oracle", "tasks", Task) },
  outputs: [{ name: "pairs", schema: LocalityPair, key: (p: LocalityPair) => `${p.repo}\0${p.task_a}\0${p.task_b}` }],
  async run(ctx, { tasks }) {
    const index = new LocalityIndex(tasks.map((t) => ({ id: t.id, repo: t.snapshot.repo, sourceFiles: t.source_files, sourceDirs: t.source_dirs })));
    await ctx.mapRecords(tasks, { id: (t) => t.id, cache: false, work: () => undefined });
    return { pairs: [...index.pairs()] };
  },
});
