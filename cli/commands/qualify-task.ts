import { BUILT_STAGES } from "../../stages/index.ts";
import { type Command, Option } from "commander";
import { createLogger } from "../../pipeline/logger.ts";
import { RecordError } from "../../pipeline/engine/stage.ts";
import { CommitNotInSource, GitError } from "../../pipeline/git.ts";
import { formatByHand, qualifyByHand } from "../../stages/qualify/by-hand.ts";
import { MIRRORS_HELP } from "../execution-options.ts";
import { type ExitCode, type Io, requirePath, RunFailed } from "../io.ts";
import { positiveWholeNumber } from "../numeric-options.ts";
import { movedOption, stageCommand } from "../subcommands.ts";

interface QualifyTaskFlags {
  config?: string;
  profile?: string;
  version?: string;
  executor?: "auto" | "docker" | "local";
  runs: number;
  workDir: string;
  asOf?: string;
  fullSuite?: boolean;
  mirrors?: string;
  json?: boolean;
}

/** Qualifies the task; what is wrong with the task or its repository, not with switch-swe, is said as a failed run. */
async function qualify(task: string, opts: QualifyTaskFlags, io: Io) {
  try {
    return await qualifyByHand({
      stages: BUILT_STAGES,
      task,
      config: opts.config,
      profile: opts.profile,
      executor: opts.executor,
      runs: opts.runs,
      workDir: opts.workDir,
      asOf: opts.asOf,
      version: opts.version,
      fullSuite: Boolean(opts.fullSuite),
      mirrors: opts.mirrors,
      log: createLogger({ level: opts.json ? "warn" : "info", write: (line) => io.err(line + "\n") }),
    });
  } catch (error) {
    // The task itself could not be qualified (its environment does not build, a patch does not apply).
    if (error instanceof RecordError) throw new RunFailed(error.message);
    // Its repository could not be had (no network, a source without the commit): a fact to say, not a bug.
    if (error instanceof GitError || error instanceof CommitNotInSource) throw new RunFailed(`${task}: ${error.message}`);
    throw error;
  }
}

/** `switch-swe qualify task ID|FILE`: one task qualified by hand, every test's status in every run. */
export function registerQualifyTask(program: Command, io: Io, exit: ExitCode): void {
  const stage = stageCommand(program, "qualify");
  stage
    .command("task")
    .description("qualify one task by hand and print every test's status in every run, and the sets")
    .argument(
      "<task>",
      "with --config a task id (its recipe and as-of date exactly as the stage resolves them), else a split record file (one line of artifacts/split/splits.jsonl)",
    )
    .option("-c, --config <file>", "the pipeline config whose task this is")
    .option("--profile <file>", "with a split record file: the repository profile (default data/repos/OWNER__NAME.json)")
    .option("--version <v>", "with a split record file: the task's SWE-bench version, for the profile's version overrides (default: the record's)")
    .option(
      "--as-of <date>",
      "with a split record file: resolve dependencies as of this date (default: the record's created_at, or the recipe's as_of_not_before if later)",
    )
    .addOption(
      new Option("--executor <kind>", "docker, local, or auto (Docker when an engine answers); default: the config's, else auto").choices([
        "docker",
        "local",
        "auto",
      ]),
    )
    .option("--runs <n>", "runs of each state", positiveWholeNumber, 3)
    .option("--work-dir <dir>", "where environments and mirrors go", ".switch-swe/qualify")
    .option("--full-suite", "run the whole suite, not only the touched test files")
    .option("--mirrors <dir>", MIRRORS_HELP)
    .option("--json", "print the result as JSON")
    .addHelpText(
      "after",
      "\nExample:\n  switch-swe qualify task demo-org__geometry-3 --config data/demo/pipeline.yaml --runs 3\n  switch-swe qualify task split.json --profile data/repos/o__n.json --executor docker --json",
    )
    .action(
      exit.act(async (task: string, opts: QualifyTaskFlags) => {
        if (!opts.config) requirePath("<task>", task, "file");
        requirePath("--config", opts.config, "file");
        requirePath("--profile", opts.profile, "file");
        const result = await qualify(task, opts, io);
        io.out(opts.json ? JSON.stringify(result, null, 2) + "\n" : formatByHand(result));
        return result.kept ? 0 : 1;
      }),
    );
  movedOption(stage, "--task", "switch-swe qualify task ID|FILE [--config F]");
}
