import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach } from "vitest";

const perTest: string[] = [];
const perFile: string[] = [];

/** A fresh temporary directory, removed after the test. */
export function tempDir(prefix = "switch-swe-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  perTest.push(dir);
  return dir;
}

/** A temporary directory for a whole test file (made in beforeAll), removed after its last test. */
export function fileTempDir(prefix = "switch-swe-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  perFile.push(dir);
  return dir;
}

afterEach(() => {
  while (perTest.length) rmSync(perTest.pop()!, { recursive: true, force: true });
});

afterAll(() => {
  while (perFile.length) rmSync(perFile.pop()!, { recursive: true, force: true });
});
