import { parseJunitReport } from "../test-results/junit.ts";
import type { Logger } from "../logger.ts";
import type { TestStatus } from "../schemas/common.ts";
import type { ChangedFile, SplitChange } from "../schemas/split.ts";
import { BuildFailed, RunTimedOut, type EnvironmentSpec, type Executor, type TestRunResult } from "../executors/types.ts";
import { type CheckoutOrigin } from "../checkouts/checkout.ts";
import type { TestRunner } from "../schemas/repo-profile.ts";
import { RetriesExhausted, withInfrastructureRetries } from "../executors/retries.ts";
import { RecordError } from "../engine/stage.ts";
import { PatchDoesNotApply } from "../checkouts/checkout.ts";
import { classifyTests, keepDecision, type RunOutcomes } from "./outcomes.ts";
import { extensionDecision, type StageToCheck, throughRuns } from "./extension-checks.ts";
import { QualificationRecord } from "../schemas/qualification.ts";
import { type Crash, rerunInParts, runnerCrash, unreportedStatus } from "./crash-reruns.ts";
import { type CheckoutPins, fromCommit, fromDirectory, NO_CHECKOUT_PINS, readCheckoutPins } from "../executors/checkout-pins.ts";
import { needsRevisionLayer, raisedFloors, revisionAsOf } from "../executors/recipe-scripts.ts";

/** A failure for want of the network: name resolution, a refused or unreachable connection. */
export const NETWORK_FAILURE =
  /ConnectionError|NewConnectionError|MaxRetryError|URLError|gaierror|Name or service not known|Temporary failure in name resolution|Network is unreachable|No route to host|Connection refused|nodename nor servname|getaddrinfo failed|ConnectTimeout|socket\.timeout|RemoteDisconnected/;

/**
 * Why a run has no outcomes to read, or undefined when it has: no report at all (the runner could
 * not start, an install or usage error), or pytest's own internal or usage error (exit 3 or 4),
 * after which a report may exist but does not describe the tests.
 */
export function runFailure(runner: TestRunner, result: TestRunResult): string | undefined {
  if (runner !== "django" && (result.exitCode === 3 || result.exitCode === 4)) {
    return result.exitCode === 3 ? "ended in a pytest INTERNALERROR" : "was refused by pytest as a usage error";
  }
  if (!result.junitXml) return "wrote no JUnit report";
  return undefined;
}

/** A test-module pattern as a regular expression: `*` within one path segment; a pattern with a `/` matches the end of the path. */
function modulePattern(pattern: string): RegExp {
  const body = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join("[^/]*");
  return new RegExp(`(^|/)${body}$`);
}

/** Test modules the test patch leaves in place: the files whose tests are designated (`patterns`: the profile's `test_modules`). */
export function designatedTestFiles(files: ChangedFile[], patterns: readonly string[] = ["test_*.py", "*_test.py", "tests.py"]): string[] {
  const modules = patterns.map(modulePattern);
  return files
    .filter((f) => f.class === "test" && f.status !== "deleted" && f.path.endsWith(".py") && modules.some((m) => m.test(f.path)))
    .map((f) => f.path)
    .sort();
}

export interface QualifyTaskInput {
  id: string;
  baseCommit: string;
  testPatch: string;
  implementationPatch: string;
  env: EnvironmentSpec;
  testArgs: string[];
  runs: number;
  /** A fresh checkout of the base commit with these patches applied (the engine's, or the CLI's). */
  checkout: (patches: { name: string; text: string }[]) => Promise<{ dir: string; dispose: () => Promise<void>; origin?: CheckoutOrigin }>;
  /** The bare mirror `checkout` clones from: tells the queue's workers how to make the base revision's checkout. */
  mirror?: string;
  infrastructureBackoffMs?: readonly number[];
  /** Saves a failed run's whole output; returns where, for the reject's message. */
  saveLog?: (name: string, text: string) => Promise<string>;
  /**
   * Benchmark-authored stages: `implementationPatch` is then the whole reference, and the states
   * between (the upstream implementation, then each stage's over it) are run too.
   */
  extension?: {
    upstreamImplementationPatch: string;
    stages: (StageToCheck & { implementationPatch: string })[];
  };
}

/**
 * What qualifying a split task takes from its split record, with how it is run here (the stage, or
 * `qualify task` by hand: both qualify the same states, benchmark-authored stages included).
 */
