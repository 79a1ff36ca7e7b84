import { z } from "zod";
import { LocalityClass, RepoName, TaskId } from "./common.ts";

/** One same-repository pair, `task_a < task_b`, with its class or why it is ineligible. */
export const LocalityPair = z.object({
  repo: RepoName,
  task_a: TaskId,
  task_b: TaskId,
  eligible: z.boolean(),
  /** Present when eligible. */
  class: LocalityClass.optional(),
  /** Present when ineligible: the source files both tasks modify. */
  shared_files: z.array(z.string()),
  /** Directories in D_a ∩ D_b (empty for far pairs). */
  shared_dirs: z.array(z.string()),
});
export type LocalityPair = z.infer<typeof LocalityPair>;
