import { createHash } from "node:crypto";
import { baseRevision, freshCheckout, PatchDoesNotApply } from "../checkouts/checkout.ts";
import { RetriesExhausted, withInfrastructureRetries } from "../executors/retries.ts";
import { DiffParseError } from "../changes/diff.ts";
import { BuildFailed, type EnvironmentSpec, type Executor } from "../executors/types.ts";
import type { Logger } from "../logger.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import type { ClassificationRules } from "../schemas/repo-profile.ts";
import type { DroppedPath, SuspiciousFinding } from "../schemas/verification.ts";
import { classifyPath } from "../changes/classify.ts";
import { readdir } from "node:fs/promises";
import { staticFindings } from "./suspicious.ts";
import { gradeRun, isResolved, type GradedRun } from "./grade.ts";
import { assertSubmittedLinksInside, isTestRunnerSource, pathsOfPatch, planSubmission, UnsafeSubmission } from "./submission.ts";

export interface VerifyInput {
  task: HeldoutTask;
  env: EnvironmentSpec;
  /** A bare mirror holding the task's base commit. */
  mirror: string;
  /** The focus artifact: a git diff against the base commit ("" for no change). */
  artifact: string;
  rules: ClassificationRules;
  /** Where the clean checkout is made and removed. */
  scratch: string;
  infrastructureBackoffMs?: readonly number[];
}

/** Everything of a verification report except which session and condition it belongs to. */
export interface VerifyOutcome {
  artifact_sha256: string;
  dropped_paths: DroppedPath[];
  applied: boolean;
  apply_error?: string;
  tests: Record<string, string>;
  integrity_problems: string[];
  suspicious: SuspiciousFinding[];
  timed_out: boolean;
  resolved: boolean;
  infrastructure_retries: number;
  infrastructure_fault?: string;
}

/** The required tests of a task: FAIL_TO_PASS and PASS_TO_PASS, sorted. */
export function requiredTests(task: HeldoutTask): string[] {
  return [...new Set([...task.fail_to_pass, ...task.pass_to_pass])].sort();
}

/**
 * What the verifier hands the runner: the test files that hold the required tests, whole, as
 * qualification ran them (and as SWE-bench's harness runs a task's test files). Run by id, two
 * kinds of real test fail that qualification passed: a parametrized case whose id holds `::` or a
 * newline cannot be named on a command line (pytest then runs nothing at all), and a test that
 * leans on an earlier test of its file (shared state, import order) fails alone. Only the
 * required ids are graded; the other tests of the files run and do not count.
 */
export function verifierTestArgs(required: readonly string[]): string[] {
  // A pytest id's file is everything before its first `::` (a parametrized case comes after the name).
  return [...new Set(required.map((id) => id.split("::")[0]!))].sort();
}

/**
 * Scores one artifact against a task's held-out verifier (SPEC §3): its non-test changes, then
 * the held-out test patch, on a clean checkout of the base commit; the fixed command over the
 * files of the required tests through the guarded runner; resolved only if it applied, the run is
 * trustworthy, and every required test passed. An infrastructure fault re-runs the same frozen
 * artifact at most twice and is then reported, never blamed on the submission.
 */
export async function verifyArtifact(executor: Executor, input: VerifyInput, log: Logger): Promise<VerifyOutcome> {
  const { task } = input;
  const required = requiredTests(task);
  // What every outcome starts from: not applied, no test run.
  const initial: VerifyOutcome = {
    artifact_sha256: createHash("sha256").update(input.artifact).digest("hex"),
    dropped_paths: [],
    applied: false,
    tests: Object.fromEntries(required.map((t) => [t, "absent"])),
    integrity_problems: [],
    suspicious: [],
    timed_out: false,
    resolved: false,
    infrastructure_retries: 0,
  };

  // Parsed outside the try below: a broken held-out patch is our bug, not the submission's.
  const heldoutTestPaths = pathsOfPatch(task.test_patch);
  let plan;
  try {
    plan = planSubmission(input.artifact, input.rules, heldoutTestPaths);
  } catch (error) {
    if (error instanceof DiffParseError) return { ...initial, apply_error: `the artifact is not a git diff: ${error.message}` };
    if (error instanceof UnsafeSubmission) return { ...initial, apply_error: `refused: ${error.message}` };
    throw error;
  }
  const base: VerifyOutcome = { ...initial, dropped_paths: plan.dropped, suspicious: staticFindings(plan.applied) };

  const prepared = await submittedCheckout(input, plan);
  if ("refused" in prepared) return { ...base, apply_error: prepared.refused };
  const { checkout } = prepared;
  try {
    return await runVerifier(executor, input, plan, checkout, base, required, log);
  } finally {
    await checkout.dispose();
  }
}

