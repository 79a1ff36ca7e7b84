/**
 * Directories that hold environments, caches and tool state, never a checkout's work: what a
 * snapshot does not read, what the collected artifact leaves out, what a drafted profile does not
 * walk. One list, so what an agent is seen to change and what it is scored on never differ.
 */
export const IGNORED_DIRS: ReadonlySet<string> = new Set([
  ".git",
  "__pycache__",
  ".pytest_cache",
  ".mypy_cache",
  ".ruff_cache",
  ".hypothesis",
  ".tox",
  ".nox",
  ".venv",
  "venv",
  ".eggs",
  "node_modules",
  "htmlcov",
  ".ipynb_checkpoints",
  ".cache",
]);

/** How a package's build metadata directory's name ends (`pkg.egg-info`): ignored too, at any depth. */
export const IGNORED_DIR_SUFFIX = ".egg-info";

/** Whether a directory of that name is ignored: one of IGNORED_DIRS, or a package's build metadata. */
export function ignoredDir(name: string): boolean {
  return IGNORED_DIRS.has(name) || name.endsWith(IGNORED_DIR_SUFFIX);
}

/** Build outputs: ignored at a checkout's top level only (a package may have a `build` module). */
export const BUILD_DIRS: ReadonlySet<string> = new Set(["build", "dist"]);
