import { fileURLToPath } from "node:url";
import { z } from "zod";
import { LocalityPair } from "../../pipeline/schemas/locality.ts";
import type { SplitChange } from "../../pipeline/schemas/split.ts";
import { defineStage } from "../../pipeline/stage.ts";
import { LocalityIndex } from "./locality.ts";

export { classifyPair, LocalityIndex } from "./locality.ts";

export const LocalityConfig = z.strictObject({});

export const localityStage = defineStage({
  name: "locality",
  summary: "classify every same-repository pair of tasks as near, far or ineligible",
  example: "switch-swe locality --config data/demo/pipeline.yaml",
  version: "1",
  sourceFiles: [fileURLToPath(new URL(".", import.meta.url))],
  configSchema: LocalityConfig,
  inputs: [{ stage: "split", name: "splits" }],
  outputs: [{ name: "pairs", schema: LocalityPair, key: (p: LocalityPair) => `${p.repo}\0${p.task_a}\0${p.task_b}` }],
  async run(ctx) {
    const splits = ctx.input<SplitChange>({ stage: "split", name: "splits" });
    const index = new LocalityIndex(splits.map((s) => ({ id: s.task_id, repo: s.repo, sourceFiles: s.source_files, sourceDirs: s.source_dirs })));
    await ctx.mapRecords(splits, { id: (s) => s.task_id, cache: false, work: () => undefined });
    return { pairs: [...index.pairs()] };
  },
});
