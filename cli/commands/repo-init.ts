import type { Command } from "commander";
import { type ExitCode, type Io, requirePath } from "../io.ts";

import { draftProfile, readDraftTasks } from "../../pipeline/profiles/draft.ts";

/** `switch-swe repo init`, under the `repo` command. */
export function registerRepoInit(repo: Command, io: Io, exit: ExitCode): void {
  repo
    .command("init")
    .description("write a draft repository profile by inspecting a clone, for a maintainer to review")
    .argument("<owner/name>", "the repository, as GitHub spells it")
    .requiredOption("--clone <path>", "a local clone (or checkout) of the repository")
    .option("--out <file>", "where to write the profile (default data/repos/OWNER__NAME.json)")
    .option("--force", "overwrite an existing profile")
    .option("--tasks <file>", "SWE-bench records or split records (JSON Lines): draft from their base revisions, one recipe per era")
    .addHelpText(
      "after",
      "\nExample:\n  switch-swe repo init psf/requests --clone ~/src/requests\n  switch-swe repo init psf/requests --clone ~/src/requests --tasks requests-tasks.jsonl",
    )
    .action(
      exit.act(async (repoName: string, opts) => {
        requirePath("--clone", opts.clone, "directory");
        requirePath("--tasks", opts.tasks, "file");
        const tasks = opts.tasks
          ? readDraftTasks(opts.tasks).filter((t) => !t.id.includes("__") || t.id.startsWith(repoName.replace("/", "__") + "-"))
          : undefined;
        const result = await draftProfile(repoName, opts.clone, { out: opts.out, force: Boolean(opts.force), tasks });
        io.out(`wrote ${result.path}\n${result.notes.map((n: string) => `  review: ${n}\n`).join("")}`);
        return 0;
      }),
    );
}
