import { existsSync } from "node:fs";
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
