import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { PipelineSettings } from "../../pipeline/engine/settings.ts";
import { defineStage } from "../../pipeline/engine/stage.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { silentProgress } from "../../pipeline/progress.ts";
import { runProjectOnce } from "../../pipeline/project/project.ts";

export const Item = z.object({ id: z.string(), value: z.number() });
export type Item = z.infer<typeof Item>;

export type StageContext = Parameters<Parameters<typeof defineStage>[0]["run"]>[0];

/**
 * One stage over the lines of `file` in a project of its own (profiles from `dir/repos`): each
 * line is a record whose item `work` makes. Returns the run's summary and the stage's rejects.
 */
export async function runLineStage(dir: string, name: "mine" | "oracle", file: string, work: (ctx: StageContext, line: string) => Item | Promise<Item>) {
  const stage = defineStage({
    name,
    summary: "",
    example: "",
    version: "1",
    module: import.meta.url,
    configSchema: z.strictObject({}),
    settings: ["profiles"],
    inputs: {},
    outputs: [{ name: "items", schema: Item, key: (i: Item) => i.id }],
    externalFiles: () => [file],
    async run(ctx) {
      const lines = ctx.files[0]!.text.split("\n").filter(Boolean);
      return { items: await ctx.mapRecords(lines, { id: (line) => line.replace("/", "__"), work: (line) => work(ctx, line) }) };
    },
  });
  const summary = await runProjectOnce({
    workDir: join(dir, "work"),
    baseDir: dir,
    stages: [stage],
    stageConfigs: {},
    settings: PipelineSettings.parse({ profiles_dir: "repos" }),
    seed: "1",
    log: silentLogger,
    progress: silentProgress,
  });
  const rejects = readFileSync(join(dir, "work", "artifacts", name, "rejects.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  return { summary, rejects };
}
