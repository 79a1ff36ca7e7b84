import { z } from "zod";
import { CommitSha, FileClass, IsoTimestamp, RepoName, TaskId } from "./common.ts";

export const FileStatus = z.enum(["added", "modified", "deleted", "renamed", "copied", "mode_changed"]);
export type FileStatus = z.infer<typeof FileStatus>;

export const ChangedFile = z.object({
  path: z.string(),
  /** The path before a rename or copy; equal to `path` otherwise. */
  old_path: z.string(),
  status: FileStatus,
  class: FileClass,
  /** The classification rule that decided `class` (for example `test_dir`, `override[0]`), for auditors. */
  rule: z.string(),
  binary: z.boolean(),
  similarity: z.number().int().min(0).max(100).optional(),
  old_mode: z.string().optional(),
  new_mode: z.string().optional(),
});
export type ChangedFile = z.infer<typeof ChangedFile>;

/**
 * One benchmark-authored stage (the study's Appendix C.3): a request written by the benchmark's
 * maintainers, the implementation that satisfies it over the reference fix and the earlier
 * extensions, and the regression tests that check it, from a reviewed extension file.
 */
export const ExtensionStage = z.object({
  /** 1-based among the task's extensions, in the order they apply. */
  index: z.number().int().positive(),
  /** Where it is in its file (`stages.0`, `upstream_commits.stages.1`): what every message about it names. */
  field: z.string(),
  /** The reviewed file it comes from (relative to the config), and who wrote it and why. */
  file: z.string(),
  author: z.string(),
  reason: z.string(),
  /** Placed after this upstream stage (stages as reconstructed and curated); null: after the last. */
  after: z.number().int().min(1).nullable(),
  request: z.string().min(1),
  implementation_patch: z.string().min(1),
  test_patch: z.string().min(1),
  /** The tests its test patch adds (`path::name`, `path::Class::name`): each must be fail-to-pass, failing until this stage. */
  tests: z.array(z.string()).min(1),
  /**
   * A stage from the pull request's own history: its implementation and tests are the upstream
   * commits from the stage before up to this commit; only its request is written (provenance
   * `upstream_commit`).
   */
  commit: CommitSha.optional(),
});
export type ExtensionStage = z.infer<typeof ExtensionStage>;

/** Stage 2's output: the reference change split per SPEC §1 and the task's C_t / D_t. */
export const SplitChange = z.object({
  task_id: TaskId,
  repo: RepoName,
  base_commit: CommitSha,
  implementation_patch: z.string(),
  test_patch: z.string(),
  files: z.array(ChangedFile),
  /** C_t: source files the implementation touches; a rename contributes both its old and new path. */
  source_files: z.array(z.string()).min(1),
  /** D_t: immediate parent directories of C_t; "." is the repository root. */
  source_dirs: z.array(z.string()).min(1),
  /** Docs and other files: recorded, and kept out of both patches. */
  excluded_files: z.array(z.object({ path: z.string(), class: FileClass })),
  /** The classification that produced this split, fixed before selection (SPEC §1). */
  classification: z.object({ profile: z.string(), profile_sha256: z.string() }),
  /**
   * With benchmark-authored extensions: `implementation_patch` and `test_patch` above are the
   * whole reference (the upstream change and every extension's, composed over the base), and
   * this is the upstream change's own implementation, which the extensions' patches apply over.
   */
  upstream_implementation_patch: z.string().optional(),
  /**
   * The upstream change as the repository's history holds it (its source and test files, every
   * commit of the pull request, no benchmark-authored stage): what the answer rule looks for in
   * history and reverses out of a later checkout.
   */
  upstream_patch: z.string(),
  extensions: z.array(ExtensionStage).optional(),
  /** The pull request the change comes from, and the commit GitHub says merged it (null: unknown): where the answer rule looks for the fix in history. */
  pull_number: z.number().int().positive().nullable().default(null),
  merge_commit: CommitSha.nullable().default(null),
  /**
   * The pull request's creation date and its SWE-bench version (absent: none), as mining found
   * them: what dates and picks the task's environment (qualify plans it from the split alone, so
   * no later stage reaches back to mine for them). Null in a split made before they were carried.
   */
  created_at: IsoTimestamp,
  version: z.string().optional(),
});
export type SplitChange = z.infer<typeof SplitChange>;
