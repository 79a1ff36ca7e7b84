import type { FileClass } from "../schemas/common.ts";
import type { ClassificationRules } from "../schemas/repo-profile.ts";
import picomatch from "picomatch";

/** Which rule decided a file's class; kept so an auditor can see why a file went where it did. */
export interface Classification {
  class: FileClass;
  rule: string;
}

const TEST_FILE = /^(test_.*\.py|.*_test\.py|tests\.py)$/;

/** A file name Python test runners collect by default (`test_*.py`, `*_test.py`, `tests.py`). */
export function isTestFileName(path: string): boolean {
  return TEST_FILE.test(path.slice(path.lastIndexOf("/") + 1));
}
const CHANGELOG = /^(changes|changelog|history|news|release[-_]?notes|whatsnew)(\.[a-z]+)?$/i;
/**
 * Directories of news fragments (towncrier and friends: pytest's `changelog/`, `newsfragments/`,
 * astropy's `docs/changes/`, pylint's `doc/whatsnew/`), wherever they sit: everything in them but
 * Python code is docs (a package that happens to be called `changes` keeps its modules).
 */
const NEWS_DIRS = new Set([
  "changelog",
  "changelog.d",
  "newsfragments",
  "news",
  "changes",
  "release-notes",
  "releasenotes",
  "whatsnew",
  "whats-new",
  "whats_new",
]);
const DOC_EXTENSIONS = /\.(rst|md|txt|adoc)$/i;
const CI_DIRS = new Set([".github", ".circleci", ".azure-pipelines", ".gitlab", ".ci"]);
/** Packaging, CI and tooling files at the repository root: project metadata, not code under test. */
const METADATA =
  /^(setup\.py|setup\.cfg|pyproject\.toml|manifest\.in|tox\.ini|noxfile\.py|pytest\.ini|requirements.*\.(txt|in)|pipfile(\.lock)?|poetry\.lock|uv\.lock|makefile|\.travis\.yml|\.gitlab-ci\.yml|appveyor\.yml|azure-pipelines\.yml|codecov\.ya?ml|\.coveragerc|\.flake8|\.pylintrc|\.pre-commit-config\.yaml|\.readthedocs\.ya?ml|\.gitignore|\.gitattributes|\.mailmap|\.editorconfig|license(\.[a-z]+)?|copying|authors(\.[a-z]+)?|contributors(\.[a-z]+)?|codeowners|\.git-blame-ignore-revs)$/i;

/**
 * Classifies a repository path as test, source, docs or other, by path segments and file-name
 * patterns (never substrings: `contest.py` is source, `latest/` is not a test directory).
 * A profile's overrides come first, in order.
 */
export function classifyPath(path: string, rules: ClassificationRules): Classification {
  for (const [index, override] of rules.overrides.entries()) {
    if (override.globs.some((glob) => globMatcher(glob)(path))) return { class: override.class, rule: `override[${index}]` };
  }
  const segments = path.split("/");
  const name = segments[segments.length - 1]!;
  const dirs = segments.slice(0, -1);

  if (name === "conftest.py") return { class: rules.conftest, rule: "conftest" };
  if (dirs.some((d) => rules.test_dirs.includes(d))) return { class: "test", rule: "test_dir" };
  if (TEST_FILE.test(name)) return { class: "test", rule: "test_file_name" };
  if (!name.endsWith(".py") && (dirs.some((d) => NEWS_DIRS.has(d.toLowerCase())) || CHANGELOG.test(name))) {
    return { class: "docs", rule: "changelog" };
  }
  if (dirs.length > 0 && rules.docs_dirs.includes(dirs[0]!)) return { class: "docs", rule: "docs_dir" };
  if (dirs.some((d) => CI_DIRS.has(d))) return { class: "other", rule: "ci" };
  if (dirs.length === 0 && METADATA.test(name)) return { class: "other", rule: "metadata" };
  // Prose beside the code (package data, docstring includes) is source; prose outside it is docs.
  // Without declared package roots only the top level counts as outside.
  const outside = rules.package_roots.length ? !insidePackage(path, rules) : dirs.length === 0;
  if (DOC_EXTENSIONS.test(name) && outside) return { class: "docs", rule: "docs_extension" };
  return { class: "source", rule: "default_source" };
}

function insidePackage(path: string, rules: ClassificationRules): boolean {
  return rules.package_roots.some((root) => root !== "" && (path === root || path.startsWith(root.endsWith("/") ? root : root + "/")));
}

const globCache = new Map<string, (path: string) => boolean>();
/**
 * A profile glob as a matcher (picomatch: `*` within a segment, `**` across segments, `?`, `[ab]`
 * classes, `{a,b}` alternatives). Dot files match like any other: a profile rule about
 * `.github/**` must not silently miss.
 */
export function globMatcher(glob: string): (path: string) => boolean {
  let match = globCache.get(glob);
  if (!match) globCache.set(glob, (match = picomatch(glob, { dot: true })));
  return match;
}
