import { Option } from "commander";
import { BUILT_STAGES } from "../stages/index.ts";
import { loadConfig, settingsOf } from "../pipeline/engine/config.ts";
import { formatSummary, runPipeline, type RunOptions } from "../pipeline/engine/engine.ts";
import { createLogger } from "../pipeline/logger.ts";
import { createProgress, silentProgress } from "../pipeline/progress.ts";
import { STAGE_ORDER, type StageName } from "../pipeline/schemas/common.ts";
import type { AnyStage } from "../pipeline/engine/stage.ts";
import { type Io, requirePath, requireWritableDir } from "./io.ts";
import { usageParser } from "./numeric-options.ts";
import { type ExecutionOverrides, type ExecutorChoice, withExecutionOverrides } from "../pipeline/engine/settings.ts";

/** What a command line changes for one run: the execution settings, and stage config keys set by flags. */
export interface RunOverrides extends ExecutionOverrides {
  /** Stage config keys (dotted) with their values, from the flags the stages declare. */
  stageKeys?: { stage: StageName; key: string; value: unknown }[];
}

function setKey(section: unknown, key: string, value: unknown): Record<string, unknown> {
  const [head, ...rest] = key.split(".");
  const object = { ...((section as Record<string, unknown> | undefined) ?? {}) };
  object[head!] = rest.length ? setKey(object[head!], rest.join("."), value) : value;
  return object;
}

/** Loads the config, applies the command line's overrides, runs the pipeline, prints the summary. */
export async function runWithConfig(io: Io, configPath: string, runOptions: RunOptions, quiet: boolean, overrides: RunOverrides = {}): Promise<number> {
  requirePath("--config", configPath, "file");
  const loaded = loadConfig(configPath, BUILT_STAGES);
  requireWritableDir(configPath, loaded.workDir);
  const log = createLogger({ level: quiet ? "warn" : "info", file: `${loaded.workDir}/logs/run.log`, write: (line) => io.err(line + "\n") });
  log.info(`config ${configPath}: benchmark '${loaded.config.name}', seed ${loaded.config.seed}, work directory ${loaded.workDir}`);
  let stageConfigs: Record<string, unknown> = { ...loaded.config.stages };
  for (const { stage, key, value } of overrides.stageKeys ?? []) stageConfigs = { ...stageConfigs, [stage]: setKey(stageConfigs[stage], key, value) };
  const execution = withExecutionOverrides(loaded.config.execution, overrides);
  const summary = await runPipeline(
    {
      workDir: loaded.workDir,
      baseDir: loaded.baseDir,
      stages: BUILT_STAGES,
      stageConfigs,
      settings: { ...settingsOf(loaded.config), execution },
      seed: loaded.config.seed,
      name: loaded.config.name,
      log,
      progress: quiet ? silentProgress : createProgress(),
    },
    runOptions,
  );
  io.out(formatSummary(summary) + "\n");
  if (summary.stages.length && summary.stages.every((s) => s.status === "up_to_date")) io.out("everything is up to date: no stage did any work\n");
  return summary.ok ? 0 : 1;
}

export const stageOption = (flag: string, description: string) => new Option(flag, description).choices([...STAGE_ORDER]);

/** The flags every stage declares, as command-line options: they set a key of that stage's config. */
export function stageFlags(stages: AnyStage[]) {
  return stages.flatMap((stage) => (stage.flags ?? []).map((flag) => ({ stage: stage.name, ...flag, attribute: new Option(flag.flag, "").attributeName() })));
}

/** A stage's flag as a commander option, its value parsed as the stage says. */
export function flagOption(flag: { flag: string; parse?: (value: string) => unknown }, description: string): Option {
  const option = new Option(flag.flag, description);
  return flag.parse ? option.argParser(usageParser(flag.parse)) : option;
}

export function overridesFrom(opts: Record<string, unknown>, stages: AnyStage[]): RunOverrides {
  const stageKeys = stageFlags(stages)
    .filter((f) => opts[f.attribute] !== undefined)
    .map((f) => ({ stage: f.stage, key: f.key, value: opts[f.attribute] }));
  return {
    executor: opts.executor as ExecutorChoice | undefined,
    redis: opts.redis as string | undefined,
    gitService: opts.gitService as string | undefined,
    jobs: opts.jobs as number | undefined,
    stageKeys,
  };
}