export function qualifyTaskInput(
  split: SplitChange,
  run: Pick<QualifyTaskInput, "env" | "testArgs" | "runs" | "checkout" | "mirror" | "saveLog" | "infrastructureBackoffMs">,
): QualifyTaskInput {
  return {
    id: split.task_id,
    baseCommit: split.base_commit,
    testPatch: split.test_patch,
    implementationPatch: split.implementation_patch,
    ...run,
    ...(split.extensions?.length
      ? {
          extension: {
            upstreamImplementationPatch: split.upstream_implementation_patch ?? "",
            stages: split.extensions.map((e) => ({
              index: e.index,
              field: e.field,
              file: e.file,
              tests: e.tests,
              implementationPatch: e.implementation_patch,
            })),
          },
        }
      : {}),
  };
}

/** A state of the checkout: its name in records and logs, and the patches that make it. */
interface CheckoutState {
  state: "before" | "after" | "through";
  through?: number;
  label: string;
  patches: { name: string; text: string }[];
}

/**
 * The states a task's tests run in: before (base + tests) and after (+ the whole reference); with
 * extensions, also through the upstream implementation alone and through each stage but the last.
 */
function checkoutStates(input: QualifyTaskInput): CheckoutState[] {
  const tests = { name: "test", text: input.testPatch };
  const states: CheckoutState[] = [{ state: "before", label: "before", patches: [tests] }];
  const extension = input.extension;
  if (extension) {
    const implementations = [{ name: "upstream implementation", text: extension.upstreamImplementationPatch }];
    for (let through = 0; through < extension.stages.length; through++) {
      if (through > 0) {
        const stage = extension.stages[through - 1]!;
        implementations.push({ name: `${stage.file}: ${stage.field}.implementation`, text: stage.implementationPatch });
      }
      states.push({ state: "through", through, label: `through stage ${through} of the extension`, patches: [tests, ...implementations] });
    }
  }
  states.push({ state: "after", label: "after", patches: [tests, { name: "implementation", text: input.implementationPatch }] });
  return states;
}

export interface StateRun {
  state: "before" | "after" | "through";
  through?: number;
  run: number;
  outcomes: Record<string, TestStatus>;
  timed_out: boolean;
  infrastructure_retries: number;
  /** Tests that failed in this run with a connection error. */
  networkFailures: string[];
  pytestSeconds: number;
  wallSeconds: number;
  /** What crashed the runner in this run, re-run in parts (see crash-reruns.ts). */
  crashes?: Crash[];
  /** Set while a crashed run waits to be re-run in parts: why, and its message should that be impossible. */
  crashed?: { reason: string; message: string };
}

/**
 * Qualifies one task: each state (before = base + test patch, after = + implementation patch) in
 * its own fresh checkout, run `runs` times; every designated test's status in every run, read from
 * the JUnit report only; then the sets and whether the task is kept.
 */
export async function qualifyTask(executor: Executor, input: QualifyTaskInput, log: Logger) {
  try {
    return await qualifyRuns(executor, input, log);
  } catch (error) {
    // A fault that outlived its retries rejects the task for now: never cached, tried again next run.
    if (error instanceof RetriesExhausted) throw new RecordError(error.reason, error.message, {}, false);
    throw error;
  }
}

