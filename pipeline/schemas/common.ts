import { z } from "zod";

/** `owner/name`, as GitHub spells it. */
export const RepoName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*\/[A-Za-z0-9_.-]+$/, "expected owner/name, for example psf/requests");
export type RepoName = z.infer<typeof RepoName>;

/** A full 40-hex git object id; abbreviated ids are refused because they are not stable. */
export const CommitSha = z.string().regex(/^[0-9a-f]{40}$/, "expected a full 40-character lowercase hex commit id");

/** Task ids follow SWE-bench's `owner__name-NUMBER` so records from both sources share one namespace. */
export const TaskId = z.string().regex(/^[A-Za-z0-9_.-]+__[A-Za-z0-9_.-]+-[0-9]+$/, "expected owner__name-NUMBER, for example psf__requests-1234");
export type TaskId = z.infer<typeof TaskId>;

export const IsoTimestamp = z.iso.datetime({ offset: true });

export const StageName = z.enum([
  "mine",
  "split",
  "qualify",
  "reconstruct",
  "audit",
  "oracle",
  "locality",
  "answers",
  "select",
  "schedule",
  "validate",
  "emit",
]);
export type StageName = z.infer<typeof StageName>;

/**
 * Why a record left the pipeline. An enum, not free text, so that auditors can count rejects
 * by reason across runs and stages.
 */
export const RejectReason = z.enum([
  // input problems
  "malformed_record",
  "missing_field",
  "invalid_field",
  "duplicate_record",
  "unknown_repository",
  // mine
  "not_found",
  "not_merged",
  /** GitHub refuses the run's token the pull request (a 403 that is no rate limit): a fact about the token, until it is given access. */
  "forbidden",
  "no_traceable_source",
  "commits_not_in_git",
  "incomplete_source",
  // split
  "unparsable_diff",
  "patch_does_not_apply",
  "no_source_changes",
  "no_test_changes",
  // split: a benchmark-authored extension that is not what its file says (schema, classes, no test, rewritten tests)
  "invalid_extension",
  // qualify
  "build_failed",
  "timeout",
  "run_failed",
  "no_fail_to_pass",
  "no_pass_to_pass",
  "regression",
  "all_unstable",
  "infrastructure_fault",
  // qualify: an extension's tests pass before its own implementation, or a later stage breaks an earlier one's tests
  "extension_test_passes_early",
  "extension_not_verified",
  "extension_breaks_earlier_stage",
  // reconstruct / audit
  "too_few_stages",
  "audit_excluded",
  "unjustified_test",
  "unfair_verifier",
  // select / validate / oracle
  "not_enough_interruptions",
  "validation_failed",
  "oracle_failed",
  // transient: a full disk, an unreachable server, a killed process; never cached, retried next run
  "transient_failure",
  // the engine's catch-all for a bug in a stage; never cached, so a fixed stage retries it
  "internal_error",
]);
export type RejectReason = z.infer<typeof RejectReason>;

export const Reject = z.object({
  stage: StageName,
  record_id: z.string(),
  reason: RejectReason,
  message: z.string(),
  file: z.string().optional(),
  line: z.number().int().positive().optional(),
  field: z.string().optional(),
});
export type Reject = z.infer<typeof Reject>;

export const FileClass = z.enum(["test", "source", "docs", "other"]);
export type FileClass = z.infer<typeof FileClass>;

export const TestStatus = z.enum(["passed", "failed", "error", "skipped", "xfailed", "xpassed", "absent", "timeout"]);
export type TestStatus = z.infer<typeof TestStatus>;

export const LocalityClass = z.enum(["near", "far"]);
export type LocalityClass = z.infer<typeof LocalityClass>;
