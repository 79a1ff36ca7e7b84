import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { DEBIAN_FOR_PYTHON } from "../executors/docker.ts";
import { git } from "../git.ts";
import { BUILD_DIRS, ignoredDir } from "../checkouts/ignored.ts";

import { join, resolve } from "node:path";
import { writeFileAtomic } from "../atomic.ts";
import { InputError } from "../validation.ts";
import { profileFileName } from "./load.ts";
import { RepoName, type RepoName as RepoNameT } from "../schemas/common.ts";
import { type EnvironmentRecipeInput, RepoProfile, type RepoProfileInput, type TestRunner } from "../schemas/repo-profile.ts";

export interface DraftResult {
  path: string;
  profile: RepoProfile;
  /** What the maintainer should check: every guess the draft made. */
  notes: string[];
}

/** A task whose era the draft must fit: its base revision, and its SWE-bench version if known. */
export interface DraftTask {
  id: string;
  baseCommit: string;
  version?: string;
}

const TEST_DIR_NAMES = ["test", "tests", "testing"];
const DOCS_DIR_NAMES = ["docs", "doc", "documentation"];
const TEST_EXTRAS = ["test", "tests", "testing", "dev"];
/** The Python versions an executor can give without downloading one: Debian's (docker executor). */
const OFFERED_PYTHONS = Object.keys(DEBIAN_FOR_PYTHON)
  .map((v) => Number(v.split(".")[1]))
  .sort((a, b) => a - b);

/** The files of one revision of the repository: the working tree of a clone, or a commit in it. */
interface SourceTree {
  readonly label: string;
  read(path: string): string | undefined;
  /** Entries of a directory ("" is the root): names and whether each is a directory. */
  list(dir: string): { name: string; dir: boolean }[];
}

function workingTree(root: string): SourceTree {
  return {
    label: "the working tree",
    read: (path) => (existsSync(join(root, path)) && statSync(join(root, path)).isFile() ? readFileSync(join(root, path), "utf8") : undefined),
    list: (dir) =>
      existsSync(join(root, dir)) && statSync(join(root, dir)).isDirectory()
        ? readdirSync(join(root, dir), { withFileTypes: true }).map((e) => ({ name: e.name, dir: e.isDirectory() }))
        : [],
  };
}

/** A commit's tree, read with git (one ls-tree, then git show per file read). */
async function revisionTree(clone: string, commit: string): Promise<SourceTree> {
  const paths = (await git(["ls-tree", "-r", "--name-only", "-z", commit], { cwd: clone })).split("\0").filter(Boolean);
  const files = new Set(paths);
  const children = new Map<string, Map<string, boolean>>();
  for (const path of paths) {
    const parts = path.split("/");
    for (let i = 0; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      if (!children.has(dir)) children.set(dir, new Map());
      children.get(dir)!.set(parts[i]!, i < parts.length - 1);
    }
  }
  const texts = new Map<string, string>();
  for (const path of ["pyproject.toml", "setup.cfg", "setup.py", "tox.ini"]) {
    if (files.has(path)) texts.set(path, await git(["show", `${commit}:${path}`], { cwd: clone }));
  }
  return {
    label: commit.slice(0, 12),
    read: (path) => texts.get(path) ?? (files.has(path) ? "" : undefined),
    list: (dir) => [...(children.get(dir) ?? new Map<string, boolean>())].map(([name, isDir]) => ({ name, dir: isDir })),
  };
}

/** Directories (relative paths) at most `depth` levels down whose name is in `names`. */
function findDirs(tree: SourceTree, names: string[], depth: number, prefix = ""): string[] {
  if (depth < 0) return [];
  const found: string[] = [];
  for (const entry of tree.list(prefix).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (!entry.dir || ignoredDir(entry.name) || BUILD_DIRS.has(entry.name)) continue;
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (names.includes(entry.name)) found.push(rel);
    else found.push(...findDirs(tree, names, depth - 1, rel));
  }
  return found;
}

/** Importable package roots: `src/<pkg>` or top-level directories holding an `__init__.py`. */
function packageRoots(tree: SourceTree): string[] {
  const roots: string[] = [];
  for (const base of ["src", ""]) {
    for (const entry of tree.list(base).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const rel = base ? `${base}/${entry.name}` : entry.name;
      if (entry.dir && !TEST_DIR_NAMES.includes(entry.name) && tree.read(`${rel}/__init__.py`) !== undefined) roots.push(rel);
    }
  }
  return roots;
}

