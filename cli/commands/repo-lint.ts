import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { DEBIAN_FOR_PYTHON } from "../../pipeline/executors/docker.ts";
import { createLogger } from "../../pipeline/logger.ts";
import { LINT_RULES, type LintFinding, type LintRecord, lintProfile } from "../../pipeline/profiles/lint.ts";
import { PypiIndex } from "../../pipeline/profiles/pypi.ts";
import { InputError } from "../../pipeline/validation.ts";
import { type ExitCode, type Io, requirePath } from "../io.ts";
import { readProfile } from "./repo-check.ts";

/** The profiles a command names: files, or every `*.json` of a directory. */
function profileFiles(paths: string[]): string[] {
  return paths.flatMap((path) => (statSync(path).isDirectory() ? readdirSync(path).filter((f) => f.endsWith(".json")).sort().map((f) => join(path, f)) : [path]));
}

/** Records of SWE-bench-family files (JSON Lines), for the eras and dates they give; a bad line names its file and line. */
export function readLintRecords(files: string[]): LintRecord[] {
  return files.flatMap((file) =>
    readFileSync(file, "utf8").split("\n").flatMap((line, index) => {
      if (!line.trim()) return [];
      try {
        const r = JSON.parse(line) as Record<string, unknown>;
        if (typeof r.instance_id !== "string" || typeof r.repo !== "string") throw new Error("no instance_id or repo");
        return [{ instance_id: r.instance_id, repo: r.repo, ...(typeof r.version === "string" ? { version: r.version } : {}), ...(typeof r.created_at === "string" ? { created_at: r.created_at } : {}) }];
      } catch (error) {
        throw new InputError(`${file}: line ${index + 1}: not a SWE-bench record (${(error as Error).message})`);
      }
    }),
  );
}

export async function lintProfiles(paths: string[], options: { records: LintRecord[]; pypiUrl: string; cacheDir: string }): Promise<LintFinding[]> {
  const pypi = new PypiIndex({ url: options.pypiUrl, cacheDir: options.cacheDir });
  const findings: LintFinding[] = [];
  for (const file of profileFiles(paths)) {
    findings.push(...(await lintProfile(file, readProfile(file), { offered: Object.keys(DEBIAN_FOR_PYTHON), pypi, records: options.records })));
  }
  return findings;
}

export const formatFindings = (findings: LintFinding[]): string => findings.map((f) => `${f.file}: ${f.field}: ${f.message} [${f.rule}]\n`).join("");

export function registerRepoLint(repo: Command, io: Io, exit: ExitCode): void {
  repo
    .command("lint")
    .description("refuse every contradiction a profile shows without a build: pins against the build tools or each other, Pythons no executor offers offline, overrides that never apply, requirements with no release as of their era")
    .argument("[profiles...]", "profile files or directories of them", ["data/repos"])
    .option("--tasks <file...>", "SWE-bench-family records (JSON Lines): their eras and dates")
    .option("--pypi <url>", "PyPI's JSON API", "https://pypi.org/pypi")
    .option("--cache <dir>", "where PyPI's answers are kept between runs", ".switch-swe/pypi")
    .addHelpText("after", `\nRules:\n${Object.entries(LINT_RULES).map(([rule, meaning]) => `  ${rule}: ${meaning}`).join("\n")}\n\nExample:\n  switch-swe repo lint data/repos --tasks ../shared/data/swebench-lite-dev.jsonl`)
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
