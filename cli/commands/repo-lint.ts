import { statSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { createLogger } from "../../pipeline/logger.ts";
import { LINT_RULES } from "../../pipeline/profiles/lint.ts";

import { type ExitCode, type Io, requirePath } from "../io.ts";
import { formatFindings, lintProfiles, profileFiles, readLintRecords } from "../../pipeline/profiles/lint-files.ts";

export function registerRepoLint(repo: Command, io: Io, exit: ExitCode): void {
  repo
    .command("lint")
    .description(
      "refuse every contradiction a profile shows without a build: pins against the build tools or each other, Pythons no executor offers offline, overrides that never apply, requirements with no release as of their era",
    )
    .argument("[profiles...]", "profile files or directories of them", ["data/repos"])
    .option("--tasks <file...>", "SWE-bench-family records (JSON Lines): their eras and dates")
    .option("--pypi <url>", "PyPI's JSON API", "https://pypi.org/pypi")
    .option("--cache <dir>", "where PyPI's answers are kept between runs", ".switch-swe/pypi")
    .addHelpText(
      "after",
      `\nRules:\n${Object.entries(LINT_RULES)
        .map(([rule, meaning]) => `  ${rule}: ${meaning}`)
        .join("\n")}\n\nExample:\n  switch-swe repo lint data/repos --tasks ../shared/data/swebench-lite-dev.jsonl`,
    )
    .action(
      exit.act(async (profiles: string[], opts) => {
        for (const p of profiles) requirePath("<profiles>", p, statSync(p, { throwIfNoEntry: false })?.isDirectory() ? "directory" : "file");
        for (const t of opts.tasks ?? []) requirePath("--tasks", t, "file");
        const log = createLogger({ write: (line) => io.err(line + "\n") });
        const findings = await lintProfiles(profiles, { records: readLintRecords(opts.tasks ?? []), pypiUrl: opts.pypi, cacheDir: resolve(opts.cache) });
        io.out(formatFindings(findings));
        const files = profileFiles(profiles).length;
        log.info(`${files} profile(s) linted: ${findings.length ? `${findings.length} finding(s)` : "no finding"}`);
        return findings.length ? 1 : 0;
      }),
    );
}
