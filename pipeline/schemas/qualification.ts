import { z } from "zod";
import { RejectReason, TaskId, TestStatus } from "./common.ts";
import { TestRunner } from "./repo-profile.ts";

export const TestRun = z.object({
  /** `through`: a task with extensions, after the upstream fix and its first `through` extensions (SPEC §2.4's cumulative check). */
  state: z.enum(["before", "after", "through"]),
  through: z.number().int().nonnegative().optional(),
  run: z.number().int().nonnegative(),
  /** Every designated test's status in this run, keyed by pytest node id. */
  outcomes: z.record(z.string(), TestStatus),
  timed_out: z.boolean(),
  infrastructure_retries: z.number().int().min(0).max(2),
  /**
   * When the run crashed the runner (pytest's INTERNALERROR, a crash at collection): what crashed
   * when its files, then its tests, were run again one at a time, and why. A test whose own run
   * crashed, or whose file's did, counts as failing in this run.
   */
  crashes: z.array(z.object({ target: z.string(), reason: z.string() })).optional(),
});

/** Stage 3's output: every test's outcome in every run of each state, and the sets derived from them. */
export const QualificationRecord = z.object({
  task_id: TaskId,
  executor: z.enum(["docker", "local"]),
  /** The environment's key: sha256 of (repository, recipe, as-of date, the build scheme's version). */
  environment_key: z.string(),
  /** The Python the environment was built on: the recipe's first choice, or the first fallback the executor offered. */
  python: z.string(),
  /** True when that Python is not the recipe's first choice (the executor could not give that one). */
  python_fallback: z.boolean(),
  as_of: z.string().nullable(),
  /**
   * The date the base revision's layer resolved as of, when later than `as_of`: the environment is
   * resolved as of the earliest task sharing it, a revision as of its own commit date at the earliest
   * (its requirement files were written against what was released by then).
   */
  revision_as_of: z.string().optional(),
  /**
   * Packages raised above what the as-of date gives, because that release cannot run on the
   * environment's Python (the recipe's `python_floors`), and why.
   */
  raised_for_python: z.array(z.object({ package: z.string(), to: z.string(), python: z.string(), why: z.string() })).optional(),
  /**
   * Packages installed past the as-of date, and why: an exact pin in the checkout's own
   * requirement files wins over the date (lockstep releases such as pylint and astroid).
   */
  let_past_as_of: z.array(z.object({ package: z.string(), version: z.string(), file: z.string(), why: z.string() })).optional(),
  /** The pytest arguments that selected the designated tests (empty: the whole suite). */
  test_args: z.array(z.string()),
  runs_per_state: z.number().int().positive(),
  /** The runner the recipe named: how the test ids are spelt (pytest node ids, or Django's unittest ids). */
  test_runner: TestRunner,
  designated_tests: z.array(z.string()),
  runs: z.array(TestRun),
  fail_to_pass: z.array(z.string()),
  pass_to_pass: z.array(z.string()),
  pass_to_fail: z.array(z.string()),
  fail_to_fail: z.array(z.string()),
  unstable: z.array(z.string()),
  /**
   * Tests of fail_to_fail that failed in every run with a connection error: they need the network,
   * which test runs never have (SWE-bench ran its tests online).
   */
  needs_network: z.array(z.string()),
  /** A task with benchmark-authored stages: each stage's fail-to-pass tests, as collected (SPEC §2.4). */
  stage_tests: z.array(z.object({ stage: z.number().int().positive(), tests: z.array(z.string()).min(1) })).optional(),
  kept: z.boolean(),
  reject_reason: RejectReason.optional(),
  reject_detail: z.string().optional(),
});
export type QualificationRecord = z.infer<typeof QualificationRecord>;