/**
 * The Python a revision was made for, among the versions the executors offer without a download:
 * the newest offered one the trove classifiers (or requires-python) allow, else the offered one
 * closest above what they name, noted for the maintainer.
 */
function pythonVersion(texts: string[], notes: string[], where: string): string {
  const classified = texts.flatMap((t) => [...t.matchAll(/Programming Language :: Python :: 3\.(\d+)/g)].map((m) => Number(m[1])));
  let minors = [...new Set(classified)].sort((a, b) => a - b);
  let source = "the trove classifiers";
  if (!minors.length) {
    for (const text of texts) {
      const match = /(?:requires-python|python_requires)\s*=\s*["']?\s*(?:>=|~=)\s*3\.(\d+)/.exec(text);
      if (match) {
        minors = [Number(match[1])];
        source = `requires-python >=3.${match[1]}`;
        break;
      }
    }
  }
  if (!minors.length) {
    notes.push(`${where}: python 3.11: nothing in pyproject.toml, setup.cfg or setup.py says which Python; check the CI config`);
    return "3.11";
  }
  const newest = minors.at(-1)!;
  const offered =
    OFFERED_PYTHONS.filter((m) => m <= newest && m >= minors[0]!).at(-1) ?? OFFERED_PYTHONS.find((m) => m >= minors[0]!) ?? OFFERED_PYTHONS.at(-1)!;
  notes.push(
    `${where}: python 3.${offered}: ${source} name 3.${minors.join(", 3.")}; the executors offer 3.${OFFERED_PYTHONS.join(", 3.")} without a download${minors.includes(offered) ? "" : ` (3.${offered} is not among them: check the suite runs on it, or use a uv-managed Python on a machine with internet)`}`,
  );
  return `3.${offered}`;
}

/** The name of an extra that installs test dependencies, from pyproject.toml, setup.cfg or setup.py. */
function testExtra(pyproject: string, setupCfg: string, setupPy: string): string | undefined {
  for (const extra of TEST_EXTRAS) {
    if (new RegExp(`^\\s*${extra}\\s*=\\s*\\[`, "m").test(pyproject) && /optional-dependencies/.test(pyproject)) return extra;
    if (new RegExp(`^\\s*${extra}\\s*=`, "m").test(setupCfg) && /\[options\.extras_require\]/.test(setupCfg)) return extra;
    if (new RegExp(`["']${extra}["']\\s*:`).test(setupPy) && /extras_require/i.test(setupPy)) return extra;
  }
  return undefined;
}

function requirementFiles(tree: SourceTree): string[] {
  const candidates = [
    "requirements-test.txt",
    "requirements-tests.txt",
    "test-requirements.txt",
    "requirements_test.txt",
    "requirements-dev.txt",
    "requirements_dev.txt",
    "requirements/test.txt",
    "requirements/tests.txt",
    "requirements/testing.txt",
    "requirements/dev.txt",
  ];
  return candidates.filter((c) => tree.read(c) !== undefined);
}

/** The runner a revision's suite needs: Django's tests/runtests.py, sympy's bin/test, or pytest. */
function testRunner(tree: SourceTree, roots: string[]): TestRunner {
  if (tree.read("tests/runtests.py") !== undefined && roots.includes("django")) return "django";
  if (tree.read("bin/test") !== undefined && roots.includes("sympy")) return "sympy";
  return "pytest";
}

/** The environment one revision needs, with every guess noted. */
function draftRecipe(tree: SourceTree, notes: string[]): EnvironmentRecipeInput {
  const pyproject = tree.read("pyproject.toml") ?? "";
  const setupCfg = tree.read("setup.cfg") ?? "";
  const setupPy = tree.read("setup.py") ?? "";
  const toxIni = tree.read("tox.ini") ?? "";
  const where = tree.label;
  const python = pythonVersion([pyproject, setupCfg, setupPy], notes, where);
  const extra = testExtra(pyproject, setupCfg, setupPy);
  const reqs = requirementFiles(tree);
  const runner = testRunner(tree, packageRoots(tree));
  notes.push(
    `${where}: installs the repository (editable${extra ? `, extra '${extra}'` : ""})${reqs.length ? ` and ${reqs.join(", ")}` : ""}; test runner ${runner}`,
  );
  const toxCommand = /^\s*commands\s*=\s*(.*pytest.*)$/m.exec(toxIni)?.[1]?.trim();
  if (toxCommand) notes.push(`${where}: tox runs '${toxCommand}'; the repository's pytest configuration is kept, put extra options in test_options`);
  return { python, project: { editable: true, extras: extra ? [extra] : [] }, requirements_files: reqs, test_runner: runner };
}

/** The draft's classification, from one revision (the latest the tasks use, or the working tree). */
function draftClassification(tree: SourceTree, notes: string[]): NonNullable<RepoProfileInput["classification"]> {
  const testDirs = findDirs(tree, TEST_DIR_NAMES, 3);
  const docsDirs = findDirs(tree, DOCS_DIR_NAMES, 0);
  const roots = packageRoots(tree);
  notes.push(`test directories found: ${testDirs.join(", ") || "none (tests may sit beside the code as test_*.py)"}`);
  notes.push(`package roots: ${roots.join(", ") || "none found; *.rst/*.md files below the top level will count as source"}`);
  const overrides: NonNullable<RepoProfileInput["classification"]>["overrides"] = [];
  // A package directory called test/testing (django.test, numpy.testing) is public API, not tests.
  for (const dir of testDirs) {
    if (
      tree.read(`${dir}/__init__.py`) !== undefined &&
      roots.some((r) => dir.startsWith(r + "/")) &&
      !tree.list(dir).some((f) => !f.dir && /^test_.*\.py$/.test(f.name))
    ) {
      overrides!.push({ globs: [`${dir}/**`], class: "source", why: `${dir} is a package module without test_*.py files (public testing helpers)` });
      notes.push(`${dir} looks like library code named like a test directory; classified as source by an override`);
    }
  }
  return {
    overrides,
    test_dirs: [...new Set(["test", "tests", "testing", ...testDirs.map((d) => d.split("/").pop()!)])],
    docs_dirs: [...new Set(["docs", "doc", ...docsDirs])],
    package_roots: roots,
    conftest: "test",
  };
}

/**
 * The recipes of several eras as one profile: the recipe most tasks need is the environment; each
 * other era is an override, by SWE-bench version when its tasks' versions are theirs alone, else
 * by task id.
 */
function recipesByEra(eras: { tasks: DraftTask[]; recipe: EnvironmentRecipeInput }[]): {
  environment: EnvironmentRecipeInput;
  overrides: RepoProfileInput["environment_overrides"];
} {
  const groups = new Map<string, { tasks: DraftTask[]; recipe: EnvironmentRecipeInput }>();
  for (const era of eras) {
    const key = JSON.stringify(era.recipe);
    const group = groups.get(key) ?? { tasks: [], recipe: era.recipe };
    group.tasks.push(...era.tasks);
    groups.set(key, group);
  }
  // the largest group is the base; among equals the last (the latest era)
  const ordered = [...groups.values()];
  const base = ordered.reduce((best, g) => (g.tasks.length >= best.tasks.length ? g : best));
  const overrides: NonNullable<RepoProfileInput["environment_overrides"]> = [];
  for (const group of ordered) {
    if (group === base) continue;
    const versions = [...new Set(group.tasks.map((t) => t.version))] as (string | undefined)[];
    const theirsAlone =
      versions.every((v) => v !== undefined) && ordered.every((g) => g === group || g.tasks.every((t) => !versions.includes(t.version as string)));
    const patch = Object.fromEntries(
      Object.entries(group.recipe).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify((base.recipe as Record<string, unknown>)[k])),
    );
    overrides.push({
      ...(theirsAlone ? { versions: versions as string[] } : { tasks: group.tasks.map((t) => t.id).sort() }),
      recipe: patch,
      why: `drafted from ${group.tasks.map((t) => t.baseCommit.slice(0, 12)).join(", ")}`,
    });
  }
  return { environment: base.recipe, overrides };
}

