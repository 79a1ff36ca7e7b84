import type { RejectReason, TestStatus } from "../schemas/common.ts";

export type RunOutcomes = Record<string, TestStatus>;

export interface TestSets {
  designated: string[];
  failToPass: string[];
  passToPass: string[];
  passToFail: string[];
  failToFail: string[];
  unstable: string[];
}

/** Only a test that was collected, executed and passed passes; every other status does not. */
export const passes = (status: TestStatus | undefined): boolean => status === "passed";

/**
 * Derives SPEC §2.3's sets from every run of both states. A test is stable in a state when all
 * its runs there agree on passing or not (a test missing from a run did not pass in it); a test
 * unstable in either state belongs to no set.
 */
export function classifyTests(before: RunOutcomes[], after: RunOutcomes[]): TestSets {
  const designated = [...new Set([...before, ...after].flatMap((run) => Object.keys(run)))].sort();
  const sets: TestSets = { designated, failToPass: [], passToPass: [], passToFail: [], failToFail: [], unstable: [] };
  const stable = (runs: RunOutcomes[], test: string): boolean | undefined => {
    const outcomes = new Set(runs.map((run) => passes(run[test])));
    return outcomes.size === 1 ? [...outcomes][0] : undefined;
  };
  for (const test of designated) {
    const b = stable(before, test);
    const a = stable(after, test);
    if (b === undefined || a === undefined) sets.unstable.push(test);
    else if (!b && a) sets.failToPass.push(test);
    else if (b && a) sets.passToPass.push(test);
    else if (b && !a) sets.passToFail.push(test);
    else sets.failToFail.push(test);
  }
  return sets;
}

/**
 * SPEC §2.3's keep rule: at least one stable F2P test, at least one P2P test, and no regression.
 * The first failing condition names the reject.
 */
export function keepDecision(sets: TestSets): { kept: true } | { kept: false; reason: RejectReason; detail: string } {
  if (sets.passToFail.length)
    return { kept: false, reason: "regression", detail: `tests that passed before the fix fail after it: ${sets.passToFail.join(", ")}` };
  if (!sets.failToPass.length) {
    const unstable = sets.unstable.length ? ` (${sets.unstable.length} unstable: ${sets.unstable.join(", ")})` : "";
    return sets.unstable.length && !sets.passToPass.length && !sets.failToFail.length
      ? { kept: false, reason: "all_unstable", detail: `every designated test is unstable${unstable}` }
      : { kept: false, reason: "no_fail_to_pass", detail: `no test fails before the fix and passes after it in every run${unstable}` };
  }
  if (!sets.passToPass.length) return { kept: false, reason: "no_pass_to_pass", detail: "no designated test passes both before and after the fix" };
  return { kept: true };
}
