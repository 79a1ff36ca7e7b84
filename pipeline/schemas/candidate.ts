import { z } from "zod";
import { CommitSha, IsoTimestamp, RepoName, TaskId } from "./common.ts";

/** A comment, review or review comment from the pull request's discussion, with its identity kept for provenance. */
export const DiscussionItem = z.object({
  kind: z.enum(["issue_comment", "review", "review_comment"]),
  id: z.number().int(),
  url: z.string(),
  author: z.string(),
  author_type: z.enum(["User", "Bot", "Organization", "Mannequin"]).default("User"),
  created_at: IsoTimestamp,
  body: z.string(),
  /** Reviews only: APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED. */
  state: z.string().optional(),
  /** Review comments only: the file and line the comment is anchored to. */
  path: z.string().optional(),
  line: z.number().int().nullable().optional(),
  in_reply_to: z.number().int().optional(),
});
export type DiscussionItem = z.infer<typeof DiscussionItem>;

export const LinkedIssue = z.object({
  repo: RepoName,
  number: z.number().int().positive(),
  url: z.string(),
  title: z.string(),
  body: z.string(),
  author: z.string(),
  created_at: IsoTimestamp,
  /** How the link was found: the issue timeline, a closing keyword in the PR body, or in a commit message. */
  linked_by: z.enum(["timeline", "pr_body_keyword", "commit_keyword"]),
  comments: z.array(DiscussionItem).default([]),
});
export type LinkedIssue = z.infer<typeof LinkedIssue>;

export const PullRequestRecord = z.object({
  number: z.number().int().positive(),
  url: z.string(),
  title: z.string(),
  body: z.string(),
  author: z.string(),
  created_at: IsoTimestamp,
  merged_at: IsoTimestamp,
  head_sha: CommitSha,
  merge_commit_sha: CommitSha.nullable(),
  commits: z.array(z.object({ sha: CommitSha, message: z.string(), committed_at: IsoTimestamp })),
  /** Files GitHub lists as changed; the reference diff itself comes from git. */
  changed_files: z.array(z.string()).default([]),
  discussion: z.array(DiscussionItem),
});
export type PullRequestRecord = z.infer<typeof PullRequestRecord>;

/** Where a candidate came from, precisely enough for an auditor to find the original. */
export const CandidateSource = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("swebench"), file: z.string(), line: z.number().int().positive() }),
  z.object({ kind: z.literal("github"), api_url: z.string() }),
]);

/** Stage 1's output: one mined pull request with everything later stages need. */
export const Candidate = z.object({
  id: TaskId,
  repo: RepoName,
  pull_number: z.number().int().positive().nullable(),
  base_commit: CommitSha,
  created_at: IsoTimestamp,
  source: CandidateSource,
  /** The full reference change, base → merge, as a git diff. */
  reference_diff: z.string().min(1),
  /** SWE-bench's own implementation/test split when the record came with one; kept to compare with ours. */
  upstream_split: z.object({ patch: z.string(), test_patch: z.string() }).optional(),
  problem_statement: z.string().optional(),
  issues: z.array(LinkedIssue).default([]),
  pull_request: PullRequestRecord.optional(),
  /** Upstream FAIL_TO_PASS / PASS_TO_PASS, informative only: qualify recomputes both. */
  upstream_fail_to_pass: z.array(z.string()).default([]),
  upstream_pass_to_pass: z.array(z.string()).default([]),
  version: z.string().optional(),
  environment_setup_commit: CommitSha.optional(),
  /** Fields of the source record this schema does not model, kept verbatim. */
  extra: z.record(z.string(), z.unknown()).default({}),
});
export type Candidate = z.infer<typeof Candidate>;
