import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import type { Command } from "commander";
import { type ExitCode, type Io, requirePath } from "../io.ts";
import { join, resolve } from "node:path";
import { writeFileAtomic } from "../../atomic.ts";
import { InputError } from "../../validation.ts";
import { profileFileName } from "../../domain/profiles.ts";
import { RepoName, type RepoName as RepoNameT } from "../../schemas/common.ts";
import { RepoProfile, type RepoProfileInput } from "../../schemas/repo-profile.ts";

export interface DraftResult {
  path: string;
  profile: RepoProfile;
  /** What the maintainer should check: every guess the draft made. */
  notes: string[];
}

const TEST_DIR_NAMES = ["test", "tests", "testing"];
const DOCS_DIR_NAMES = ["docs", "doc", "documentation"];
const SKIP_DIRS = new Set([".git", ".tox", ".nox", "node_modules", ".venv", "venv", "build", "dist", "__pycache__", ".eggs"]);
const TEST_EXTRAS = ["test", "tests", "testing", "dev"];

function read(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, "utf8") : undefined;
}

function isDir(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}

/** Directories (relative paths) at most `depth` levels down whose name is in `names`. */
function findDirs(root: string, names: string[], depth: number, prefix = ""): string[] {
  if (depth < 0) return [];
  const found: string[] = [];
  for (const entry of readdirSync(join(root, prefix), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (!entry.isDirectory() || SKIP_DIRS.has(entry.name) || entry.name.endsWith(".egg-info")) continue;
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (names.includes(entry.name)) found.push(rel);
    else found.push(...findDirs(root, names, depth - 1, rel));
  }
  return found;
}

/** Importable package roots: `src/<pkg>` or top-level directories holding an `__init__.py`. */
function packageRoots(root: string): string[] {
  const roots: string[] = [];
  for (const base of ["src", ""]) {
    const dir = join(root, base);
    if (!isDir(dir)) continue;
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.isDirectory() && !TEST_DIR_NAMES.includes(entry.name) && existsSync(join(dir, entry.name, "__init__.py"))) {
        roots.push(base ? `${base}/${entry.name}` : entry.name);
      }
    }
  }
  return roots;
}

