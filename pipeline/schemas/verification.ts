import { z } from "zod";
import { TaskId, TestStatus } from "./common.ts";

/** A path of the submission the verifier did not take, and why. */
export const DroppedPath = z.object({
  path: z.string(),
  reason: z.enum(["test_file", "test_configuration", "held_out_test_path", "test_runner_shadow"]),
});
export type DroppedPath = z.infer<typeof DroppedPath>;

/** What `switch-swe verify` writes for one submission (SPEC §3). */
export const VerificationReport = z.object({
  session_id: z.string(),
  task_id: TaskId,
  condition: z.enum(["control", "switched"]),
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
  timed_out: z.boolean(),
  resolved: z.boolean(),
  infrastructure_retries: z.number().int().min(0).max(2),
  infrastructure_fault: z.string().optional(),
});
export type VerificationReport = z.infer<typeof VerificationReport>;
