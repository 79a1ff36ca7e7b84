import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { splitFields, splitReferenceChange } from "../stages/split/split.ts";
import { DiffParseError } from "../pipeline/changes/diff.ts";
import { loadProfiles } from "../pipeline/profiles/load.ts";
import { ClassificationRules } from "../pipeline/schemas/repo-profile.ts";
import { type Io, requirePath, UsageError } from "./io.ts";

/** `switch-swe split --diff FILE`: splits one diff by hand, with a profile's rules or the defaults. */
export const splitByHand = {
  stage: "split",
  trigger: "diff",
  usage: "--diff FILE",
  addOptions(command: Command): void {
    command
      .option("--diff <file>", "split one git diff by hand instead of running the stage")
      .option("--profile <file>", "repository profile whose classification rules to use (default rules otherwise)")
      .option("--json", "print the result as JSON");
  },
  run(io: Io, opts: { diff: string; profile?: string; json?: boolean }): number {
    requirePath("--diff", opts.diff, "file");
    requirePath("--profile", opts.profile, "file");
    let rules = ClassificationRules.parse({});
    if (opts.profile) {
      const { profiles, errors } = loadProfiles([{ path: opts.profile, text: readFileSync(opts.profile, "utf8") }]);
      const first = [...profiles.values()][0];
      if (!first) throw new UsageError([...errors.values()][0] ?? `${opts.profile}: not a repository profile`);
      rules = first.profile.classification;
    }
    let result;
    try {
      result = splitReferenceChange(readFileSync(opts.diff, "utf8"), rules);
    } catch (error) {
      if (error instanceof DiffParseError) throw new UsageError(`${opts.diff}: ${error.message}`);
      throw error;
    }
    if (opts.json) io.out(JSON.stringify(splitFields(result), null, 2) + "\n");
    else {
      for (const f of result.files)
        io.out(`${f.class.padEnd(7)} ${f.status.padEnd(12)} ${f.old_path !== f.path ? `${f.old_path} -> ` : ""}${f.path}  (${f.rule})\n`);
      io.out(`C_t: ${result.sourceFiles.join(", ") || "(empty)"}\nD_t: ${result.sourceDirs.join(", ") || "(empty)"}\n`);
    }
    return 0;
  },
};
