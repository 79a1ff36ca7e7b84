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
  /** Review comments only: the review they were submitted in (GitHub's pull_request_review_id), so a round's comments group. */
  review_id: z.number().int().optional(),
});
export type DiscussionItem = z.infer<typeof DiscussionItem>;

/**
 * How a link between a pull request and an issue was found, most authoritative first:
 * GitHub's own record of the issues the PR closes (GraphQL `closingIssuesReferences`, which
 * includes links made in the "Development" sidebar), a closing keyword in the PR's description,
 * one in a commit message, and the issue's timeline showing this PR or one of its commits closing it.
 */
export const LINK_SOURCES = ["closing_reference", "pr_body_keyword", "commit_keyword", "timeline"] as const;
export const LinkSource = z.enum(LINK_SOURCES);
export type LinkSource = z.infer<typeof LinkSource>;

export const LinkedIssue = z.object({
  repo: RepoName,
  number: z.number().int().positive(),
  url: z.string(),
  title: z.string(),
  body: z.string(),
  author: z.string(),
  created_at: IsoTimestamp,
  /** The first source (in LINK_SOURCES order) that links the issue. */
  linked_by: LinkSource,
  /** Every source that links it, in LINK_SOURCES order. */
  link_sources: z.array(LinkSource).default([]),
  /** Where the pull request named the issue, when GitHub has since moved it (a 301): `owner/repo#N`. */
  transferred_from: z.string().optional(),
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
  /**
   * What mining noticed and an auditor should know: a linked issue that was deleted and skipped,
   * one followed to where it was transferred, a list GitHub capped and git completed.
   */
  notes: z.array(z.string()).default([]),
  /** Fields of the source record this schema does not model, kept verbatim. */
  extra: z.record(z.string(), z.unknown()).default({}),
});
export type Candidate = z.infer<typeof Candidate>;
