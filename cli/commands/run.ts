import { Command } from "commander";
import { BUILT_STAGES } from "../../stages/index.ts";
import { orderStages } from "../../pipeline/engine/engine.ts";
import { type ExitCode, type Io, UsageError } from "../io.ts";
import { positiveWholeNumber } from "../numeric-options.ts";
import { executorOption, gitServiceOption, MIRRORS_HELP, redisOption } from "../execution-options.ts";
import { flagOption, overridesFrom, runWithConfig, stageFlags, stageOption } from "../run-config.ts";

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
    .addOption(gitServiceOption())
    .option("--jobs <n>", "tasks worked on at once", positiveWholeNumber)
    .option("--mirrors <dir>", MIRRORS_HELP);
  for (const flag of stageFlags(BUILT_STAGES)) run.addOption(flagOption(flag, `${flag.stage}: ${flag.description}`));
  run
    .addHelpText("after", "\nExample:\n  switch-swe run --config data/demo/pipeline.yaml\n  switch-swe run --config data/demo/pipeline.yaml --from split")
    .action(
      exit.act(async (opts) =>
        runWithConfig(
          io,
          opts.config,
          { force: opts.force, keepGoing: opts.keepGoing, from: opts.from, only: opts.only },
          Boolean(opts.quiet),
          overridesFrom(opts, BUILT_STAGES),
        ),
      ),
    );
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
    if (stage.settings?.includes("execution"))
      command
        .addOption(executorOption("docker, local, auto (Docker when an engine answers), or queue (workers on other hosts)"))
        .addOption(redisOption())
        .addOption(gitServiceOption())
        .option("--jobs <n>", "tasks worked on at once", positiveWholeNumber);
    command.option("--mirrors <dir>", MIRRORS_HELP);
    command.action(
      exit.act(async (opts) => {
        // The commands of its own registered under it since (`split diff`, `audit rules`) are the other ways to call it.
        const others = command.commands.map((c) => c.name());
        if (!opts.config) throw new UsageError(`'${stage.name}' needs --config FILE${others.length ? ` (or one of its commands: ${others.join(", ")})` : ""}`);
        return runWithConfig(io, opts.config, { only: stage.name, force: opts.force }, Boolean(opts.quiet), overridesFrom(opts, [stage]));
      }),
    );
  }
}
