import { z } from "zod";
import { CommitSha, RepoName, TaskId } from "./common.ts";
import { EnvironmentRecipe } from "./repo-profile.ts";

/**
 * What only the verifier reads about a task (`<heldout_dir>/<task>.json`): the reference patch,
 * the held-out test patch, the tests that score it and the environment they run in.
 */
export const HeldoutTask = z.object({
  task_id: TaskId,
  repo: RepoName,
  base_commit: CommitSha,
  implementation_patch: z.string(),
  test_patch: z.string(),
  fail_to_pass: z.array(z.string()).min(1),
  pass_to_pass: z.array(z.string()),
  /** The command qualify ran, for people; the verifier runs its own fixed command over the test ids. */
  test_command: z.string(),
  environment: EnvironmentRecipe,
  /** Dependencies resolve as of this instant (null: today), exactly as when the task was qualified. */
  environment_as_of: z.string().nullable(),
  /**
   * The upstream change as the repository's history holds it (its source and test files, no
   * benchmark-authored stage), and where it was merged: what the answer rule reverses out of a
   * later checkout and looks for in history (SPEC §2.7).
   */
  upstream: z.object({
    patch: z.string(),
    pull_number: z.number().int().positive().nullable(),
    merge_commit: CommitSha.nullable(),
  }),
});
export type HeldoutTask = z.infer<typeof HeldoutTask>;
