import { z } from "zod";
import { CommitSha, LocalityClass, RepoName, TaskId } from "./common.ts";

/**
 * An interruption checkout made from its base with other tasks' upstream fixes reversed out (the
 * answer rule's revert strategy, SPEC §2.7): the tasks reversed, the commit that gives its files,
 * and, where the fix alone would not reverse, the fix's files set back whole to their version
 * before it (`to`, the fix commit's first parent), with every later change to them.
 */
export const DerivedCheckout = z.object({
  without: z.array(TaskId).min(1),
  commit: CommitSha,
  rolled_back: z
    .array(z.object({ task_id: TaskId, to: CommitSha, paths: z.array(z.string().min(1)).min(1) }))
    .min(1)
    .optional(),
});
export type DerivedCheckout = z.infer<typeof DerivedCheckout>;

/** One session chosen by select: its focus, locality group, interruptions and case seed. */
export const SelectedSession = z.object({
  focus: TaskId,
  repo: RepoName,
  locality: LocalityClass,
  interruptions: z.array(TaskId),
  case_seed: z.string(),
  /** How many of the interruptions have a single request (taken because too few eligible ones had two or more): they cannot be resumed. */
  single_request_interruptions: z.number().int().min(0),
  /** Interruption checkouts made from their base with the focus's upstream fix reversed out (the answer rule's revert strategy, SPEC §2.7). */
  derived_checkouts: z.array(DerivedCheckout.extend({ task_id: TaskId })),
  /** Where a checkout of the session holds an interruption's answer (reported; kept out when the config's rule says so). */
  interruption_answers: z.array(z.object({ task_id: TaskId, checkout_task: TaskId })),
});

/** A candidate interruption the answer rule kept out of a focus's session, and why (select's `exclusions`). */
export const RuleExclusionRecord = z.object({
  focus: TaskId,
  group: LocalityClass,
  task: TaskId,
  reason: z.enum(["holds_focus_answer", "revert_not_viable", "answers_cross"]),
  detail: z.string(),
});
export type RuleExclusionRecord = z.infer<typeof RuleExclusionRecord>;

/** One try of the revert strategy: a candidate's base with a focus's upstream fix reversed out (select's `reverts`). */
export const RevertRecord = z.object({
  focus: TaskId,
  task_id: TaskId,
  viable: z.boolean(),
  commit: CommitSha.optional(),
  /** Tests taken out of test files whose reverse conflicted, instead of reversed (pytest node id prefixes); absent when none. */
  removed_tests: z.array(z.string()).optional(),
  /** The focus's files set back whole to their version before its fix, where its reverse alone conflicted (`stages.select.roll_back: files`). */
  rolled_back: z.object({ to: CommitSha, paths: z.array(z.string().min(1)).min(1) }).optional(),
  reason: z.string().optional(),
});
export type RevertRecord = z.infer<typeof RevertRecord>;

/** Stage 7's output. */
export const Selection = z.object({
  seed: z.string(),
  sessions: z.array(SelectedSession),
  /** How often each interruption task is reused across sessions. */
  interruption_reuse: z.record(z.string(), z.number().int().positive()),
  stratification: z.record(z.string(), z.unknown()),
});
export type Selection = z.infer<typeof Selection>;
export type SelectedSession = z.infer<typeof SelectedSession>;