type Checkout = Awaited<ReturnType<typeof freshCheckout>>;

/** A clean checkout of the base commit with the submission and the held-out tests applied, or why it cannot be had. */
async function submittedCheckout(input: VerifyInput, plan: ReturnType<typeof planSubmission>): Promise<{ checkout: Checkout } | { refused: string }> {
  let checkout: Checkout;
  try {
    checkout = await freshCheckout(
      input.mirror,
      input.task.base_commit,
      [
        { name: "submitted", text: plan.patch },
        { name: "held-out test", text: input.task.test_patch },
      ],
      input.scratch,
    );
  } catch (error) {
    if (error instanceof PatchDoesNotApply) return { refused: error.message };
    throw error;
  }
  // A chain of links can leave the repository though each one looks inside: followed for real here.
  try {
    assertSubmittedLinksInside(checkout.dir, plan.applied);
  } catch (error) {
    await checkout.dispose();
    if (error instanceof UnsafeSubmission) return { refused: `refused: ${error.message}` };
    throw error;
  }
  return { checkout };
}

/** The guarded run of the required tests on a prepared checkout, graded. */
async function runVerifier(
  executor: Executor,
  input: VerifyInput,
  plan: ReturnType<typeof planSubmission>,
  checkout: Checkout,
  base: VerifyOutcome,
  required: string[],
  log: Logger,
): Promise<VerifyOutcome> {
  const { task } = input;
  // Code from these may not act as a test or a plugin; the protected files are compared with what runs.
  // The repository's own runner source is the runner here (pytest's), so it is not watched as a submission's.
  const submittedPaths = [...new Set(plan.applied.flatMap((f) => [f.path, f.oldPath]))].filter((p) => !isTestRunnerSource(p, input.rules)).sort();
  const protectedPaths = await testFilesOf(checkout.dir, input.rules, pathsOfPatch(task.test_patch));
  const faulted = (message: string, retries: number): VerifyOutcome => ({
    ...base,
    applied: true,
    infrastructure_retries: retries,
    infrastructure_fault: message,
  });
  let outcome;
  try {
    await withInfrastructureRetries(
      `${task.task_id}: building its environment`,
      log,
      () => executor.ensureEnvironment(input.env, baseRevision(input.mirror, task.base_commit, input.scratch)),
      input.infrastructureBackoffMs,
    );
    outcome = await withInfrastructureRetries(
      `${task.task_id}: verifier run`,
      log,
      () =>
        executor.run({
          env: input.env,
          checkoutDir: checkout.dir,
          source: checkout.origin,
          tests: verifierTestArgs(required),
          timeoutSeconds: input.env.recipe.test_timeout_seconds,
          baseCommit: task.base_commit,
          guarded: { submittedPaths, protectedPaths },
        }),
      input.infrastructureBackoffMs,
    );
  } catch (error) {
    if (error instanceof BuildFailed) return faulted(`the task's environment does not build: ${error.message}`, 0);
    if (error instanceof RetriesExhausted && error.reason === "infrastructure_fault") return faulted(error.message, 2);
    throw error;
  }
  const graded: GradedRun = gradeRun(required, outcome.value);
  return {
    ...base,
    applied: true,
    tests: graded.tests,
    integrity_problems: graded.integrityProblems,
    suspicious: [...base.suspicious, ...graded.suspicious.map((detail) => ({ rule: "runtime" as const, path: null, line: null, detail }))],
    timed_out: outcome.value.timedOut,
    resolved: isResolved(true, graded),
    infrastructure_retries: outcome.retries,
  };
}

/**
 * The Python test files and conftests of a prepared checkout (by the profile's rules, and the
 * held-out test patch's files): the runner reads them before any code of the checkout runs.
 */
export async function testFilesOf(dir: string, rules: ClassificationRules, heldoutTestPaths: ReadonlySet<string>): Promise<string[]> {
  const found: string[] = [];
  const walk = async (relative: string): Promise<void> => {
    for (const entry of await readdir(relative ? `${dir}/${relative}` : dir, { withFileTypes: true })) {
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (entry.name !== ".git" && entry.name !== "__pycache__") await walk(path);
      } else if (
        entry.isFile() &&
        path.endsWith(".py") &&
        (heldoutTestPaths.has(path) || entry.name === "conftest.py" || classifyPath(path, rules).class === "test")
      )
        found.push(path);
    }
  };
  await walk("");
  return found.sort();
}
