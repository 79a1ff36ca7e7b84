import { BUILT_STAGES } from "../stages/index.ts";
import type { Command } from "commander";
import { createLogger } from "../pipeline/logger.ts";
import { RecordError } from "../pipeline/engine/stage.ts";
import { CommitNotInSource, GitError } from "../pipeline/git.ts";
import { type Io, requirePath, RunFailed } from "./io.ts";

import { formatByHand, qualifyByHand } from "../stages/qualify/by-hand.ts";

/** `switch-swe qualify --task FILE`: the by-hand mode of the qualify command. */
export const qualifyTaskCommand = {
  stage: "qualify",
  trigger: "task",
  usage: "--task FILE",
  addOptions(command: Command): void {
    command
      .option(
        "--task <id|file>",
        "qualify one task by hand: with --config a task id (its recipe and as-of date exactly as the stage resolves them), else a split record file (one line of artifacts/split/splits.jsonl)",
      )
      .option("--profile <file>", "with --task FILE: the repository profile (default data/repos/OWNER__NAME.json)")
      .option("--version <v>", "with --task FILE: the task's SWE-bench version, for the profile's version overrides")
      .option("--work-dir <dir>", "with --task: where environments and mirrors go", ".switch-swe/qualify")
      .option("--as-of <date>", "with --task FILE: resolve dependencies as of this date")
      .option("--full-suite", "with --task: run the whole suite, not only the touched test files")
      .option("--json", "with --task: print the result as JSON");
  },
  async run(io: Io, opts: Record<string, any>): Promise<number> {
    if (!opts.config) requirePath("--task", opts.task, "file");
    requirePath("--profile", opts.profile, "file");
    let result;
    try {
      result = await qualifyByHand({
        stages: BUILT_STAGES,
        task: opts.task,
        config: opts.config,
        profile: opts.profile,
        executor: opts.executor,
        runs: opts.runs ?? 3,
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
      if (error instanceof GitError || error instanceof CommitNotInSource) throw new RunFailed(`${opts.task}: ${error.message}`);
      throw error;
    }
    io.out(opts.json ? JSON.stringify(result, null, 2) + "\n" : formatByHand(result));
    return result.kept ? 0 : 1;
  },
};