/** Picks a Python version from trove classifiers or requires-python, capped at what the executors ship. */
function pythonVersion(texts: string[], notes: string[]): string {
  const classified = texts
    .flatMap((t) => [...t.matchAll(/Programming Language :: Python :: 3\.(\d+)/g)].map((m) => Number(m[1])))
    .filter((minor) => minor >= 6 && minor <= 11);
  if (classified.length) {
    const minor = Math.max(...classified);
    notes.push(`python 3.${minor}: the newest 3.x (up to 3.11) in the trove classifiers; old revisions may need an older one (environment_overrides)`);
    return `3.${minor}`;
  }
  for (const text of texts) {
    const match = /(?:requires-python|python_requires)\s*=\s*["']?\s*>=\s*3\.(\d+)/.exec(text);
    if (match) {
      const minor = Math.min(11, Math.max(Number(match[1]), 8));
      notes.push(`python 3.${minor}: from requires-python >=3.${match[1]}`);
      return `3.${minor}`;
    }
  }
  notes.push("python 3.11: nothing in pyproject.toml or setup.cfg says which Python; check the CI config");
  return "3.11";
}

/** The name of an extra that installs test dependencies, from pyproject.toml or setup.cfg. */
function testExtra(pyproject: string, setupCfg: string): string | undefined {
  for (const extra of TEST_EXTRAS) {
    if (new RegExp(`^\\s*${extra}\\s*=\\s*\\[`, "m").test(pyproject) && /optional-dependencies/.test(pyproject)) return extra;
    if (new RegExp(`^\\s*${extra}\\s*=`, "m").test(setupCfg) && /\[options\.extras_require\]/.test(setupCfg)) return extra;
  }
  return undefined;
}

function requirementFiles(root: string): string[] {
  const candidates = ["requirements-test.txt", "requirements-tests.txt", "test-requirements.txt", "requirements-dev.txt", "requirements/test.txt", "requirements/tests.txt", "requirements/testing.txt", "requirements/dev.txt"];
  return candidates.filter((c) => existsSync(join(root, c)));
}

/** Writes a draft profile from what a clone shows; every guess is listed for the maintainer to review. */
export async function draftProfile(repo: string, clonePath: string, options: { out?: string; force?: boolean } = {}): Promise<DraftResult> {
  const repoName: RepoNameT = RepoName.parse(repo);
  const root = resolve(clonePath);
  if (!isDir(root)) throw new InputError(`--clone ${clonePath}: not a directory`);
  const notes: string[] = [];
  const pyproject = read(join(root, "pyproject.toml")) ?? "";
  const setupCfg = read(join(root, "setup.cfg")) ?? "";
  const setupPy = read(join(root, "setup.py")) ?? "";
  const toxIni = read(join(root, "tox.ini")) ?? "";

  const testDirs = findDirs(root, TEST_DIR_NAMES, 3);
  const docsDirs = findDirs(root, DOCS_DIR_NAMES, 0);
  const roots = packageRoots(root);
  notes.push(`test directories found: ${testDirs.join(", ") || "none (tests may sit beside the code as test_*.py)"}`);
  notes.push(`package roots: ${roots.join(", ") || "none found; *.rst/*.md files below the top level will count as source"}`);
  const overrides: NonNullable<RepoProfileInput["classification"]>["overrides"] = [];
  // A package directory called test/testing (django.test, numpy.testing) is public API, not tests.
  for (const dir of testDirs) {
    if (existsSync(join(root, dir, "__init__.py")) && roots.some((r) => dir.startsWith(r + "/")) && !readdirSync(join(root, dir)).some((f) => /^test_.*\.py$/.test(f))) {
      overrides!.push({ globs: [`${dir}/**`], class: "source", why: `${dir} is a package module without test_*.py files (public testing helpers)` });
      notes.push(`${dir} looks like library code named like a test directory; classified as source by an override`);
    }
  }

  const python = pythonVersion([pyproject, setupCfg, setupPy], notes);
  const extra = testExtra(pyproject, setupCfg);
  const reqs = requirementFiles(root);
  const install = [extra ? `python -m pip install -e '.[${extra}]'` : "python -m pip install -e ."];
  for (const file of reqs) install.push(`python -m pip install -r ${file}`);
  notes.push(`install: ${install.join(" && ")}${extra ? ` (extra '${extra}' found)` : ""}`);
  const pipRequirements = ["pytest"];
  const toxCommand = /^\s*commands\s*=\s*(.*pytest.*)$/m.exec(toxIni)?.[1]?.trim();
  if (toxCommand) notes.push(`tox runs '${toxCommand}'; the test command keeps switch-swe's own pytest options, add what the suite needs`);

  const draft: RepoProfileInput = {
    repo: repoName,
    clone_url: root,
    classification: {
      overrides,
      test_dirs: [...new Set(["test", "tests", "testing", ...testDirs.map((d) => d.split("/").pop()!)])],
      docs_dirs: [...new Set(["docs", "doc", ...docsDirs])],
      package_roots: roots,
      conftest: "test",
    },
    environment: { python, pip_requirements: pipRequirements, install },
    notes: "Draft written by 'switch-swe repo init'; review every field before using it.",
  };
  const profile = RepoProfile.parse(draft);
  const path = options.out ?? join("data", "repos", profileFileName(repoName));
  if (existsSync(path) && !options.force) throw new InputError(`${path} exists; pass --force to overwrite it`);
  await writeFileAtomic(path, JSON.stringify(profile, null, 2) + "\n");
  return { path, profile, notes };
}

export function registerRepo(program: Command, io: Io, exit: ExitCode): void {
  const repo = program.command("repo").description("manage repository profiles");
  repo
    .command("init")
    .description("write a draft repository profile by inspecting a clone, for a maintainer to review")
    .argument("<owner/name>", "the repository, as GitHub spells it")
    .requiredOption("--clone <path>", "a local clone (or checkout) of the repository")
    .option("--out <file>", "where to write the profile (default data/repos/OWNER__NAME.json)")
    .option("--force", "overwrite an existing profile")
    .addHelpText("after", "\nExample:\n  switch-swe repo init psf/requests --clone ~/src/requests")
    .action(
      exit.act(async (repoName: string, opts) => {
        requirePath("--clone", opts.clone, "directory");
        const result = await draftProfile(repoName, opts.clone, { out: opts.out, force: Boolean(opts.force) });
        io.out(`wrote ${result.path}\n${result.notes.map((n: string) => `  review: ${n}\n`).join("")}`);
        return 0;
      }),
    );
}
