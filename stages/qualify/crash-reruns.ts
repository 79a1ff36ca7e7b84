import type { TestStatus } from "../../pipeline/schemas/common.ts";
import type { TestRunResult } from "../../pipeline/executors/types.ts";
import type { TestRunner } from "../../pipeline/schemas/repo-profile.ts";
import { parseJunitReport } from "../../pipeline/test-results/junit.ts";

/**
 * A run that crashed the test runner (pytest's INTERNALERROR, or a crash at collection that leaves
 * no report) says nothing about the tests it did not reach; often the crash is the very bug the
 * task fixes (a repr that raises inside pytest's own reporting). SWE-bench counts those tests as
 * failing in that state. So a crashed run is run again in parts: each designated file alone, then,
 * in a file that still crashes, each test the other runs know of alone. A test whose own run
 * crashes is failing in that state, with the reason kept; a file whose tests nobody knows stays
 * a crash, and its tests another run reports are failing here too.
 */

/** What crashed and why: a file or a single test id. */
export interface Crash {
  target: string;
  reason: string;
}

/** Why a run crashed the runner (not a usage error, which re-running in parts cannot mend), or undefined. */
export function runnerCrash(runner: TestRunner, result: TestRunResult): string | undefined {
  if (runner === "django") return undefined;
  if (result.exitCode === 3) return "ended in a pytest INTERNALERROR";
  if (!result.junitXml && result.exitCode !== 4) return `wrote no JUnit report (exit ${result.exitCode})`;
  return undefined;
}

/** The file part of a test id (`path/test_x.py::Class::test[case]` → `path/test_x.py`). */
export const fileOfTest = (id: string): string => id.split("::")[0]!;

/** Per-test runs of one crashed file are capped: beyond this many, its other tests stay a file crash. */
export const MAX_TESTS_PER_CRASHED_FILE = 200;

export interface PartRuns {
  /** Runs the given test arguments (files or ids) once in the crashed run's checkout. */
  run: (tests: string[]) => Promise<TestRunResult>;
  runner: TestRunner;
  python: string;
}

/**
 * Re-runs a crashed run's designated files one by one, and each known test of a file that still
 * crashes one by one. `known` is every test id another run of the task reported.
 */
export async function rerunInParts(
  files: string[],
  known: readonly string[],
  parts: PartRuns,
): Promise<{ outcomes: Record<string, TestStatus>; crashes: Crash[] }> {
  const outcomes: Record<string, TestStatus> = {};
  const crashes: Crash[] = [];
  const read = (result: TestRunResult) => {
    for (const r of parseJunitReport(result.junitXml!, { runner: parts.runner, python: parts.python }).results) outcomes[r.nodeId] = r.status;
  };
  for (const file of files) {
    const whole = await parts.run([file]);
    const crash = runnerCrash(parts.runner, whole);
    if (!crash) {
      if (whole.junitXml) read(whole);
      continue;
    }
    const tests = known.filter((id) => fileOfTest(id) === file).slice(0, MAX_TESTS_PER_CRASHED_FILE);
    if (!tests.length) {
      crashes.push({ target: file, reason: crash });
      continue;
    }
    for (const test of tests) {
      const alone = await parts.run([test]);
      const own = runnerCrash(parts.runner, alone);
      if (own) {
        outcomes[test] = "failed";
        crashes.push({ target: test, reason: own });
      } else if (alone.junitXml) read(alone);
    }
    const left = known.filter((id) => fileOfTest(id) === file).length - tests.length;
    if (left > 0) crashes.push({ target: file, reason: `${crash}; ${left} of its tests beyond the first ${MAX_TESTS_PER_CRASHED_FILE} were not run alone` });
  }
  return { outcomes, crashes };
}

/**
 * The status of a test a run did not report: failing when that run crashed on the test's file (or
 * on the test), absent otherwise.
 */
export function unreportedStatus(test: string, crashes: readonly Crash[] | undefined): TestStatus {
  if (!crashes?.length) return "absent";
  return crashes.some((c) => c.target === test || c.target === fileOfTest(test)) ? "failed" : "absent";
}
