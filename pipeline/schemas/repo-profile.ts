import { z } from "zod";
import { FileClass, RepoName } from "./common.ts";

/**
 * One override: paths matching any glob get `class`. Overrides are tried in order, first match
 * wins, before the default path-segment rules.
 */
export const ClassificationOverride = z.strictObject({
  globs: z.array(z.string().min(1)).min(1),
  class: FileClass,
  why: z.string().optional(),
});

/** A path inside the repository's checkout: relative, and never leaving it. */
const CheckoutPath = z
  .string()
  .min(1)
  // A pattern, not a refinement, so the exported JSON Schemas say it too: no leading "/", no ".." segment.
  .regex(/^(?!\/)(?!(?:.*\/)?\.\.(?:\/|$))/, "expected a path relative to the repository root, without '..'");

export const ClassificationRules = z.strictObject({
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
  /**
   * Which changed test files are test modules, run by qualify: glob patterns (`*` within a path
   * segment) matched against a file's name, or, when a pattern has a `/`, against the end of its
   * path. The runner's own defaults; a repository that configures more (pytest's `python_files`
   * has `testing/python/*.py`) lists them, as its configuration does.
   */
  test_modules: z.array(z.string().min(1)).default(["test_*.py", "*_test.py", "tests.py"]),
  /**
   * The repository's own source that is the test runner (pytest's `src/_pytest`): files or
   * directories. The verifier otherwise drops a submission's `_pytest/`, `pytest.py` or `pluggy/`
   * as a stand-in for the runner; here they are the code under test, so they are applied. The
   * guarded runner then runs on the submission's own runner code and cannot hold it to account:
   * these paths are not watched as submitted code (docs/PIPELINE.md, "The verifier").
   */
  test_runner_source: z.array(CheckoutPath).default([]),
});
export type ClassificationRules = z.infer<typeof ClassificationRules>;

/** An RFC 3339 instant or a plain date (midnight UTC), as uv's `--exclude-newer` takes it. */
const Instant = z
  .string()
  .regex(
    /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}))?$/,
    "expected a date (2019-08-21) or an RFC 3339 instant (2019-08-21T10:00:00Z)",
  );
