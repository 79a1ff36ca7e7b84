import { z } from "zod";
import { FileClass, RepoName } from "./common.ts";

/**
 * One override: paths matching any glob get `class`. Overrides are tried in order, first match
 * wins, before the default path-segment rules.
 */
export const ClassificationOverride = z.object({
  globs: z.array(z.string().min(1)).min(1),
  class: FileClass,
  why: z.string().optional(),
});

export const ClassificationRules = z.object({
  overrides: z.array(ClassificationOverride).default([]),
  /** Directory names (path segments) that hold tests. */
  test_dirs: z.array(z.string().min(1)).default(["test", "tests", "testing"]),
  /** Directory names that hold documentation. */
  docs_dirs: z.array(z.string().min(1)).default(["docs", "doc"]),
  /** Top-level package roots: `*.rst`/`*.md` under them are source (docstrings, package data), not docs. */
  package_roots: z.array(z.string()).default([]),
  /**
   * What `conftest.py` is. The SPEC lets a repository decide; pytest fixtures belong with the
   * tests by default because the verifier replaces them with the held-out versions.
   */
  conftest: FileClass.default("test"),
});
export type ClassificationRules = z.infer<typeof ClassificationRules>;

export const EnvironmentRecipe = z.object({
  python: z.string().regex(/^3\.[0-9]+$/, "expected a Python minor version such as 3.11"),
  debian_packages: z.array(z.string()).default([]),
  /** Commands run in the checkout after the requirements are installed, e.g. `pip install -e .`. */
  install: z.array(z.string()).default([]),
  pip_requirements: z.array(z.string()).default([]),
  /**
   * The test command; `{tests}` is replaced by the node ids to run and `{junit}` by the report path
   * outside the checkout.
   */
  test_command: z.string().default("python -m pytest -p no:cacheprovider -rA --junitxml={junit} {tests}"),
  test_timeout_seconds: z.number().int().positive().default(900),
  install_timeout_seconds: z.number().int().positive().default(1800),
});
export type EnvironmentRecipe = z.infer<typeof EnvironmentRecipe>;

export const RecipeOverride = z.object({
  /** Applies to tasks whose SWE-bench `version` is in this list, or whose id is in `tasks`. */
  versions: z.array(z.string()).default([]),
  tasks: z.array(z.string()).default([]),
  recipe: EnvironmentRecipe.partial(),
});

export const RepoProfile = z.object({
  repo: RepoName,
  /** Where to clone from: a URL or a local path, for mirrors and offline work. */
  clone_url: z.string().optional(),
  classification: ClassificationRules.default(ClassificationRules.parse({})),
  environment: EnvironmentRecipe,
  environment_overrides: z.array(RecipeOverride).default([]),
  notes: z.string().optional(),
});
export type RepoProfile = z.infer<typeof RepoProfile>;
export type RepoProfileInput = z.input<typeof RepoProfile>;