async function qualifyRuns(executor: Executor, input: QualifyTaskInput, log: Logger) {
  try {
    const base = {
      commit: input.baseCommit,
      checkout: () => input.checkout([]),
      ...(input.mirror ? { origin: { mirror: input.mirror, commit: input.baseCommit, patches: [] } } : {}),
    };
    await withInfrastructureRetries(
      `${input.id}: building its environment`,
      log,
      () => executor.ensureEnvironment(input.env, base),
      input.infrastructureBackoffMs,
    );
  } catch (error) {
    if (error instanceof BuildFailed) throw new RecordError("build_failed", `${input.id}: ${error.message}`, { field: "environment" });
    throw error;
  }
  const checkoutPins = input.env.asOf && needsRevisionLayer(input.env.recipe) ? await basePins(input) : NO_CHECKOUT_PINS;
  const runs: StateRun[] = [];
  // Both checkouts stay until the end: a run that crashed the runner is re-run in parts in its
  // own checkout once every run is in, with the test ids the others reported.
  const checkouts = new Map<string, { dir: string; dispose: () => Promise<void>; origin?: CheckoutOrigin }>();
  const labelOf = (run: StateRun) => (run.state === "through" ? `through stage ${run.through} of the extension` : run.state);
  try {
    for (const state of checkoutStates(input)) {
      let checkout;
      try {
        checkout = await input.checkout(state.patches);
      } catch (error) {
        if (error instanceof PatchDoesNotApply) throw new RecordError("patch_does_not_apply", `${input.id}: ${error.message}`, { field: "reference_diff" });
        throw error;
      }
      checkouts.set(state.label, checkout);
      for (let run = 0; run < input.runs; run++) runs.push(await qualifyRun(executor, input, log, state, run, checkout));
    }
    const known = [...new Set(runs.flatMap((r) => Object.keys(r.outcomes)))].sort();
    for (const run of runs) {
      if (!run.crashed) continue;
      log.warn(
        `${input.id}: ${labelOf(run)} run ${run.run + 1} ${run.crashed.reason}; running its test files one at a time, then the known tests of a file that still crashes, in halves`,
      );
      const parts = await rerunInParts(input.testArgs, known, {
        runner: input.env.recipe.test_runner,
        python: input.env.recipe.python,
        run: async (tests) =>
          (await runTests(executor, input, log, `${labelOf(run)} run ${run.run + 1} (${tests.join(" ")})`, checkouts.get(labelOf(run))!, tests)).result,
      });
      if (!Object.keys(parts.outcomes).length && !known.length) throw new RecordError("run_failed", run.crashed.message, { field: "environment" });
      run.outcomes = parts.outcomes;
      run.crashes = parts.crashes;
      delete run.crashed;
    }
  } finally {
    for (const checkout of checkouts.values()) await checkout.dispose();
  }
  // Every run lists every designated test: a test it did not report was absent.
  const designated = [...new Set(runs.flatMap((r) => Object.keys(r.outcomes)))].sort();
  for (const r of runs) {
    for (const test of designated) r.outcomes[test] ??= unreportedStatus(test, r.crashes);
    r.outcomes = Object.fromEntries(Object.entries(r.outcomes).sort(([a], [b]) => (a < b ? -1 : 1)));
  }
  const outcomesOf = (state: "before" | "after"): RunOutcomes[] => runs.filter((r) => r.state === state).map((r) => r.outcomes);
  const sets = classifyTests(outcomesOf("before"), outcomesOf("after"));
  let decision: ReturnType<typeof keepDecision> = keepDecision(sets);
  let stageTests: { stage: number; tests: string[] }[] | undefined;
  if (decision.kept && input.extension) {
    const checked = extensionDecision(input.extension.stages, sets, throughRuns(runs, input.extension.stages.length));
    if (checked.kept) stageTests = checked.stageTests;
    else decision = checked;
  }
  // Failing in every run of both states, each time for want of the network: SWE-bench ran its
  // tests online, we run them offline by design; named so that the difference is explained.
  const needsNetwork = sets.failToFail.filter((test) => runs.every((r) => r.networkFailures.includes(test)));
  return { runs, sets, needsNetwork, checkoutPins, decision, ...(stageTests ? { stageTests } : {}) };
}

/** One run of one state in its checkout: the outcomes read from its JUnit report, or a RecordError saying why it has none. */
async function qualifyRun(
  executor: Executor,
  input: QualifyTaskInput,
  log: Logger,
  { state, through, label }: CheckoutState,
  run: number,
  checkout: { dir: string; origin?: CheckoutOrigin },
): Promise<StateRun> {
  const at = through === undefined ? {} : { through };
  const { result, retries } = await runTests(executor, input, log, `${label} run ${run + 1}`, checkout, input.testArgs);
  const failure = runFailure(input.env.recipe.test_runner, result);
  if (failure) {
    const where = input.saveLog ? await input.saveLog(`${input.id}.${state}${through ?? ""}-${run + 1}`, result.outputTail) : undefined;
    const tail = result.outputTail.trim().split("\n").slice(-5).join(" | ");
    const message = `${input.id}: ${label} run ${run + 1} ${failure} (exit ${result.exitCode}), so it has no test outcomes to read${where ? `; its log: ${where}` : ""}: ${tail}`;
    // A crash of the runner over named test files is re-run in parts once every run is in; the whole suite cannot be split.
    const crash = runnerCrash(input.env.recipe.test_runner, result);
    if (crash && input.testArgs.length)
      return {
        state,
        ...at,
        run,
        outcomes: {},
        networkFailures: [],
        timed_out: false,
        infrastructure_retries: retries,
        pytestSeconds: 0,
        wallSeconds: result.wallSeconds,
        crashed: { reason: crash, message },
      };
    throw new RecordError("run_failed", message, { field: "environment" });
  }
  const parsed = parseJunitReport(result.junitXml!, { runner: input.env.recipe.test_runner, python: input.env.recipe.python });
  const report = parsed.results;
  return {
    state,
    ...at,
    run,
    outcomes: Object.fromEntries(report.map((r) => [r.nodeId, r.status])),
    networkFailures: report.filter((r) => r.status !== "passed" && r.failureText && NETWORK_FAILURE.test(r.failureText)).map((r) => r.nodeId),
    timed_out: false,
    infrastructure_retries: retries,
    pytestSeconds: parsed.sessionSeconds,
    wallSeconds: result.wallSeconds,
  };
}

