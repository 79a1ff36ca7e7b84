import { z } from "zod";
import { SessionBehaviour } from "./agent.ts";
import { TaskId, TestStatus } from "./common.ts";
import { Condition } from "./session.ts";

/** A path of the submission the verifier did not take, and why. */
export const DroppedPath = z.object({
  path: z.string(),
  reason: z.enum(["test_file", "test_configuration", "held_out_test_path", "test_runner_shadow"]),
});
export type DroppedPath = z.infer<typeof DroppedPath>;

/**
 * A construct in the submitted code, or a thing it did while the tests ran, that is rare in honest
 * fixes and common in cheats: for auditors. It never changes the verdict.
 */
export const SuspiciousFinding = z.strictObject({
  rule: z.enum([
    "reads_test_files",
    "reads_source",
    "heap_walk",
    "caller_frames",
    "atexit",
    "hard_exit",
    "code_assignment",
    "plugin_registration",
    "eq_always_true",
    "module_getattr",
    "runtime",
  ]),
  /** The submitted file and its line (static findings); null for what the runner saw at run time. */
  path: z.string().nullable(),
  line: z.number().int().positive().nullable(),
  detail: z.string(),
});
export type SuspiciousFinding = z.infer<typeof SuspiciousFinding>;

/** What `switch-swe verify` writes for one submission (SPEC §3). */
export const VerificationReport = z.object({
  session_id: z.string(),
  task_id: TaskId,
  condition: Condition,
  /** sha256 of the artifact as submitted (before anything was dropped): the frozen artifact every re-run used. */
  artifact_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** Paths the submission changed whose changes were not applied: test files and test configuration keep their held-out versions. */
  dropped_paths: z.array(DroppedPath),
  applied: z.boolean(),
  apply_error: z.string().optional(),
  /** Every required test (FAIL_TO_PASS and PASS_TO_PASS) and its status; only "passed" passes. */
  tests: z.record(z.string(), TestStatus),
  /**
   * Why the run's results cannot be trusted, if they cannot: the submission replaced pytest's
   * reporting, registered a plugin, or the session never finished (see pipeline/verifier/runner.py).
   * Any entry makes the submission unresolved.
   */
  integrity_problems: z.array(z.string()),
  /** Hints for an auditor (see SuspiciousFinding); reports written before they existed have none. */
  suspicious: z.array(SuspiciousFinding).default([]),
  timed_out: z.boolean(),
  resolved: z.boolean(),
  infrastructure_retries: z.number().int().min(0).max(2),
  infrastructure_fault: z.string().optional(),
  /** Written by `switch-swe session run`: what the agent did during the session (absent for `verify`). */
  behaviour: SessionBehaviour.optional(),
});
export type VerificationReport = z.infer<typeof VerificationReport>;
