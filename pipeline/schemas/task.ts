import { z } from "zod";
import { CommitSha, IsoTimestamp, RepoName, TaskId } from "./common.ts";
import { EnvironmentRecipe } from "./repo-profile.ts";

export const ProvenanceSource = z.object({
  /** `upstream_commit`: a stage whose code and tests are a commit of the pull request, its request written by the benchmark's maintainers. */
  kind: z.enum(["issue", "pr_body", "review", "review_comment", "issue_comment", "authored", "upstream_commit"]),
  record_id: z.string(),
  url: z.string().optional(),
  author: z.string(),
  created_at: IsoTimestamp.optional(),
  /** Authored requests: the reviewed file that states them (a curation or extension file), and why they were written. */
  file: z.string().optional(),
  reason: z.string().optional(),
});

export const Provenance = z.object({
  sources: z.array(ProvenanceSource).min(1),
  /**
   * Code the upstream text held that reproduces the reference implementation, taken out and
   * replaced by a neutral sentence (SPEC §2.4): what each was and how many reference lines it held.
   */
  excerpts_removed: z.array(z.object({ kind: z.enum(["code_block", "lines"]), reference_lines: z.number().int().positive() })).optional(),
  /** A quote of the reference a maintainer approved, with why (a curation file's `approve_quote`): validate lets it pass. */
  quote_approved: z.object({ reviewer: z.string(), reason: z.string(), file: z.string() }).optional(),
  /** Set when a maintainer's curation file changed this request; never applied silently. */
  curation: z.object({ action: z.enum(["edit", "merge", "drop", "add"]), reviewer: z.string(), reason: z.string(), file: z.string() }).optional(),
});
export type Provenance = z.infer<typeof Provenance>;

export const Request = z.object({
  /** 1-based position among the task's substantive requests. */
  stage: z.number().int().positive(),
  text: z.string().min(1),
  provenance: Provenance,
  /**
   * A benchmark-authored extension's stage (SPEC §2.4): the fail-to-pass tests its own test patch
   * adds, which fail with everything before this stage and pass from it on. Upstream stages have
   * none: the audit links their tests from what the requests say.
   */
  tests: z.array(z.string()).min(1).optional(),
});
export type Request = z.infer<typeof Request>;

/** A task t = (R_t, Q_t, V_t) of SPEC §1. */
export const Task = z.object({
  id: TaskId,
  snapshot: z.object({ repo: RepoName, base_commit: CommitSha, environment: EnvironmentRecipe }),
  requests: z.array(Request).min(1),
  verifier: z.object({
    test_patch: z.string(),
    test_command: z.string(),
    fail_to_pass: z.array(z.string()).min(1),
    pass_to_pass: z.array(z.string()).min(1),
  }),
  source_files: z.array(z.string()).min(1),
  source_dirs: z.array(z.string()).min(1),
  /** Two or more substantive requests: the task can be suspended and resumed (SPEC §1). */
  focus_candidate: z.boolean(),
  /** A maintainer's curation file changed the reconstruction (see each request's provenance). */
  curated: z.boolean(),
});
export type Task = z.infer<typeof Task>;

/** How reconstruct classified one discussion item, and the stage it fed: kept for curators. */
export const CommentClassRecord = z.object({
  task_id: TaskId,
  item_id: z.number().int(),
  kind: z.enum(["issue_comment", "review", "review_comment"]),
  author: z.string(),
  created_at: IsoTimestamp,
  url: z.string(),
  round: z.number().int().nonnegative().nullable(),
  class: z.enum([
    "substantive",
    "suggestion",
    "bot",
    "approval_only",
    "progress_only",
    "duplicate",
    "question",
    "dismissed",
    "needs_reference",
    "no_requirement",
    "author",
    "post_merge",
    "empty",
  ]),
  reason: z.string(),
  stage: z.number().int().positive().nullable(),
});
export type CommentClassRecord = z.infer<typeof CommentClassRecord>;
