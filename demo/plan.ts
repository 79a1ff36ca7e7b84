import { z } from "zod";
import { RepoName } from "../pipeline/schemas/common.ts";

export const PullRequestPlan = z.strictObject({
  kind: z.enum(["feature", "regression", "flaky", "no_tests", "docs_only", "changelog_only", "rename", "delete"]),
  modules: z.array(z.string()).max(4),
  rounds: z.number().int().min(0).max(5),
  link: z.enum(["keyword", "keyword_lower", "keyword_colon", "commit_keyword", "cross_repo", "url", "timeline", "sidebar", "none"]),
  merge: z.enum(["merge", "squash"]).default("merge"),
  rename_to: z.string().optional(),
  /**
   * Pull requests listed one after another with the same wave are open at the same time: each
   * branches from main as the wave began, so none's base holds another's change (the sessions'
   * "unfinished tasks", SPEC §2.7). They must change different files.
   */
  wave: z.number().int().positive().optional(),
  extras: z
    .array(z.enum(["conftest", "binary", "unjustified_test", "decoy_mention", "post_merge_comment", "order_dependent", "moved_issues", "many_commits"]))
    .default([]),
});
export type PullRequestPlan = z.infer<typeof PullRequestPlan>;

export const RepositoryPlan = z.strictObject({
  repo: RepoName,
  family: z.enum(["numeric", "text", "money"]),
  /** src: src/<package>/, tests/ at the root; flat: <package>/ and tests/; inpackage: <package>/tests/. */
  layout: z.enum(["src", "flat", "inpackage"]),
  package: z.string().regex(/^[a-z_][a-z0-9_]*$/),
  modules: z.array(z.string().min(1)).min(1),
  top_level_modules: z.array(z.string()).default([]),
  files: z.record(z.string(), z.string()).default({}),
  pull_requests: z.array(PullRequestPlan).min(1),
});
export type RepositoryPlan = z.infer<typeof RepositoryPlan>;

export const CorpusPlan = z.strictObject({
  seed: z.string(),
  start: z.iso.datetime(),
  repositories: z.array(RepositoryPlan).min(1),
});
export type CorpusPlan = z.infer<typeof CorpusPlan>;
