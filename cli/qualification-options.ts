import { wholeNumber } from "./numeric-options.ts";
import type { Command } from "commander";
import type { ExecutorChoice } from "../pipeline/engine/settings.ts";

import { executorOption, gitServiceOption, redisOption } from "./execution-options.ts";

/**
 * The options every command that qualifies a SWE-bench-family file's tasks takes (fidelity,
 * requalify, repo check): where the work goes, the executor, how many at once, which tasks,
 * and bundles to clone from.
 */
export function qualificationOptions(command: Command, workDir: string, options: { profiles?: boolean; tasks?: boolean } = {}): Command {
  if (options.profiles !== false) command.option("--profiles <dir>", "repository profiles", "data/repos");
  command
    .option("--work-dir <dir>", "where environments, mirrors and artifacts go (kept between runs)", workDir)
    .addOption(executorOption("docker, local, auto, or queue (workers on other hosts, running the Docker executor)").default("auto"))
    .addOption(redisOption())
    .addOption(gitServiceOption())
    .option("--jobs <n>", "tasks worked on at once (0: one per core)", wholeNumber(0), 0)
    .option("--mirrors <dir>", "clone from OWNER__NAME.bundle, OWNER__NAME.git or OWNER__NAME (a clone) in this directory instead of the profiles' clone_url")
    .option(
      "--python-downloads <when>",
      "use uv-managed Python downloads for versions the executor has no interpreter of: auto (if reachable), yes, no",
      "auto",
    );
  if (options.tasks !== false) command.option("--task <id...>", "only these tasks of the file");
  return command;
}

/** What qualificationOptions (and `--runs`) parsed, in the names the library's qualification commands take. */
export function qualificationSettings(opts: Record<string, unknown>) {
  return {
    profilesDir: opts.profiles as string,
    workDir: opts.workDir as string,
    executor: opts.executor as ExecutorChoice,
    redis: opts.redis as string | undefined,
    gitService: opts.gitService as string | undefined,
    runs: opts.runs as number,
    jobs: opts.jobs as number,
    tasks: opts.task as string[] | undefined,
    mirrors: opts.mirrors as string | undefined,
    pythonDownloads: opts.pythonDownloads as "auto" | "yes" | "no",
  };
}
