import { BUILT_STAGES } from "../../stages/index.ts";
import type { Command } from "commander";

import { createLogger } from "../../pipeline/logger.ts";
import { InputError } from "../../pipeline/validation.ts";
import { type ExitCode, type Io, requirePath } from "../io.ts";
import { positiveWholeNumber } from "../numeric-options.ts";
import { qualificationOptions } from "../qualification-options.ts";
import { readProfile } from "../../pipeline/profiles/load.ts";
import { checkProfile, formatProfileCheck, works } from "../../pipeline/fidelity/repo-check.ts";

export function registerRepoCheck(repo: Command, io: Io, exit: ExitCode): void {
  qualificationOptions(
    repo
      .command("check")
      .description("build a profile's environments and qualify a sample of its tasks in each era; print per era what works")
      .argument("<profile>", "the profile file (data/repos/OWNER__NAME.json)")
      .requiredOption("--tasks <file>", "SWE-bench-family records (JSON Lines) of the repository"),
    ".switch-swe/repo-check",
    { profiles: false, tasks: false },
  )
    .option("--sample <n>", "tasks checked per era", positiveWholeNumber, 1)
    .addHelpText(
      "after",
      "\nExample:\n  switch-swe repo check data/repos/pylint-dev__astroid.json --tasks ../shared/data/swebench-lite-dev.jsonl --sample 2 --executor docker",
    )
    .action(
      exit.act(async (profile: string, opts) => {
        requirePath("<profile>", profile, "file");
        requirePath("--tasks", opts.tasks, "file");
        if (!Number.isInteger(opts.sample) || opts.sample < 1)
          throw new InputError(`--sample: expected a whole number of tasks per era, 1 or more (got ${opts.sample})`);
        const log = createLogger({ write: (line) => io.err(line + "\n") });
        const eras = await checkProfile({
          stages: BUILT_STAGES,
          profile,
          tasks: opts.tasks,
          sample: opts.sample,
          workDir: opts.workDir,
          executor: opts.executor,
          redis: opts.redis,
          gitService: opts.gitService,
          jobs: opts.jobs,
          mirrors: opts.mirrors,
          pythonDownloads: opts.pythonDownloads,
          log,
        });
        io.out(formatProfileCheck(readProfile(profile).repo, eras));
        return eras.every((e) => e.sampled.every(works)) ? 0 : 1;
      }),
    );
}
