import { parseJunitReport } from "../domain/junit.ts";
import type { TestStatus } from "../schemas/common.ts";

/** What the guarded runner (runner.py) writes when the session ends. */
interface GuardRecord {
  finished: boolean;
  exitstatus: number;
  tampering: string[];
  outcomes: Record<string, Partial<Record<"setup" | "call" | "teardown", string>>>;
}

/** One test's status from the runner's per-phase record: every phase must pass for "passed". */
export function statusFromPhases(phases: Partial<Record<"setup" | "call" | "teardown", string>> | undefined): TestStatus {
  if (!phases) return "absent";
  const { setup, call, teardown } = phases;
  if (setup === "failed" || teardown === "failed") return "error";
  if (setup === "skipped") return "skipped";
  if (call === "failed") return "failed";
  if (call === "xfailed" || call === "xpassed" || call === "skipped") return call;
  if (setup === "passed" && call === "passed" && teardown === "passed") return "passed";
  return "absent";
}

export interface GradedRun {
  tests: Record<string, TestStatus>;
  integrityProblems: string[];
}

/**
 * The status of every required test in one verifier run (SPEC §3). A test passes only when the
 * JUnit report, written outside the checkout, says so and the runner's own record agrees; a test
 * neither reports is absent; a run cut off by its timeout leaves its unreported tests "timeout".
 * Nothing printed on the console is ever read.
 */
export function gradeRun(required: readonly string[], run: { junitXml?: string; guardJson?: string; timedOut: boolean; exitCode: number }): GradedRun {
  const junit = new Map((run.junitXml ? parseJunitReport(run.junitXml).results : []).map((r) => [r.nodeId, r.status as TestStatus]));
  const integrityProblems: string[] = [];
  let guard: GuardRecord | undefined;
  if (run.guardJson) {
    try {
      guard = JSON.parse(run.guardJson) as GuardRecord;
    } catch {
      integrityProblems.push("the runner's record of the session is not valid JSON");
    }
  }
  if (!run.timedOut && (!guard || guard.finished !== true)) {
    integrityProblems.push(`the test session ended before pytest finished it (exit code ${run.exitCode}); its results cannot be confirmed`);
  }
  for (const entry of guard?.tampering ?? []) integrityProblems.push(`tampering: ${entry}`);
  const tests: Record<string, TestStatus> = {};
  for (const test of [...required].sort()) {
    const reported = junit.get(test) ?? (run.timedOut ? "timeout" : "absent");
    if (reported === "passed" && guard) {
      const recorded = statusFromPhases(guard.outcomes?.[test]);
      if (recorded !== "passed") {
        integrityProblems.push(`${test}: the JUnit report says passed, the runner's own record says ${recorded}`);
        tests[test] = recorded;
        continue;
      }
    }
    tests[test] = reported;
  }
  return { tests, integrityProblems };
}

/** SPEC §3: applied, nothing undermines the run, and every required test was collected, executed and passed. */
export function isResolved(applied: boolean, graded: GradedRun | undefined): boolean {
  return applied && graded !== undefined && graded.integrityProblems.length === 0 && Object.keys(graded.tests).length > 0 && Object.values(graded.tests).every((s) => s === "passed");
}
