import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { DEBIAN_FOR_PYTHON } from "../executors/docker.ts";
import { type LintFinding, type LintRecord, lintProfile } from "./lint.ts";
import { PypiIndex } from "./pypi.ts";
import { InputError } from "../validation.ts";
import { readProfile } from "./load.ts";

/** The profiles a command names: files, or every `*.json` of a directory. */
export function profileFiles(paths: string[]): string[] {
  return paths.flatMap((path) =>
    statSync(path).isDirectory()
      ? readdirSync(path)
          .filter((f) => f.endsWith(".json"))
          .sort()
          .map((f) => join(path, f))
      : [path],
  );
}

/** Records of SWE-bench-family files (JSON Lines), for the eras and dates they give; a bad line names its file and line. */
export function readLintRecords(files: string[]): LintRecord[] {
  return files.flatMap((file) =>
    readFileSync(file, "utf8")
      .split("\n")
      .flatMap((line, index) => {
        if (!line.trim()) return [];
        try {
          const r = JSON.parse(line) as Record<string, unknown>;
          if (typeof r.instance_id !== "string" || typeof r.repo !== "string") throw new Error("no instance_id or repo");
          return [
            {
              instance_id: r.instance_id,
              repo: r.repo,
              ...(typeof r.version === "string" ? { version: r.version } : {}),
              ...(typeof r.created_at === "string" ? { created_at: r.created_at } : {}),
            },
          ];
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
