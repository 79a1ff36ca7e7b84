import type { TestStatus } from "../schemas/common.ts";
import type { TestRunResult } from "../executors/types.ts";
import type { TestRunner } from "../schemas/repo-profile.ts";
import { parseJunitReport } from "../test-results/junit.ts";

/**
 * A run that crashed the test runner (pytest's INTERNALERROR, or a crash at collection that leaves
 * no report) says nothing about the tests it did not reach; often the crash is the very bug the
 * task fixes (a repr that raises inside pytest's own reporting). SWE-bench counts those tests as
 * failing in that state. So a crashed run is run again in parts: each designated file alone, then,
 * in a file that still crashes, the tests the other runs know of, halved until the parts that do
 * not crash have their outcomes and each test that does is alone (a few runs per crashing test,
 * not one per test). A test whose own run crashes is failing in that state, with the reason kept;
 * a file whose tests nobody knows stays a crash, and its tests another run reports are failing
 * here too.
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

/** Runs spent halving one crashed file are capped: what is left unsettled then stays a file crash. */
export const MAX_RUNS_PER_CRASHED_FILE = 64;

export interface PartRuns {
  /** Runs the given test arguments (files or ids) once in the crashed run's checkout. */
  run: (tests: string[]) => Promise<TestRunResult>;
  runner: TestRunner;
  python: string;
}

/**
 * Re-runs a crashed run's designated files one by one, and the known tests of a file that still
 * crashes in halves. `known` is every test id another run of the task reported.
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
    const tests = known.filter((id) => fileOfTest(id) === file);
    if (!tests.length) {
      crashes.push({ target: file, reason: crash });
      continue;
    }
    // Halving: a part that runs whole gives its outcomes; a crashing part is split; a crashing test alone fails.
    let budget = MAX_RUNS_PER_CRASHED_FILE;
    let unsettled = 0;
    const settle = async (part: string[]): Promise<void> => {
      if (budget <= 0) {
        unsettled += part.length;
        return;
      }
      budget--;
      const result = await parts.run(part);
      const own = runnerCrash(parts.runner, result);
      if (!own) {
        if (result.junitXml) read(result);
        return;
      }
      if (part.length === 1) {
        outcomes[part[0]!] = "failed";
        crashes.push({ target: part[0]!, reason: own });
        return;
      }
      const half = Math.ceil(part.length / 2);
      await settle(part.slice(0, half));
      await settle(part.slice(half));
    };
    const half = Math.ceil(tests.length / 2);
    // The whole file already crashed: its halves first.
    if (tests.length === 1) await settle(tests);
    else {
      await settle(tests.slice(0, half));
      await settle(tests.slice(half));
    }
    if (unsettled) crashes.push({ target: file, reason: `${crash}; ${unsettled} of its tests were left unsettled after ${MAX_RUNS_PER_CRASHED_FILE} runs` });
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
