import type { GuardChannel } from "../executors/guarded.ts";
import type { TestStatus } from "../schemas/common.ts";

type Phase = "setup" | "call" | "teardown";

/** One test's status from the runner's per-phase record: every phase must pass for "passed". */
export function statusFromPhases(phases: Partial<Record<Phase, string>> | undefined): TestStatus {
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
  /** What the runner saw the submission do that is rare in honest fixes (does not change the verdict). */
  suspicious: string[];
  timedOut: boolean;
}

/**
 * The status of every required test in one guarded verifier run (SPEC §3), from the runner's
 * channel alone: no file the test process could write is read. A test passes only when the runner
 * reported each of its phases passed, once. The channel must end with the runner's `finish`
 * record; a line on it without the run's token, a phase reported twice with different outcomes,
 * or any problem the runner found makes the run untrustworthy. A run cut off by its timeout is
 * unresolved whatever it had reported: its unreported tests are "timeout", the rest keep what was
 * seen, but nothing of it counts.
 */
export function gradeRun(required: readonly string[], run: { channel?: GuardChannel; timedOut: boolean; exitCode: number }): GradedRun {
  const integrityProblems: string[] = [];
  const suspicious: string[] = [];
  const phases = new Map<string, Partial<Record<Phase, string>>>();
  const channel = run.timedOut ? undefined : run.channel;
  for (const record of channel?.records ?? []) {
    if (record.kind === "test") {
      const seen = phases.get(record.nodeid) ?? {};
      const previous = seen[record.when];
      if (previous !== undefined && previous !== record.outcome)
        integrityProblems.push(`${record.nodeid}: its ${record.when} was reported twice, ${previous} and then ${record.outcome}`);
      seen[record.when] = previous ?? record.outcome;
      phases.set(record.nodeid, seen);
    } else if (record.kind === "problem") integrityProblems.push(`tampering: ${record.text}`);
    else if (record.kind === "suspicious") suspicious.push(record.text);
    else if (record.kind === "finish") for (const problem of record.problems) integrityProblems.push(`tampering: ${problem}`);
  }
  if (channel?.foreign.length)
    integrityProblems.push(
      `the results channel carried ${channel.foreign.length} line(s) the runner did not write, e.g. ${JSON.stringify(channel.foreign[0])}`,
    );
  if (run.timedOut) integrityProblems.push("the run did not finish within its timeout");
  else if (!channel?.finished)
    integrityProblems.push(`the test session ended before pytest finished it (exit code ${run.exitCode}); its results cannot be confirmed`);
  const tests: Record<string, TestStatus> = {};
  for (const test of [...required].sort()) tests[test] = run.timedOut && !phases.has(test) ? "timeout" : statusFromPhases(phases.get(test));
  return { tests, integrityProblems: [...new Set(integrityProblems)], suspicious: [...new Set(suspicious)].sort(), timedOut: run.timedOut };
}

/** SPEC §3: applied, finished within its timeout, nothing undermines the run, and every required test was collected, executed and passed. */
export function isResolved(applied: boolean, graded: GradedRun | undefined): boolean {
  return (
    applied &&
    graded !== undefined &&
    !graded.timedOut &&
    graded.integrityProblems.length === 0 &&
    Object.keys(graded.tests).length > 0 &&
    Object.values(graded.tests).every((s) => s === "passed")
  );
}
