import type { RejectReason } from "../schemas/common.ts";
import { passes, type RunOutcomes, type TestSets } from "./outcomes.ts";

/** One authored stage as qualify checks it: its place, its file and the tests its patch adds. */
export interface StageToCheck {
  index: number;
  /** Where it is in its file (`stages.0`): what a reject names. */
  field: string;
  file: string;
  /** Declared as `path::name`: a parametrized test is every id of that name with a `[…]` suffix. */
  tests: string[];
}

/** A run of the state after the upstream fix and the first `through` stages (all of them: the whole reference). */
export interface ThroughRun {
  through: number;
  run: number;
  outcomes: RunOutcomes;
}

type Decision = { kept: true; stageTests: { stage: number; tests: string[] }[] } | { kept: false; reason: RejectReason; detail: string };

/** The collected ids of a declared test: itself, or its parametrized instances. */
export function idsOf(declared: string, designated: readonly string[]): string[] {
  return designated.filter((id) => id === declared || id.startsWith(`${declared}[`));
}

const applied = (through: number) => (through === 0 ? "the upstream fix alone" : `the upstream fix and stages 1..${through}`);

/**
 * SPEC §2.4 for benchmark-authored stages, from every run of every state (`runs`: the states after
 * the upstream fix and the first `through` stages, the whole reference being `through` = the
 * number of stages): each stage's tests fail in every run with everything before that stage
 * applied (so they check this stage's request, not an earlier one's) and are fail-to-pass; the
 * upstream change keeps fail-to-pass tests of its own; and requirements stay cumulative: once the
 * upstream fix or a stage makes its tests pass, they pass in every run of every later state. The
 * first failing check names the reject.
 */
export function extensionDecision(stages: readonly StageToCheck[], sets: TestSets, runs: readonly ThroughRun[]): Decision {
  const stageTests: { stage: number; tests: string[] }[] = [];
  for (const verdict of stageVerdicts(stages, sets, runs)) {
    const first = verdict.problems[0];
    if (first) return { kept: false, reason: first.reason, detail: first.detail };
    stageTests.push({ stage: verdict.stage, tests: verdict.tests });
  }
  const upstream = upstreamVerdict(stages, sets, runs);
  if (upstream) return { kept: false, reason: upstream.reason, detail: upstream.detail };
  return { kept: true, stageTests };
}

/**
 * What is wrong with the upstream fix's own tests among the stages, or undefined: a stage whose
 * implementation breaks them (`culprit`), or no fail-to-pass test of its own left. Its tests are
 * those failing before it and passing in every run with it alone, besides every stage's.
 */
export function upstreamVerdict(
  stages: readonly StageToCheck[],
  sets: TestSets,
  runs: readonly ThroughRun[],
): { reason: RejectReason; detail: string; culprit?: StageToCheck } | undefined {
  const authored = new Set(stages.flatMap((s) => s.tests.flatMap((t) => idsOf(t, sets.designated))));
  const upstream = sets.designated.filter(
    (t) => !authored.has(t) && !sets.passToPass.includes(t) && runs.some((r) => r.through === 0) && runs.every((r) => r.through !== 0 || passes(r.outcomes[t])),
  );
  const broken = laterFailure(stages, upstream, 0, runs, "the upstream fix's");
  if (broken) return broken;
  if (!upstream.some((t) => sets.failToPass.includes(t)))
    return {
      reason: "no_fail_to_pass",
      detail: "no test of the upstream change fails before its fix and passes after it; only the extensions' tests do",
    };
  return undefined;
}

/** Qualify's runs of the states after the upstream fix (all but `before`), each with how many stages it holds; `after` holds all `stages`. */
export function throughRuns(runs: readonly { state: string; through?: number; run: number; outcomes: RunOutcomes }[], stages: number): ThroughRun[] {
  return runs.flatMap((r) => (r.state === "before" ? [] : [{ through: r.through ?? stages, run: r.run, outcomes: r.outcomes }]));
}

/** One stage's tests as collected, and what is wrong with them (nothing: the stage is proved). */
export interface StageVerdict {
  stage: number;
  file: string;
  tests: string[];
  /** Each with the stage to blame when it is another's: a later stage whose implementation breaks these tests. */
  problems: { reason: RejectReason; detail: string; culprit?: StageToCheck }[];
}

/**
 * Every stage's checks, each stage on its own (extensionDecision stops at the first problem; an
 * author checking a file by hand wants every stage's answer): its tests collected, failing in
 * every run before its implementation, passing in every run of every later state, fail-to-pass.
 */
export function stageVerdicts(stages: readonly StageToCheck[], sets: TestSets, runs: readonly ThroughRun[]): StageVerdict[] {
  return stages.map((stage) => {
    const field = `${stage.file}: field ${stage.field}.tests`;
    const verdict: StageVerdict = { stage: stage.index, file: stage.file, tests: [], problems: [] };
    for (const declared of stage.tests) {
      const ids = idsOf(declared, sets.designated);
      if (!ids.length) verdict.problems.push({ reason: "extension_not_verified", detail: `${field}: ${declared} was not collected in any run` });
      verdict.tests.push(...ids);
    }
    if (verdict.problems.length) return verdict;
    const early = runs.find((r) => r.through === stage.index - 1 && verdict.tests.some((t) => passes(r.outcomes[t])));
    if (early) {
      const test = verdict.tests.find((t) => passes(early.outcomes[t]))!;
      verdict.problems.push({
        reason: "extension_test_passes_early",
        detail: `${field}: ${test} passes with ${applied(early.through)} (run ${early.run + 1}), before this stage's implementation, so it does not check this stage's request`,
      });
    }
    const broken = laterFailure(stages, verdict.tests, stage.index, runs, `stage ${stage.index}'s`);
    if (broken) verdict.problems.push(broken);
    const notF2P = verdict.tests.find((t) => !sets.failToPass.includes(t));
    if (notF2P) verdict.problems.push({ reason: "extension_not_verified", detail: `${field}: ${notF2P} is not fail-to-pass (${whatItIs(notF2P, sets)})` });
    return verdict;
  });
}

/** The first run of a state after `from` in which one of `tests` (made to pass at `from`) fails: the stage to blame and why. */
function laterFailure(
  stages: readonly StageToCheck[],
  tests: readonly string[],
  from: number,
  runs: readonly ThroughRun[],
  owner: string,
): { reason: RejectReason; detail: string; culprit: StageToCheck } | undefined {
  for (const run of [...runs].sort((a, b) => a.through - b.through || a.run - b.run)) {
    if (run.through <= from) continue;
    const test = tests.find((t) => !passes(run.outcomes[t]));
    if (test === undefined) continue;
    const culprit = stages.find((s) => s.index === run.through)!;
    return {
      reason: "extension_breaks_earlier_stage",
      detail: `${culprit.file}: field ${culprit.field}.implementation: ${test} (${owner}) fails with ${applied(run.through)} (run ${run.run + 1}): a later stage extends what an earlier one made pass, never replaces it`,
      culprit,
    };
  }
  return undefined;
}

function whatItIs(test: string, sets: TestSets): string {
  if (sets.passToPass.includes(test)) return "it passes on the base already";
  if (sets.failToFail.includes(test)) return "it fails even with the whole reference";
  if (sets.passToFail.includes(test)) return "it passes on the base and fails with the reference";
  return "its outcome differs between runs";
}