/**
 * What the revision layer let past its environment's as-of date (the revision's own later date,
 * the checkout's exact pins), read as the build read it, from the base revision: from the mirror
 * when there is one, else a checkout.
 */
async function basePins(input: QualifyTaskInput): Promise<CheckoutPins> {
  const files = input.env.recipe.requirements_files;
  if (input.mirror) return readCheckoutPins(fromCommit(input.mirror, input.baseCommit), files);
  const base = await input.checkout([]);
  try {
    return await readCheckoutPins(fromDirectory(base.dir), files);
  } finally {
    await base.dispose();
  }
}

/** One run of the given tests in a checkout, run again after an infrastructure fault or a timeout. */
async function runTests(
  executor: Executor,
  input: QualifyTaskInput,
  log: Logger,
  what: string,
  checkout: { dir: string; origin?: CheckoutOrigin },
  tests: string[],
): Promise<{ result: TestRunResult; retries: number }> {
  const { value: result, retries } = await withInfrastructureRetries(
    `${input.id}: ${what}`,
    log,
    async () => {
      const result = await executor.run({
        env: input.env,
        checkoutDir: checkout.dir,
        source: checkout.origin,
        tests,
        timeoutSeconds: input.env.recipe.test_timeout_seconds,
        baseCommit: input.baseCommit,
      });
      // A run cut off by its timeout says nothing about the tests (a loaded machine, say): it
      // is run again, and never read as outcomes.
      if (result.timedOut) throw new RunTimedOut(`the run exceeded ${input.env.recipe.test_timeout_seconds}s (environment.test_timeout_seconds)`);
      return result;
    },
    input.infrastructureBackoffMs,
  );
  return { result, retries };
}

/** The qualification record of one task: every run's outcomes, the sets, and the decision. */
export function qualificationRecord(
  input: QualifyTaskInput,
  executorKind: "docker" | "local",
  result: Awaited<ReturnType<typeof qualifyTask>>,
): QualificationRecord {
  const { runs, sets, decision, needsNetwork, checkoutPins, stageTests } = result;
  const raised = raisedFloors(input.env);
  return QualificationRecord.parse({
    task_id: input.id,
    executor: executorKind,
    environment_key: input.env.key,
    python: input.env.recipe.python,
    python_fallback: input.env.recipe.python_accepted.length > 1 && input.env.recipe.python !== input.env.recipe.python_accepted[0],
    as_of: input.env.asOf,
    ...(raised.length
      ? { raised_for_python: raised.map((f) => ({ package: f.package, to: `>=${f.version}`, python: input.env.recipe.python, why: f.why })) }
      : {}),
    ...(revisionAsOf(input.env, checkoutPins) !== input.env.asOf ? { revision_as_of: revisionAsOf(input.env, checkoutPins) } : {}),
    ...(checkoutPins.exact.length
      ? { let_past_as_of: checkoutPins.exact.map((p) => ({ ...p, why: `pinned exactly in ${p.file}, the checkout's own requirements` })) }
      : {}),
    test_args: input.testArgs,
    runs_per_state: input.runs,
    designated_tests: sets.designated,
    test_runner: input.env.recipe.test_runner,
    runs: runs.map(({ pytestSeconds: _p, wallSeconds: _w, networkFailures: _n, crashed: _c, crashes, ...run }) => ({
      ...run,
      ...(crashes?.length ? { crashes } : {}),
    })),
    fail_to_pass: sets.failToPass,
    pass_to_pass: sets.passToPass,
    pass_to_fail: sets.passToFail,
    fail_to_fail: sets.failToFail,
    unstable: sets.unstable,
    needs_network: needsNetwork,
    ...(stageTests ? { stage_tests: stageTests } : {}),
    kept: decision.kept,
    ...(decision.kept ? {} : { reject_reason: decision.reason, reject_detail: decision.detail }),
  });
}
