import { Command, Option } from "commander";
import { BUILT_STAGES } from "../../stages/index.ts";
import { loadConfig, settingsOf } from "../../pipeline/engine/config.ts";
import { formatSummary, orderStages, runPipeline, type RunOptions } from "../../pipeline/engine/engine.ts";
import { createLogger } from "../../pipeline/logger.ts";
import { createProgress, silentProgress } from "../../pipeline/progress.ts";
import { STAGE_ORDER, type StageName } from "../../pipeline/schemas/common.ts";
import type { AnyStage } from "../../pipeline/engine/stage.ts";
import { splitByHand } from "./split-diff.ts";
import { qualifyTaskCommand } from "./qualify-task.ts";
import { type ExitCode, type Io, requirePath, requireWritableDir, UsageError } from "../io.ts";
import { type ExecutionOverrides, type ExecutorChoice, executorOption, redisOption, withExecutionOverrides } from "../execution-options.ts";

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

const stageOption = (flag: string, description: string) => new Option(flag, description).choices([...STAGE_ORDER]);

/** The flags every stage declares, as command-line options: they set a key of that stage's config. */
function stageFlags(stages: AnyStage[]) {
  return stages.flatMap((stage) => (stage.flags ?? []).map((flag) => ({ stage: stage.name, ...flag, attribute: new Option(flag.flag, "").attributeName() })));
}

/** A stage's flag as a commander option, its value parsed as the stage says. */
function flagOption(flag: { flag: string; parse?: (value: string) => unknown }, description: string): Option {
  const option = new Option(flag.flag, description);
  return flag.parse ? option.argParser(flag.parse) : option;
}

function overridesFrom(opts: Record<string, unknown>, stages: AnyStage[]): RunOverrides {
  const stageKeys = stageFlags(stages).filter((f) => opts[f.attribute] !== undefined).map((f) => ({ stage: f.stage, key: f.key, value: opts[f.attribute] }));
  return { executor: opts.executor as ExecutorChoice | undefined, redis: opts.redis as string | undefined, jobs: opts.jobs as number | undefined, stageKeys };
}

export function registerRun(program: Command, io: Io, exit: ExitCode): void {
  const run = program
    .command("run")
    .description("run every stage in order, skipping work whose inputs, config and code are unchanged")
    .requiredOption("-c, --config <file>", "pipeline config (YAML or JSON)")
    .option("--force", "redo every stage and every record, ignoring caches")
    .option("--keep-going", "run later stages even after a stage had failures that may not recur (the run still exits 1)")
    .addOption(stageOption("--from <stage>", "redo this stage and every later one"))
    .addOption(stageOption("--only <stage>", "run this stage alone from the artifacts already built"))
    .option("-q, --quiet", "print only warnings, errors and the summary")
    .addOption(executorOption("the execution settings' executor for this run: docker, local, auto, or queue (workers on other hosts)"))
    .addOption(redisOption())
    .option("--jobs <n>", "tasks worked on at once", (v) => Number(v));
  for (const flag of stageFlags(BUILT_STAGES)) run.addOption(flagOption(flag, `${flag.stage}: ${flag.description}`));
  run
    .addHelpText("after", "\nExample:\n  switch-swe run --config data/demo/pipeline.yaml\n  switch-swe run --config data/demo/pipeline.yaml --from split")
    .action(exit.act(async (opts) => runWithConfig(io, opts.config, { force: opts.force, keepGoing: opts.keepGoing, from: opts.from, only: opts.only }, Boolean(opts.quiet), overridesFrom(opts, BUILT_STAGES))));
}

/** One command per stage (`switch-swe split -c CONFIG` = `run --only split`), with the flags the stage declares. */
export function registerStageCommands(program: Command, io: Io, exit: ExitCode): void {
  for (const stage of orderStages(BUILT_STAGES)) {
    const command = program
      .command(stage.name)
      .description(stage.summary)
      .option("-c, --config <file>", "pipeline config (YAML or JSON)")
      .option("--force", "redo the stage, ignoring caches")
      .option("-q, --quiet", "print only warnings, errors and the summary")
      .addHelpText("after", `\nExample:\n  ${stage.example.split("   |   ").join("\n  ")}`);
    for (const flag of stage.flags ?? []) command.addOption(flagOption(flag, flag.description));
    if (stage.settings?.includes("execution")) command.addOption(executorOption("docker, local, auto (Docker when an engine answers), or queue (workers on other hosts)")).addOption(redisOption()).option("--jobs <n>", "tasks worked on at once", (v) => Number(v));
    if (stage.name === "split") splitByHand.addOptions(command);
    if (stage.name === "qualify") qualifyTaskCommand.addOptions(command);
    command.action(
      exit.act(async (opts) => {
        if (stage.name === "split" && opts.diff) return splitByHand.run(io, opts);
        if (stage.name === "qualify" && opts.task) return qualifyTaskCommand.run(io, opts);
        if (!opts.config) throw new UsageError(`'${stage.name}' needs --config FILE${stage.name === "split" ? " (or --diff FILE)" : stage.name === "qualify" ? " (or --task FILE)" : ""}`);
        return runWithConfig(io, opts.config, { only: stage.name, force: opts.force }, Boolean(opts.quiet), overridesFrom(opts, [stage]));
      }),
    );
  }
}
