import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The project's shared data beside the clone (../shared/data): SWE-bench records, annotations, git bundles. */
export const SHARED_DATA = fileURLToPath(new URL("../../../shared/data/", import.meta.url));

/**
 * Whether the tests that read `path` of the shared data can run. On a developer machine without
 * it they skip; in CI (CI=true) a missing one is an error, so they can never be skipped there.
 */
export function sharedDataForTests(path: string): boolean {
  const there = existsSync(path);
  if (!there && process.env.CI) throw new Error(`CI=true but ${path} is missing: the tests that read it must run in CI`);
  return there;
}

/** The fields of a SWE-bench Lite record the audit's tests read. */
export interface SharedRecord {
  instance_id: string;
  base_commit: string;
  patch: string;
  test_patch: string;
  problem_statement: string;
  FAIL_TO_PASS: string;
}

/** Every record of the shared SWE-bench Lite files (test half and dev), by instance id. */
export function sharedRecords(): Map<string, SharedRecord> {
  const records = new Map<string, SharedRecord>();
  for (const file of ["swebench-lite-test-half.jsonl", "swebench-lite-dev.jsonl"])
    for (const line of readFileSync(join(SHARED_DATA, file), "utf8").split("\n").filter(Boolean)) {
      const record = JSON.parse(line) as SharedRecord;
      records.set(record.instance_id, record);
    }
  return records;
}

/** A record of a SWE-bench file, whole (every field it has), found by its instance id. */
export const wholeRecord = (file: string, id: string) =>
  JSON.parse(
    readFileSync(file, "utf8")
      .split("\n")
      .find((l) => l.includes(`"${id}"`))!,
  ) as Record<string, string>;
