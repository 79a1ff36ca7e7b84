import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { splitFields, splitReferenceChange } from "../../stages/split/split.ts";
import { DiffParseError } from "../../pipeline/changes/diff.ts";
import { loadProfiles } from "../../pipeline/profiles/load.ts";
import { ClassificationRules } from "../../pipeline/schemas/repo-profile.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "../io.ts";
import { movedOption, stageCommand } from "../subcommands.ts";

/** The classification rules of a profile file, or the defaults without one. */
function rulesOf(profile: string | undefined): ClassificationRules {
  if (!profile) return ClassificationRules.parse({});
  const { profiles, errors } = loadProfiles([{ path: profile, text: readFileSync(profile, "utf8") }]);
  const first = [...profiles.values()][0];
  if (!first) throw new UsageError([...errors.values()][0] ?? `${profile}: not a repository profile`);
  return first.profile.classification;
}

/** `switch-swe split diff FILE`: splits one diff by hand, with a profile's rules or the defaults. */
export function registerSplitDiff(program: Command, io: Io, exit: ExitCode): void {
  const split = stageCommand(program, "split");
  split
    .command("diff")
    .description("split one git diff by hand, as the stage splits a reference change: each file's class, then the two patches")
    .argument("<diff>", "the git diff")
    .option("--profile <file>", "repository profile whose classification rules to use (default rules otherwise)")
    .option("--json", "print the result as JSON")
    .addHelpText("after", "\nExample:\n  switch-swe split diff change.diff --profile data/repos/o__n.json --json")
    .action(
      exit.act((diff: string, opts: { profile?: string; json?: boolean }) => {
        requirePath("<diff>", diff, "file");
        requirePath("--profile", opts.profile, "file");
        const rules = rulesOf(opts.profile);
        let result;
        try {
          result = splitReferenceChange(readFileSync(diff, "utf8"), rules);
        } catch (error) {
          if (error instanceof DiffParseError) throw new UsageError(`${diff}: ${error.message}`);
          throw error;
        }
        if (opts.json) io.out(JSON.stringify(splitFields(result), null, 2) + "\n");
        else {
          for (const f of result.files)
            io.out(`${f.class.padEnd(7)} ${f.status.padEnd(12)} ${f.old_path !== f.path ? `${f.old_path} -> ` : ""}${f.path}  (${f.rule})\n`);
          io.out(`C_t: ${result.sourceFiles.join(", ") || "(empty)"}\nD_t: ${result.sourceDirs.join(", ") || "(empty)"}\n`);
        }
        return 0;
      }),
    );
  movedOption(split, "--diff", "switch-swe split diff FILE [--profile F] [--json]");
}
