import { z } from "zod";
import { CommitSha, RepoName, TaskId } from "./common.ts";
import { DerivedCheckout } from "./selection.ts";

/**
 * The commit that brought a task's upstream fix into the repository's history, and how it was
 * found: the pull request's merge (or squash) commit GitHub names; a commit whose message merges
 * that pull request; or the first commit after the base that holds the reference. `commit` is
 * null when none of these is in the repository (a fix never merged, a history rewritten).
 */
export const FixCommit = z.object({
  commit: CommitSha.nullable(),
  found_by: z.enum(["merge_commit", "pull_request_message", "reference_present", "none"]),
  detail: z.string(),
});
export type FixCommit = z.infer<typeof FixCommit>;

/** Where a task's answer is (SPEC §2.7, "no answer in the container"): one record a task of the answers stage. */
export const TaskAnswer = z.object({
  task_id: TaskId,
  repo: RepoName,
  base_commit: CommitSha,
  fix: FixCommit,
  /** Hunks of the whole reference (every stage's implementation and held-out tests) that are looked for: each adds a line that is not blank and is not at the base already. */
  hunks: z.number().int().nonnegative(),
  /** Names the reference defines (def / class, tests included) that occur nowhere in the base's tree. */
  new_names: z.array(z.string()),
});
export type TaskAnswer = z.infer<typeof TaskAnswer>;

/**
 * One way a checkout holds a task's answer: its base descends from the task's fix; a hunk of the
 * reference is there verbatim with its context (named by file and its line in the reference); or
 * a name only the reference defines is there. Evidence names where, never the answer's text.
 */
export const AnswerEvidence = z.discriminatedUnion("by", [
  z.object({ by: z.literal("history"), commit: CommitSha }),
  z.object({ by: z.literal("hunk"), path: z.string(), line: z.number().int().positive(), part: z.enum(["implementation", "tests"]) }),
  z.object({ by: z.literal("name"), name: z.string(), path: z.string() }),
]);
export type AnswerEvidence = z.infer<typeof AnswerEvidence>;

/** A tree a checkout is made from: a commit, or a commit with other tasks' upstream references reversed out of it. */
export const CheckoutTree = z.object({
  base_commit: CommitSha,
  /** Set for a derived checkout: the tasks whose upstream fix and tests were reversed out of the base, and the commit that gives its files (made the same way everywhere: fixed author, date and message). */
  derived: DerivedCheckout.optional(),
});
export type CheckoutTree = z.infer<typeof CheckoutTree>;

/** Whether the base of `checkout_task` holds the answer of `task_id` (the answers stage's pairs: every two tasks of a repository). */
export const AnswerExposure = z.object({
  task_id: TaskId,
  checkout_task: TaskId,
  held: z.boolean(),
  /** The first pieces of evidence found (history first), at most a few of each kind. */
  evidence: z.array(AnswerEvidence),
});
export type AnswerExposure = z.infer<typeof AnswerExposure>;