/**
 * Writes a draft profile from what a clone shows; every guess is listed for the maintainer to
 * review. Given tasks, it reads the repository at their earliest and latest base revisions (and
 * every one between: a recipe is drafted per base revision) instead of the working tree, since
 * a repository's HEAD says little about how it was built years ago.
 */
export async function draftProfile(
  repo: string,
  clonePath: string,
  options: { out?: string; force?: boolean; tasks?: DraftTask[] } = {},
): Promise<DraftResult> {
  const repoName: RepoNameT = RepoName.parse(repo);
  const root = resolve(clonePath);
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new InputError(`--clone ${clonePath}: not a directory`);
  const notes: string[] = [];
  let classification;
  let environment: EnvironmentRecipeInput;
  let overrides: RepoProfileInput["environment_overrides"] = [];
  if (options.tasks?.length) {
    const dated = [];
    for (const task of options.tasks) {
      const date = await git(["log", "-1", "--format=%cI", task.baseCommit], { cwd: root }).catch(() => {
        throw new InputError(`task ${task.id}: base commit ${task.baseCommit} is not in the clone at ${clonePath} (fetch it first)`);
      });
      dated.push({ task, date: date.trim() });
    }
    dated.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
    notes.push(
      `read at the base revisions of ${options.tasks.length} task(s), from ${dated[0]!.task.baseCommit.slice(0, 12)} (${dated[0]!.date.slice(0, 10)}) to ${dated.at(-1)!.task.baseCommit.slice(0, 12)} (${dated.at(-1)!.date.slice(0, 10)})`,
    );
    const eras: { tasks: DraftTask[]; recipe: EnvironmentRecipeInput }[] = [];
    const trees = new Map<string, SourceTree>();
    for (const { task } of dated) {
      if (!trees.has(task.baseCommit)) trees.set(task.baseCommit, await revisionTree(root, task.baseCommit));
      const recipe = draftRecipe(trees.get(task.baseCommit)!, []);
      eras.push({ tasks: [task], recipe });
    }
    // the notes of the earliest and the latest revision are the ones worth reading
    draftRecipe(trees.get(dated[0]!.task.baseCommit)!, notes);
    if (dated.length > 1) draftRecipe(trees.get(dated.at(-1)!.task.baseCommit)!, notes);
    classification = draftClassification(trees.get(dated.at(-1)!.task.baseCommit)!, notes);
    ({ environment, overrides } = recipesByEra(eras));
    if (overrides?.length) notes.push(`${overrides.length} era(s) need another recipe than the rest: written as environment_overrides`);
  } else {
    const tree = workingTree(root);
    classification = draftClassification(tree, notes);
    environment = draftRecipe(tree, notes);
    notes.push("drafted from the working tree (HEAD); pass --tasks FILE to draft from the tasks' own base revisions");
  }
  const draft: RepoProfileInput = {
    repo: repoName,
    clone_url: root,
    classification,
    environment,
    ...(overrides?.length ? { environment_overrides: overrides } : {}),
    notes: "Draft written by 'switch-swe repo init'; review every field, then check it with 'switch-swe fidelity'.",
  };
  const profile = RepoProfile.parse(draft);
  const path = options.out ?? join("data", "repos", profileFileName(repoName));
  if (existsSync(path) && !options.force) throw new InputError(`${path} exists; pass --force to overwrite it`);
  await writeFileAtomic(path, JSON.stringify(profile, null, 2) + "\n");
  return { path, profile, notes };
}

/** Tasks from a JSON Lines file: SWE-bench-family records or split records (id, base commit, version). */
export function readDraftTasks(file: string): DraftTask[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .map((line, i) => ({ line: line.trim(), number: i + 1 }))
    .filter(({ line }) => line)
    .map(({ line, number }) => {
      let raw: Record<string, unknown>;
      try {
        raw = JSON.parse(line) as Record<string, unknown>;
      } catch (error) {
        throw new InputError(`${file}: line ${number}: not valid JSON (${(error as Error).message})`);
      }
      const id = raw.instance_id ?? raw.task_id ?? raw.id;
      if (typeof id !== "string" || typeof raw.base_commit !== "string")
        throw new InputError(
          `${file}: line ${number}: field ${typeof id !== "string" ? "instance_id" : "base_commit"}: missing (expected a SWE-bench record or a split record)`,
        );
      return { id, baseCommit: raw.base_commit, ...(typeof raw.version === "string" ? { version: raw.version } : {}) };
    });
}
