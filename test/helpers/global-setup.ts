import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** A directory for this test run alone, shared by its test files (test/helpers/demo-run.ts). */
    sharedRunDir: string;
  }
}

/** One directory per test run for what its files share; removed when the run ends. */
export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), "switch-swe-test-run-"));
  project.provide("sharedRunDir", dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
