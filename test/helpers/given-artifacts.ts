import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { RunOptions, RunSummary } from "../../pipeline/engine/engine.ts";
import { PipelineSettings } from "../../pipeline/engine/settings.ts";
import { defineStage, inputsOf, type AnyStage, type OutputSpec } from "../../pipeline/engine/stage.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { silentProgress } from "../../pipeline/progress.ts";
import { runProjectOnce } from "../../pipeline/project/project.ts";
import type { StageName } from "../../pipeline/schemas/common.ts";
import { BUILT_STAGES } from "../../stages/index.ts";

/** Records a test gives for the stages a stage reads: stage → artifact → records. */
export type GivenArtifacts = Partial<Record<StageName, Record<string, unknown[]>>>;

/**
 * Stands for a stage upstream of the one under test: it writes the records a test gave for its
 * artifacts (in the order the real stage's keys give them), read from a file so the engine hashes
 * them as it hashes any input.
 */
function givenStage(name: StageName, outputs: OutputSpec[]): AnyStage {
  return defineStage({
    name,
    summary: "records a test gives",
    example: "",
    version: "1",
    module: import.meta.url,
    configSchema: z.strictObject({ file: z.string() }),
    inputs: {},
    outputs,
    externalFiles: (config) => [config.file],
    async run(ctx) {
      const given = JSON.parse(ctx.files[0]!.text) as Record<string, unknown[]>;
      return Object.fromEntries(outputs.map((o) => [o.name, given[o.name] ?? []]));
    },
  });
}

export interface StageOver {
  summary: RunSummary;
  /** An artifact of the run's work directory, as records. */
  read(stage: StageName, name: string): unknown[];
}

/**
 * One real stage run through the engine, in a project of its own under `dir`, over artifacts the
 * test gives: its inputs validated by their schemas when the upstream stand-ins write them, its
 * context (profiles, session settings, executor) from the engine, and its outputs, rejects and
 * notes written as in a whole run. `settings` are the config's top level (`profiles_dir` relative
 * to `dir`, made empty when the test writes no profile).
 */
export async function runStageOver(
  stage: AnyStage,
  given: GivenArtifacts,
  options: { dir: string; settings?: unknown; config?: unknown; seed?: string },
  runOptions: RunOptions = {},
): Promise<StageOver> {
  const producers = new Map<StageName, OutputSpec[]>();
  for (const [, spec] of inputsOf(stage)) {
    const outputs = producers.get(spec.stage) ?? [];
    const real = BUILT_STAGES.find((s) => s.name === spec.stage)!.outputs.find((o) => o.name === spec.name)!;
    if (!outputs.some((o) => o.name === spec.name)) outputs.push({ name: spec.name, schema: spec.schema, key: real.key });
    producers.set(spec.stage, outputs);
  }
  const stageConfigs: Partial<Record<StageName, unknown>> = { [stage.name]: options.config ?? {} };
  for (const name of producers.keys()) {
    writeFileSync(join(options.dir, `given-${name}.json`), JSON.stringify(given[name] ?? {}));
    stageConfigs[name] = { file: `given-${name}.json` };
  }
  const settings = PipelineSettings.parse(options.settings ?? {});
  mkdirSync(join(options.dir, settings.profiles_dir), { recursive: true });
  const workDir = join(options.dir, "work");
  const summary = await runProjectOnce(
    {
      workDir,
      baseDir: options.dir,
      stages: [...[...producers].map(([name, outputs]) => givenStage(name, outputs)), stage],
      stageConfigs,
      settings,
      seed: options.seed ?? "1",
      log: silentLogger,
      progress: silentProgress,
    },
    runOptions,
  );
  const read = (from: StageName, name: string) => {
    const file = join(workDir, "artifacts", from, `${name}.jsonl`);
    if (!existsSync(file)) return [];
    return readFileSync(file, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as unknown);
  };
  return { summary, read };
}