/** A PyPI distribution name, as PEP 508 spells one. */
const PackageName = z.string().regex(/^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/, "expected a package name such as setuptools");
/** One PEP 508 requirement; quotes and shell characters are refused because requirements reach a shell. */
const Requirement = z
  .string()
  .min(1)
  .regex(/^[^;&|`$'"\\\n]*$/, "expected a requirement such as pytest>=6 (no quotes or shell characters)");
/**
 * The test runner a repository's suite needs. Every runner's results come from a structured
 * report (JUnit XML), never from log text.
 * - `pytest`: the repository's own pytest configuration (addopts included) plus what
 *   qualification needs; ids are pytest node ids.
 * - `django`: Django's `tests/runtests.py`, reporting through unittest-xml-reporting's Django
 *   runner; ids in unittest's `test_name (module.Class)` form, as SWE-bench records them.
 * - `sympy`: sympy's suite collected by pytest (sympy's `bin/test` writes no structured report);
 *   ids are the bare test function names SWE-bench records.
 */
export const TestRunner = z.enum(["pytest", "django", "sympy"]);
export type TestRunner = z.infer<typeof TestRunner>;

/** Build tools for source distributions: resolved as of a fixed, later date than old tasks' own. */
export const BuildTools = z.strictObject({
  /** Installed into the environment first, and the constraints of every isolated sdist build. */
  requirements: z.array(Requirement).default(["pip", "setuptools<70", "wheel"]),
  /**
   * Build backends an old sdist or the repository's pyproject.toml may ask for, and what they
   * need that is newer than they are (tomli): not installed, but resolved as of `as_of` too
   * (setuptools-scm>=6.2 did not exist in 2020, nor tomli, which it needs).
   */
  backends: z
    .array(PackageName)
    .default(["setuptools-scm", "tomli", "flit-core", "hatchling", "hatch-vcs", "poetry-core", "pdm-backend", "versioneer", "cython"]),
  /**
   * The releases of these tools considered: as of this date, or the task's own as-of date if that is
   * later. A fixed date keeps builds reproducible; a late one lets a 2015 sdist build.
   */
  as_of: Instant.default("2024-06-01T00:00:00Z"),
});
export type BuildTools = z.infer<typeof BuildTools>;

/** The repository's own install from its checkout. */
const ProjectInstall = z.strictObject({
  editable: z.boolean().default(true),
  extras: z.array(PackageName).default([]),
});

/** A Python minor version, as the executors offer them. */
export const PythonVersion = z.string().regex(/^3\.[0-9]+$/, "expected a Python minor version such as 3.11");
/**
 * The Python versions a recipe accepts, in order of preference: one version, or a list whose
 * first entry is the era's own (SWE-bench's) and whose later entries are fallbacks, taken in
 * order when the executor cannot offer the earlier ones (no base image, no uv download).
 */
export const PythonPreference = z.union([PythonVersion, z.array(PythonVersion).min(1, "expected at least one Python version")]);
export type PythonPreference = z.infer<typeof PythonPreference>;

/** Variables our runners set themselves: a recipe's test_env may not change them. */
export const RUNNER_VARIABLES = ["PATH", "HOME", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV", "LANG", "USER", "LOGNAME"];
const TestEnv = z.record(z.string(), z.string()).superRefine((variables, ctx) => {
  for (const name of Object.keys(variables)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) ctx.addIssue({ code: "custom", path: [name], message: "expected a variable name" });
    else if (RUNNER_VARIABLES.includes(name))
      ctx.addIssue({ code: "custom", path: [name], message: `the runner sets this variable itself (${RUNNER_VARIABLES.join(", ")})` });
  }
});

export const PythonFloor = z.strictObject({
  /** Applies when the environment's Python is this version or later. */
  python: z.string().regex(/^3\.[0-9]+$/, "expected a Python minor version such as 3.9"),
  package: PackageName,
  /** The oldest release that runs on that Python (measured, not guessed: say how in `why`). */
  version: z.string().regex(/^[0-9]+(\.[0-9]+)*$/, "expected a release such as 4.18.2"),
  /** When that release was published: the package is resolved as of this date at the earliest. */
  released: Instant,
  why: z.string().min(1),
});
export type PythonFloor = z.infer<typeof PythonFloor>;

const RECIPE_FIELDS = {
  python: PythonVersion,
  debian_packages: z.array(z.string().regex(/^[a-z0-9][a-z0-9+.-]*$/, "expected a Debian package name")).default([]),
  /** Installed into the environment, resolved as of the as-of date (uv --exclude-newer). */
  pip_requirements: z.array(Requirement).default([]),
  /** Exact versions that win over anything else asks for (uv --constraints); exempt from the as-of date. */
  pins: z
    .array(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?==[A-Za-z0-9.*+!_-]+$/, "expected an exact pin such as pytest==6.2.5"))
    .default([]),
  /**
   * Per-package exceptions to the as-of date (uv --exclude-newer-package): package → a date it is
   * resolved as of instead, when that is later than the task's (a package whose old releases were
   * deleted from PyPI, or whose first wheels for this Python came later). Use `pins` to go older.
   */
  as_of_exceptions: z.record(PackageName, Instant).default({}),
  /**
   * The environment is resolved as of the later of its earliest task's date and this one: for
   * an era whose pinned stack is years newer than its tasks (SWE-bench built some environments
   * long after), so that what the pins need resolves with them. Null: the tasks' date alone.
   */
  as_of_not_before: Instant.nullable().default(null),
  /**
   * Floors for the Python actually used: a package whose release as of the task cannot run on
   * that Python or a later one (hypothesis before 4.18.2 crashes on 3.8 and later, where
   * types.CodeType changed) is raised to the oldest release that can, when the task's date is
   * earlier than that release. Mostly for eras that run on a fallback interpreter.
   */
  python_floors: z.array(PythonFloor).optional(),
  /**
   * Packages built with the environment's build tools instead of an isolated build environment
   * (uv's no-build-isolation-package): a repository whose pyproject.toml pins a setuptools too old
   * for an editable install (no build_editable before setuptools 64).
   */
  no_build_isolation: z.array(PackageName).default([]),
  build_tools: BuildTools.default(BuildTools.parse({})),
  /** Requirements files read from the checkout at the base revision when the environment is built. */
  requirements_files: z.array(CheckoutPath).default([]),
  /**
   * Installs the repository itself from the checkout at the base revision, once per (recipe, base
   * revision), with its dependencies resolved as of the as-of date; `extras` as in `.[extra]`.
   */
  project: ProjectInstall.nullable().default(null),
  /**
   * Shell commands run in the checkout at the base revision after the above, at build time (never in
   * a test run). They get UV_CONFIG_FILE (the as-of date and its exceptions), UV_CONSTRAINT and
   * UV_BUILD_CONSTRAINT, so `uv pip install` in them honours the as-of date; `pip install` does not.
   * The environment's bin directory (uv, python, pip) comes first on their PATH.
   */
  install: z.array(z.string().min(1)).default([]),
  test_runner: TestRunner.default("pytest"),
  /** Extra options for the runner, after the repository's own configuration and before ours. */
  test_options: z.array(z.string().min(1)).default([]),
  /**
   * Variables of every test run (never of a build), `{venv}` standing for the environment's
   * virtual environment as the run sees it: for what a repository's tests read from the
   * environment only (astropy's configuration directory, say). Absent: none. The runner's own
   * variables (PATH, HOME, PYTHONPATH and the like) cannot be set here.
   */
  test_env: TestEnv.optional(),
  test_timeout_seconds: z.number().int().positive().default(900),
  install_timeout_seconds: z.number().int().positive().default(1800),
};

/** Field names an older profile may still carry, with what replaced them. */
const RETIRED_FIELDS: Record<string, string> = {
  test_command: "the test command is no longer free text: set test_runner (pytest, django or sympy) and test_options",
};

/**
 * How to build a task's environment, with its Python chosen: what an environment is built from,
 * what the manifest and a held-out task carry. `python_accepted` keeps the versions the profile
 * accepted, in order, so a reader sees when the one used was a fallback.
 */
export const EnvironmentRecipe = z.strictObject({
  ...RECIPE_FIELDS,
  /** The versions the profile accepted, in order of preference (empty: `python` alone). */
  python_accepted: z.array(PythonVersion).default([]),
});
/**
 * A profile's recipe: as above, but `python` may list the versions accepted in order of
 * preference. Strict: a field this version does not read is an error, not silently ignored (a
 * misspelt `pins` must not build an unpinned environment); a retired field says what replaced it.
 */
export const ProfileRecipe = z.strictObject({ ...RECIPE_FIELDS, python: PythonPreference });
export type ProfileRecipe = z.infer<typeof ProfileRecipe>;
export const ProfileRecipeChecked = z.preprocess((raw, ctx) => {
  if (raw && typeof raw === "object") {
    for (const [field, why] of Object.entries(RETIRED_FIELDS)) {
      if (field in raw) ctx.addIssue({ code: "custom", path: [field], message: `no longer read: ${why}`, input: raw });
    }
  }
  return raw;
}, ProfileRecipe);
export type EnvironmentRecipe = z.infer<typeof EnvironmentRecipe>;
export type EnvironmentRecipeInput = z.input<typeof EnvironmentRecipe>;

/**
 * An override's recipe: only the fields it names. Every one is optional and has no default, so a
 * field left out keeps the base recipe's value (merged field by field; `as_of_exceptions` and
 * `build_tools` merge key by key).
 */
export const RecipePatch = z.strictObject({
  python: PythonPreference.optional(),
  debian_packages: RECIPE_FIELDS.debian_packages.removeDefault().optional(),
  pip_requirements: z.array(Requirement).optional(),
  pins: RECIPE_FIELDS.pins.removeDefault().optional(),
  as_of_exceptions: z.record(PackageName, Instant).optional(),
  as_of_not_before: Instant.nullable().optional(),
  python_floors: z.array(PythonFloor).optional(),
  /** Replaces the recipe's test_env whole ({} to have none). */
  test_env: TestEnv.optional(),
  build_tools: z
    .strictObject({ requirements: z.array(Requirement).optional(), backends: z.array(PackageName).optional(), as_of: Instant.optional() })
    .optional(),
  no_build_isolation: z.array(PackageName).optional(),
  requirements_files: z.array(CheckoutPath).optional(),
  project: ProjectInstall.nullable().optional(),
  install: z.array(z.string().min(1)).optional(),
  test_runner: TestRunner.optional(),
  test_options: z.array(z.string().min(1)).optional(),
  test_timeout_seconds: z.number().int().positive().optional(),
  install_timeout_seconds: z.number().int().positive().optional(),
});
export type RecipePatch = z.infer<typeof RecipePatch>;

export const RecipeOverride = z
  .strictObject({
    /** Applies to tasks whose SWE-bench `version` is in this list, or whose id is in `tasks`. */
    versions: z.array(z.string()).default([]),
    tasks: z.array(z.string()).default([]),
    /**
     * Applies only when the Python chosen for the task is one of these (a fallback's own pins, say),
     * on top of `versions` / `tasks` when those are given, or to every task when they are not. It
     * may not change `python` itself: the choice is made before these overrides apply.
     */
    pythons: z.array(PythonVersion).default([]),
    recipe: RecipePatch,
    why: z.string().optional(),
  })
  .refine((o) => o.versions.length + o.tasks.length + o.pythons.length > 0, {
    message: "an override must name versions, tasks or pythons (it would apply to nothing)",
    path: ["versions"],
  })
  .refine((o) => !(o.pythons.length && o.recipe.python !== undefined), {
    message: "an override chosen by the Python it runs on cannot change the Python",
    path: ["recipe", "python"],
  });

/** One task a profile was qualified on here, and how our F2P compared with the record's. */
export const ProfileVerification = z.strictObject({
  task: z.string().min(1),
  /** The day it was qualified (YYYY-MM-DD). */
  date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "expected a date such as 2026-11-30"),
  executor: z.enum(["docker", "local"]),
  /** The Python the task ran on, when it was not the profile's first choice for it (a fallback). */
  python: PythonVersion.optional(),
  /** How our FAIL_TO_PASS related to the record's (see `switch-swe fidelity`). */
  f2p: z.enum(["exact", "subset", "superset", "overlap", "disjoint"]),
  /** What explains a difference, when there is one. */
  note: z.string().optional(),
});
export type ProfileVerification = z.infer<typeof ProfileVerification>;

export const RepoProfile = z.strictObject({
  repo: RepoName,
  /** Where to clone from: a URL or a local path, for mirrors and offline work. */
  clone_url: z.string().optional(),
  /** The project's name on PyPI when it is not the repository's name (pvlib-python is pvlib): how `repo lint` knows its release lines. */
  pypi_name: PackageName.optional(),
  classification: ClassificationRules.default(ClassificationRules.parse({})),
  environment: ProfileRecipeChecked,
  environment_overrides: z.array(RecipeOverride).default([]),
  /** The tasks this profile was actually qualified on (switch-swe fidelity / repo check), with the date and the F2P agreement. */
  verified: z.array(ProfileVerification).default([]),
  /** For a profile never qualified here: why not, and what it was written from. */
  unverified: z.string().optional(),
  notes: z.string().optional(),
});
export type RepoProfile = z.infer<typeof RepoProfile>;
export type RepoProfileInput = z.input<typeof RepoProfile>;
