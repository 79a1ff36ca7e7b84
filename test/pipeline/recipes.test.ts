import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { agreementOf, compareSet } from "../../pipeline/fidelity/compare.ts";
import { parseJunitXml } from "../../pipeline/test-results/junit.ts";
import { loadProfiles } from "../../pipeline/profiles/load.ts";
import { djangoLabel, normaliseTestId, swebenchTestId, unittestId } from "../../pipeline/test-results/test-ids.ts";
import { environmentSpec } from "../../pipeline/executors/environment.ts";
import { planEnvironments } from "../../pipeline/profiles/environments.ts";
import { recipeFor } from "../../pipeline/profiles/recipes.ts";
import { environmentLayerKey, raisedFloors, revisionAsOf, revisionScript, SYNC_SCRIPT, uvFiles } from "../../pipeline/executors/recipe-scripts.ts";
import { fromCommit, fromDirectory, readCheckoutPins } from "../../pipeline/executors/checkout-pins.ts";
import { describeTestCommand, runnerArgv } from "../../pipeline/executors/runners.ts";
import { BuildFailed, buildFailure, InfrastructureFault, summariseBuildLog } from "../../pipeline/executors/types.ts";
import type { TestStatus } from "../../pipeline/schemas/common.ts";
import { QualificationRecord } from "../../pipeline/schemas/qualification.ts";
import { EnvironmentRecipe, RepoProfile } from "../../pipeline/schemas/repo-profile.ts";
import { designatedTestFiles, runFailure } from "../../pipeline/qualification/qualify-task.ts";
import { tempDir } from "../helpers/tmp.ts";

const profile = (environment: Record<string, unknown>, overrides: unknown[] = []) =>
  RepoProfile.parse({ repo: "o/r", environment, environment_overrides: overrides });

describe("recipes: overrides merge onto the base recipe field by field", () => {
  const base = profile(
    {
      python: "3.9",
      pip_requirements: ["pytest", "hypothesis"],
      project: { extras: ["tests"] },
      as_of_exceptions: { atomicwrites: "2022-07-10" },
      pins: ["pytest==6.2.5"],
    },
    [
      { versions: ["0.7"], recipe: { as_of_exceptions: { numpy: "2020-12-31" } } },
      { tasks: ["o__r-9"], recipe: { python: "3.11", build_tools: { as_of: "2025-01-01" } } },
    ],
  );

  it("keeps every field an override leaves out, and merges the maps key by key", () => {
    const older = recipeFor(base, { id: "o__r-1", version: "0.7" });
    expect(older.pip_requirements).toEqual(["pytest", "hypothesis"]);
    expect(older.project).toEqual({ editable: true, extras: ["tests"] });
    expect(older.pins).toEqual(["pytest==6.2.5"]);
    expect(older.as_of_exceptions).toEqual({ atomicwrites: "2022-07-10", numpy: "2020-12-31" });
    const single = recipeFor(base, { id: "o__r-9", version: "0.7" });
    expect(single.python).toBe("3.11");
    expect(single.build_tools).toMatchObject({ requirements: ["pip", "setuptools<70", "wheel"], as_of: "2025-01-01" });
    expect(single.build_tools.backends).toContain("setuptools-scm");
    expect(single.as_of_exceptions).toEqual({ atomicwrites: "2022-07-10", numpy: "2020-12-31" });
    // a task no override names gets the base recipe, its one Python chosen
    expect(recipeFor(base, { id: "o__r-2", version: "0.8" })).toEqual({ ...base.environment, python_accepted: [] });
  });

  it("refuses what it would not read: a retired test_command, a misspelt field, shell in a requirement", () => {
    const errors = (environment: Record<string, unknown>) =>
      loadProfiles([{ path: "o__r.json", text: JSON.stringify({ repo: "o/r", environment }) }]).errors.get("o/r");
    expect(errors({ python: "3.9", test_command: "tests/runtests.py" })).toMatch(/o__r\.json: .*environment\.test_command.*no longer read: .*test_runner/);
    expect(errors({ python: "3.9", pin: ["pytest==6"] })).toMatch(/o__r\.json: .*pin/);
    expect(errors({ python: "3.9", pip_requirements: ["pytest; rm -rf /"] })).toMatch(/pip_requirements/);
    expect(errors({ python: "3.9", test_runner: "nose" })).toMatch(/test_runner/);
    expect(errors({ python: "3.9", requirements_files: ["../outside.txt"] })).toMatch(/requirements_files/);
    expect(errors({ python: "3.9", test_runner: "django" })).toBeUndefined();
  });
});

describe("recipes: test_env, the variables of test runs", () => {
  const withEnv = profile({ python: "3.9", test_env: { XDG_CONFIG_HOME: "{venv}/etc/xdg" } }, [
    { versions: ["1.0"], recipe: { test_env: {} } },
    { versions: ["2.0"], recipe: { test_env: { MPLBACKEND: "agg" } } },
  ]);

  it("is replaced whole by an override, and an empty one is the same recipe (and environment) as none", () => {
    expect(recipeFor(withEnv, { id: "o__r-1", version: "3.0" }).test_env).toEqual({ XDG_CONFIG_HOME: "{venv}/etc/xdg" });
    expect(recipeFor(withEnv, { id: "o__r-1", version: "2.0" }).test_env).toEqual({ MPLBACKEND: "agg" });
    const none = recipeFor(withEnv, { id: "o__r-1", version: "1.0" });
    expect("test_env" in none).toBe(false);
    const plain = recipeFor(profile({ python: "3.9" }), { id: "o__r-1", version: "1.0" });
    expect(environmentSpec("o/r", none, null).key).toBe(environmentSpec("o/r", plain, null).key);
  });

  it("is said in the test command, and refuses the variables the runner sets itself", () => {
    expect(describeTestCommand(recipeFor(withEnv, { id: "o__r-1" }), ["t.py"])).toMatch(/^XDG_CONFIG_HOME='\{venv\}\/etc\/xdg' python -m pytest t\.py/);
    const errors = (test_env: Record<string, string>) =>
      loadProfiles([{ path: "o__r.json", text: JSON.stringify({ repo: "o/r", environment: { python: "3.9", test_env } }) }]).errors.get("o/r");
    expect(errors({ PYTHONPATH: "/x" })).toMatch(/o__r\.json: .*test_env.*the runner sets this variable itself/);
    expect(errors({ "NOT A NAME": "x" })).toMatch(/test_env/);
    expect(errors({ ASTROPY_FLAG: "1" })).toBeUndefined();
  });
});

describe("recipes: what uv is told", () => {
  const recipe = EnvironmentRecipe.parse({ python: "3.9", pins: ["pytest==4.6.11"], as_of_exceptions: { atomicwrites: "2022-07-10" } });

  it("resolves as of the task, with the build tools, pins and named exceptions exempted", () => {
    const files = uvFiles(environmentSpec("o/r", recipe, "2019-03-01T10:00:00Z"));
    expect(files["uv.toml"]).toContain('exclude-newer = "2019-03-01T10:00:00Z"');
    // the build tools as of their own later date, a bare date read as midnight UTC, pins exempt
    expect(files["uv.toml"]).toContain('"atomicwrites" = "2022-07-10T00:00:00Z"');
    expect(files["uv.toml"]).toContain('"setuptools" = "2024-06-01T00:00:00Z"');
    expect(files["uv.toml"]).toContain('"pytest" = "2100-01-01T00:00:00Z"');
    expect(files["constraints.txt"]).toBe("pytest==4.6.11\n");
    expect(files["build-constraints.txt"]).toBe("pip\nsetuptools<70\nwheel\n");
    expect(files["uv.toml"]).not.toContain("no-build-isolation");
    const isolated = uvFiles(environmentSpec("o/r", EnvironmentRecipe.parse({ python: "3.9", no_build_isolation: ["astroid"] }), null));
    expect(isolated["uv.toml"]).toContain('no-build-isolation-package = ["astroid"]');
  });

  it("never moves the build tools or an exception back before the task's own date", () => {
    const late = uvFiles(environmentSpec("o/r", recipe, "2025-05-01T00:00:00Z"))["uv.toml"];
    expect(late).toContain('"setuptools" = "2025-05-01T00:00:00Z"');
    expect(late).toContain('"atomicwrites" = "2025-05-01T00:00:00Z"');
    expect(late).toContain('"setuptools-scm" = "2025-05-01T00:00:00Z"');
    expect(uvFiles(environmentSpec("o/r", recipe, null))["uv.toml"]).toBe("[pip]\n");
  });

  it("raises a package to its Python floor when the environment's Python needs it and the task's date is before that release", () => {
    const floor = { python: "3.9", package: "hypothesis", version: "4.18.2", released: "2019-04-30T01:30:00Z", why: "crashes on 3.8+" };
    const recipe = (python: string) => EnvironmentRecipe.parse({ python, pip_requirements: ["hypothesis"], python_floors: [floor] });
    const early = environmentSpec("o/r", recipe("3.9"), "2019-04-10T00:00:00Z");
    expect(raisedFloors(early)).toEqual([floor]);
    expect(uvFiles(early)["uv.toml"]).toContain('"hypothesis" = "2019-04-30T01:30:00Z"');
    expect(uvFiles(early)["constraints.txt"]).toBe("hypothesis>=4.18.2\n");
    // a later date already resolves to a release that runs; an older Python than the floor's needs nothing
    expect(raisedFloors(environmentSpec("o/r", recipe("3.9"), "2019-06-01T00:00:00Z"))).toEqual([]);
    expect(raisedFloors(environmentSpec("o/r", EnvironmentRecipe.parse({ ...recipe("3.9"), python: "3.7" }), "2019-04-10T00:00:00Z"))).toEqual([]);
    expect(raisedFloors(environmentSpec("o/r", recipe("3.11"), "2019-04-10T00:00:00Z"))).toEqual([floor]);
    // a recipe whose floors do not apply keeps its environment (and its key) as it was
    const plain = EnvironmentRecipe.parse({ python: "3.9", pip_requirements: ["hypothesis"] });
    expect(environmentLayerKey(environmentSpec("o/r", recipe("3.9"), "2019-06-01T00:00:00Z"))).toBe(
      environmentLayerKey(environmentSpec("o/r", plain, "2019-06-01T00:00:00Z")),
    );
  });

  it("lets an exact pin in the checkout's own requirement files past the as-of date (lockstep releases), for the revision layer only", async () => {
    // pylint 2.15's requirements_test_min.txt, as the checkout holds it: astroid is released beside pylint, after the commit.
    const checkout = tempDir();
    mkdirSync(join(checkout, "requirements"));
    writeFileSync(
      join(checkout, "requirements_test_min.txt"),
      "-e .[testutils]\nastroid==2.12.2  # Pinned to a specific version for tests\ntyping-extensions~=4.3\n-r requirements/extra.txt\n",
    );
    writeFileSync(
      join(checkout, "requirements", "extra.txt"),
      "py==1.11.0\npytest>=7\nsix==1.16.0 ; python_version < '3.8'\n-r ../requirements_test_min.txt\n",
    );
    const pins = await readCheckoutPins(fromDirectory(checkout), ["requirements_test_min.txt"]);
    // A directory without its own .git has no commit date: the environment's date holds.
    expect(pins.committedAt).toBeNull();
    expect(pins.exact).toEqual([
      { package: "astroid", version: "2.12.2", file: "requirements_test_min.txt" },
      { package: "py", version: "1.11.0", file: "requirements/extra.txt" },
      { package: "six", version: "1.16.0", file: "requirements/extra.txt" },
    ]);
    const env = environmentSpec("o/r", EnvironmentRecipe.parse({ python: "3.9", requirements_files: ["requirements_test_min.txt"] }), "2022-07-05T10:00:00Z");
    const paths = { venv: "/env", config: "/config", cache: "/cache", work: "/work", baseFiles: "/base-files", python: "/env/bin/python" };
    const script = revisionScript(env, paths, "2.15.0", pins);
    expect(script).toContain('"astroid" = "2100-01-01T00:00:00Z"');
    expect(script).toContain("export UV_CONFIG_FILE='/config/revision-uv.toml'");
    // the install of the requirements file comes after it, so it resolves with the exemption
    expect(script.indexOf("revision-uv.toml")).toBeLessThan(script.indexOf("-r 'requirements_test_min.txt'"));
    // the environment layer, shared by every revision, is not changed by one revision's pins
    expect(uvFiles(env)["uv.toml"]).not.toContain("astroid");
    // with no as-of date there is nothing to let past
    expect(revisionScript(environmentSpec("o/r", env.recipe, null), paths, "2.15.0", pins)).not.toContain("revision-uv.toml");
  });

  it("reads the exact pins of a real checkout's requirement files, through its -r includes (astroid at pylint-dev__astroid-1866's base)", async () => {
    // astroid pins the pylint released beside it in requirements_test_pre_commit.txt, which requirements_test.txt includes.
    const bundle = fileURLToPath(new URL("../../../shared/data/mirrors/pylint-dev__astroid.bundle", import.meta.url));
    const mirror = join(tempDir(), "astroid.git");
    execFileSync("git", ["clone", "--quiet", "--mirror", bundle, mirror]);
    const base = "6cf238d089cf4b6753c94cfc089b4a47487711e5";
    // Read from the mirror at the base commit, as qualify reads them (no checkout).
    const pins = await readCheckoutPins(fromCommit(mirror, base), ["requirements_test.txt"]);
    expect(pins.exact).toContainEqual({ package: "pylint", version: "2.15.5", file: "requirements_test_pre_commit.txt" });
    expect(pins.exact.map((p) => p.package)).toEqual(["black", "flake8", "flake8-typing-imports", "isort", "mypy", "pylint", "types-pkg-resources"]);
    // A task opened before pylint 2.15.5 was published (2022-10-21) on this base resolves it all the same.
    const env = environmentSpec(
      "pylint-dev/astroid",
      EnvironmentRecipe.parse({ python: "3.9", requirements_files: ["requirements_test.txt"] }),
      "2022-10-15T00:00:00Z",
    );
    const script = revisionScript(env, { venv: "/env", config: "/c", cache: "/u", work: "/w", baseFiles: "/b", python: "/env/bin/python" }, "2.12.13", pins);
    expect(script).toContain('"pylint" = "2100-01-01T00:00:00Z"');
  });

  it("resolves a base revision as of its own commit date when that is later than its environment's, in the revision layer only (astroid at pylint-dev__astroid-1978's base)", async () => {
    // The environment is resolved as of the earliest task sharing it; a later task's base asks for
    // what was released by its own commit: astroid 2.14's pyproject.toml asks for typing-extensions>=4.0.0
    // (published 2021-11-14) on Python 3.9, which no date before it offers.
    const bundle = fileURLToPath(new URL("../../../shared/data/mirrors/pylint-dev__astroid.bundle", import.meta.url));
    const mirror = join(tempDir(), "astroid.git");
    execFileSync("git", ["clone", "--quiet", "--mirror", bundle, mirror]);
    const base = "0c9ab0fe56703fa83c73e514a1020d398d23fa7f";
    expect(execFileSync("git", [`--git-dir=${mirror}`, "show", `${base}:pyproject.toml`], { encoding: "utf8" })).toContain(
      `"typing-extensions>=4.0.0;python_version<'3.11'"`,
    );
    const committed = "2023-01-22T14:31:44.000Z";
    const read = await readCheckoutPins(fromCommit(mirror, base), ["requirements_test_min.txt"]);
    expect(read).toEqual({ committedAt: committed, exact: [] });
    // A checkout of that commit says the same date as the mirror (the build reads the checkout, qualify the mirror).
    const checkout = join(tempDir(), "astroid");
    execFileSync("git", ["clone", "--quiet", "--shared", "--no-checkout", mirror, checkout]);
    execFileSync("git", ["checkout", "--quiet", "--detach", base], { cwd: checkout });
    expect(await readCheckoutPins(fromDirectory(checkout), ["requirements_test_min.txt"])).toEqual(read);
    const recipe = EnvironmentRecipe.parse({ python: "3.9", pip_requirements: ["pytest"], project: { editable: true, extras: [] } });
    const paths = { venv: "/env", config: "/c", cache: "/u", work: "/w", baseFiles: "/b", python: "/env/bin/python" };
    const early = environmentSpec("pylint-dev/astroid", recipe, "2021-10-01T00:00:00.000Z");
    expect(revisionAsOf(early, read)).toBe(committed);
    const script = revisionScript(early, paths, "2.14.0", read);
    expect(script).toContain(`exclude-newer = "${committed}"`);
    // resolved so before the project is installed
    expect(script.indexOf("export UV_CONFIG_FILE='/c/revision-uv.toml'")).toBeLessThan(script.indexOf("pip install --quiet -e"));
    // The environment's own layer, which every task of it shares, keeps the earliest task's date.
    expect(uvFiles(early)["uv.toml"]).toContain('exclude-newer = "2021-10-01T00:00:00.000Z"');
    // An environment dated after the commit keeps its date, and a revision with no pins needs no file of its own.
    const late = environmentSpec("pylint-dev/astroid", recipe, "2023-02-01T00:00:00.000Z");
    expect(revisionAsOf(late, read)).toBe("2023-02-01T00:00:00.000Z");
    expect(revisionScript(late, paths, "2.14.0", read)).not.toContain("revision-uv.toml");
    // No as-of date: nothing is excluded, whatever the commit's date.
    expect(revisionAsOf(environmentSpec("pylint-dev/astroid", recipe, null), read)).toBeNull();
  });

  it("shares the first layer between recipes that differ only in what they install from the checkout or how tests run", () => {
    const base = EnvironmentRecipe.parse({ python: "3.9", pip_requirements: ["pytest"] });
    const layer = (recipe: EnvironmentRecipe, repo = "o/r") => environmentLayerKey(environmentSpec(repo, recipe, "2021-01-01T00:00:00Z"));
    expect(layer({ ...base, project: { editable: true, extras: ["tests"] }, test_options: ["-x"], test_timeout_seconds: 60 })).toBe(layer(base));
    expect(layer(base, "other/repo")).toBe(layer(base));
    expect(layer({ ...base, pip_requirements: ["pytest", "numpy"] })).not.toBe(layer(base));
    expect(layer({ ...base, test_runner: "django" })).not.toBe(layer(base));
    expect(layer({ ...base, pins: ["pytest==7.0.0"] })).not.toBe(layer(base));
    expect(environmentLayerKey(environmentSpec("o/r", base, "2022-01-01T00:00:00Z"))).not.toBe(layer(base));
  });

  it("shares an environment between tasks of a recipe and a version, as of the earliest of them", () => {
    const plan = planEnvironments([
      { id: "a", repo: "o/r", recipe, createdAt: "2020-05-01T00:00:00Z", version: "1.0" },
      { id: "b", repo: "o/r", recipe, createdAt: "2019-05-01T00:00:00Z", version: "1.0" },
      { id: "c", repo: "o/r", recipe: { ...recipe, pins: [] }, createdAt: "2021-05-01T00:00:00Z", version: "1.0" },
      // the same recipe, years later: its own environment, not 2019's dependencies
      { id: "d", repo: "o/r", recipe, createdAt: "2023-05-01T00:00:00Z", version: "2.0" },
    ]);
    expect(plan.get("a")!.key).toBe(plan.get("b")!.key);
    expect(plan.get("a")!.asOf).toBe("2019-05-01T00:00:00Z");
    expect(plan.get("c")!.key).not.toBe(plan.get("a")!.key);
    expect(plan.get("d")!.asOf).toBe("2023-05-01T00:00:00Z");
  });
});

describe("build failures name the step and the requirement, and keep the log", () => {
  const log = [
    "switch-swe step: installing the build tools as of 2024-06-01T00:00:00Z: pip setuptools<70 wheel",
    "switch-swe step: installing the requirements as of 2016-01-01T00:00:00Z: pytest>=3.0 atomicwrites",
    "Using Python 3.9.2 environment at: /env",
    "  × No solution found when resolving dependencies:",
    "  ╰─▶ Because atomicwrites was not found in the package registry and you require atomicwrites, we can conclude that your requirements are unsatisfiable.",
  ].join("\n");

  it("says which step failed and why, and where the whole log is", () => {
    expect(summariseBuildLog(log)).toBe(
      "step 'installing the requirements as of 2016-01-01T00:00:00Z: pytest>=3.0 atomicwrites' failed: × No solution found when resolving dependencies: | ╰─▶ Because atomicwrites was not found in the package registry and you require atomicwrites, we can conclude that your requirements are unsatisfiable.",
    );
    expect(() => buildFailure("building o/r failed", log, false, undefined, "/w/envs/build-logs/x.log")).toThrow(BuildFailed);
    expect(() => buildFailure("building o/r failed", log, false, undefined, "/w/envs/build-logs/x.log")).toThrow(
      /atomicwrites was not found.*\(whole log: \/w\/envs\/build-logs\/x\.log\)/,
    );
  });

  it("calls a missing Python a build failure naming the versions there are, even when the download failed on the network", () => {
    const offline =
      "switch-swe step: downloading a uv-managed Python 3.10\nerror: Failed to download https://github.com/astral-sh/python-build-standalone/...: Connection refused (os error 111)";
    expect(() => buildFailure("building o/r failed", offline, false, undefined, undefined, "3.9 (bullseye), 3.11 (bookworm)")).toThrow(
      /Python 3\.10 is not available here \(3\.9 \(bullseye\), 3\.11 \(bookworm\)\) and uv could not download/,
    );
    // the same network error elsewhere in a build may not recur: retried, not blamed on the recipe
    expect(() => buildFailure("building o/r failed", "switch-swe step: installing uv\nConnection refused", false)).toThrow(InfrastructureFault);
  });
});

describe("runners: commands and ids", () => {
  const pytest = EnvironmentRecipe.parse({ python: "3.11", test_options: ["-m", "not slow"] });
  const django = EnvironmentRecipe.parse({ python: "3.9", test_runner: "django" });

  it("keeps the repository's addopts: our pytest options come after its own configuration and the recipe's", () => {
    const { argv } = runnerArgv(pytest, ["tests/test_a.py"], { python: "/env/bin/python", resultsDir: "/results" }, false);
    expect(argv).toEqual([
      "/env/bin/python",
      "-m",
      "pytest",
      "-m",
      "not slow",
      "tests/test_a.py",
      "-p",
      "no:cacheprovider",
      "-o",
      "junit_family=xunit1",
      "-o",
      "xfail_strict=true",
      "--maxfail=0",
      "-q",
      "--junitxml=/results/report.xml",
    ]);
    expect(argv).not.toContain("addopts=");
  });

  it("runs Django's tests/runtests.py with labels, reporting through our settings module", () => {
    const { argv, env } = runnerArgv(
      django,
      ["tests/admin_views/tests.py", "test_x (basic.tests.Case)", "test_y (basic.tests.Case.test_y)"],
      { python: "python", resultsDir: "/results" },
      false,
    );
    expect(argv).toEqual([
      "python",
      "tests/runtests.py",
      "--settings=switch_swe_django_settings",
      "--parallel=1",
      "--verbosity=2",
      "admin_views.tests",
      "basic.tests.Case.test_x",
      "basic.tests.Case.test_y",
    ]);
    expect(env).toEqual({ PYTHONPATH: "/results" });
    expect(() => runnerArgv(django, [], { python: "python", resultsDir: "/r" }, true)).toThrow(/cannot run guarded/);
    expect(describeTestCommand(django, ["tests/basic/tests.py"])).toBe(
      "python tests/runtests.py --settings=switch_swe_django_settings --parallel=1 --verbosity=2 basic.tests",
    );
  });

  it("maps ids between our runners and SWE-bench's records", () => {
    expect(unittestId("test_x", "basic.tests.Case", "3.9")).toBe("test_x (basic.tests.Case)");
    expect(unittestId("test_x", "basic.tests.Case", "3.11")).toBe("test_x (basic.tests.Case.test_x)");
    expect(djangoLabel("tests/model_fields/__init__.py")).toBe("model_fields");
    expect(swebenchTestId("sympy", "sympy/core/tests/test_basic.py::test_issue_1234")).toBe("test_issue_1234");
    expect(swebenchTestId("pytest", "tests/test_a.py::test_b[1]")).toBe("tests/test_a.py::test_b[1]");
    expect(normaliseTestId("tests/test_a.py::test_b[a b c]")).toBe("tests/test_a.py::test_b[a");
  });

  it("reads Django's JUnit report into unittest ids, in the environment's Python's form", () => {
    const xml =
      '<testsuites><testsuite name="x" tests="2"><testcase classname="basic.tests.Case" name="test_ok" time="0.001"/><testcase classname="basic.tests.Case" name="test_net" time="0.1"><error type="URLError" message="&lt;urlopen error [Errno -3] Temporary failure in name resolution&gt;">Traceback</error></testcase></testsuite></testsuites>';
    expect(parseJunitXml(xml, { runner: "django", python: "3.9" }).map((r) => [r.nodeId, r.status])).toEqual([
      ["test_ok (basic.tests.Case)", "passed"],
      ["test_net (basic.tests.Case)", "error"],
    ]);
    expect(parseJunitXml(xml, { runner: "django", python: "3.11" })[0]!.nodeId).toBe("test_ok (basic.tests.Case.test_ok)");
    expect(parseJunitXml(xml, { runner: "django", python: "3.9" })[1]!.failureText).toMatch(/Temporary failure in name resolution/);
  });
});

describe("designated test files: the changed test modules, by the profile's test_modules", () => {
  const files = [
    "testing/python/metafunc.py",
    "testing/test_mark.py",
    "testing/conftest.py",
    "tests/app/tests.py",
    "src/x_test.py",
    "testing/data.txt",
    "testing/python/old.py",
  ].map((path) => ({
    path,
    old_path: path,
    class: "test" as const,
    status: path.endsWith("old.py") ? ("deleted" as const) : ("modified" as const),
    rule: "r",
  }));
  it("takes pytest's own default names, and a repository's configured ones (pytest's testing/python/*.py)", () => {
    expect(designatedTestFiles(files as never)).toEqual(["src/x_test.py", "testing/test_mark.py", "tests/app/tests.py"]);
    expect(designatedTestFiles(files as never, ["test_*.py", "*_test.py", "testing/python/*.py"])).toEqual([
      "src/x_test.py",
      "testing/python/metafunc.py",
      "testing/test_mark.py",
    ]);
  });
  it("is what the shipped pytest profile runs", () => {
    const [pytest] = [
      ...loadProfiles([
        { path: "pytest-dev__pytest.json", text: readFileSync(new URL("../../data/repos/pytest-dev__pytest.json", import.meta.url), "utf8") },
      ]).profiles.values(),
    ];
    expect(designatedTestFiles(files as never, pytest!.profile.classification.test_modules)).toContain("testing/python/metafunc.py");
  });
});

describe("a run with no outcomes to read", () => {
  const result = (exitCode: number, junitXml?: string) => ({ timedOut: false, exitCode, junitXml, wallSeconds: 1, outputTail: "" });

  it("is a run failure when there is no report, or pytest hit an internal or usage error", () => {
    expect(runFailure("pytest", result(1))).toBe("wrote no JUnit report");
    expect(runFailure("pytest", result(3, "<testsuites/>"))).toMatch(/INTERNALERROR/);
    expect(runFailure("pytest", result(4, "<testsuites/>"))).toMatch(/usage error/);
    expect(runFailure("pytest", result(1, "<testsuites/>"))).toBeUndefined();
    // a collection error (exit 2) is an outcome: the test module does not import before the fix
    expect(runFailure("pytest", result(2, "<testsuites/>"))).toBeUndefined();
    expect(runFailure("django", result(1))).toBe("wrote no JUnit report");
  });
});

describe("fidelity: our sets against a record's", () => {
  const record = (fields: Partial<QualificationRecord>) =>
    QualificationRecord.parse({
      task_id: "o__r-1",
      executor: "docker",
      environment_key: "k",
      python: "3.9",
      python_fallback: false,
      as_of: null,
      test_args: [],
      runs_per_state: 1,
      test_runner: "pytest",
      designated_tests: [],
      runs: [],
      fail_to_pass: [],
      pass_to_pass: [],
      pass_to_fail: [],
      fail_to_fail: [],
      unstable: [],
      needs_network: [],
      kept: true,
      ...fields,
    });

  it("names how the sets relate", () => {
    expect(agreementOf(new Set(["a", "b"]), new Set(["a", "b"]))).toBe("exact");
    expect(agreementOf(new Set(["a"]), new Set(["a", "b"]))).toBe("subset");
    expect(agreementOf(new Set(["a", "b"]), new Set(["a"]))).toBe("superset");
    expect(agreementOf(new Set(["a", "c"]), new Set(["a", "b"]))).toBe("overlap");
    expect(agreementOf(new Set(["c"]), new Set(["a"]))).toBe("disjoint");
  });

  it("classifies every difference from what our runs saw", () => {
    const outcomes = (before: Record<string, TestStatus>, after: Record<string, TestStatus>) => [
      { state: "before" as const, run: 0, timed_out: false, infrastructure_retries: 0, outcomes: before },
      { state: "after" as const, run: 0, timed_out: false, infrastructure_retries: 0, outcomes: after },
    ];
    const tests = {
      net: ["failed", "failed"],
      flaky: ["passed", "failed"],
      imp: ["error", "error"],
      opt: ["skipped", "skipped"],
      real: ["passed", "passed"],
      "cut[abc\tdef]": ["failed", "passed"],
      "data[/root/.cache/a.dcm-1]": ["failed", "passed"],
      "p[a b]": ["failed", "passed"],
      "m[x 1]": ["failed", "passed"],
      "m[x 2]": ["failed", "passed"],
    } as Record<string, [TestStatus, TestStatus]>;
    const ids = Object.keys(tests).map((t) => `t.py::${t}`);
    const runs = outcomes(
      Object.fromEntries(ids.map((id, i) => [id, Object.values(tests)[i]![0]])),
      Object.fromEntries(ids.map((id, i) => [id, Object.values(tests)[i]![1]])),
    );
    const q = QualificationRecord.parse(
      record({
        designated_tests: [...ids].sort(),
        runs,
        fail_to_pass: ["t.py::cut[abc\tdef]", "t.py::data[/root/.cache/a.dcm-1]", "t.py::p[a b]", "t.py::m[x 1]", "t.py::m[x 2]"],
        needs_network: ["t.py::net"],
        unstable: ["t.py::flaky"],
      }),
    );
    const theirs = [
      "t.py::net",
      "t.py::flaky",
      "t.py::imp",
      "t.py::opt",
      "t.py::real",
      "t.py::gone",
      "t.py::cut[abc",
      "t.py::data[/n/fs/guest/.cache/a.dcm-1]",
      "t.py::p[a b c]",
    ];
    const compared = compareSet(q.fail_to_pass, theirs, q);
    expect(compared.agreement).toBe("overlap");
    expect(Object.fromEntries(compared.missing.map((d) => [d.test, d.class]))).toEqual({
      "t.py::net": "needs_network",
      "t.py::flaky": "unstable",
      "t.py::imp": "environment",
      "t.py::opt": "environment",
      "t.py::real": "other",
      "t.py::gone": "environment",
      "t.py::cut[abc": "id_format",
      "t.py::data[/n/fs/guest/.cache/a.dcm-1]": "id_format",
    });
    // "p[a b]" and "p[a b c]" are one test once both are cut at their first space, as SWE-bench's were
    // and two tests that both cut down to "m[x" cannot be told apart by a record cut that way
    expect(compared.extra.map((d) => [d.test, d.class])).toEqual([
      ["t.py::cut[abc\tdef]", "id_format"],
      ["t.py::data[/root/.cache/a.dcm-1]", "id_format"],
      ["t.py::m[x", "id_format"],
    ]);
  });
});

describe("fidelity: differences the record itself explains", () => {
  const run = (state: "before" | "after", outcomes: Record<string, TestStatus>) => ({ state, run: 0, timed_out: false, infrastructure_retries: 0, outcomes });
  const q = QualificationRecord.parse({
    task_id: "o__r-1",
    executor: "docker",
    environment_key: "k",
    python: "3.9",
    python_fallback: false,
    as_of: null,
    test_args: [],
    runs_per_state: 1,
    test_runner: "pytest",
    designated_tests: ["t.py::a", "t.py::b", "t.py::c"],
    runs: [
      run("before", { "t.py::a": "failed", "t.py::b": "passed", "t.py::c": "failed" }),
      run("after", { "t.py::a": "passed", "t.py::b": "passed", "t.py::c": "passed" }),
    ],
    fail_to_pass: ["t.py::a", "t.py::c"],
    pass_to_pass: ["t.py::b"],
    pass_to_fail: [],
    fail_to_fail: [],
    unstable: [],
    needs_network: [],
    kept: true,
  });

  it("names a test of ours the record lists in neither set unlisted, and its fail-to-pass test that passes before here passes_before", () => {
    // the record: F2P a and b, P2P nothing about c
    const f2p = compareSet(q.fail_to_pass, ["t.py::a", "t.py::b"], q, { theirOther: [], failToPass: true });
    expect(f2p.missing).toEqual([{ test: "t.py::b", class: "passes_before" }]);
    expect(f2p.extra).toEqual([{ test: "t.py::c", class: "unlisted" }]);
    // c named in the record's P2P: a real difference
    expect(compareSet(q.fail_to_pass, ["t.py::a"], q, { theirOther: ["t.py::c"], failToPass: true }).extra).toEqual([{ test: "t.py::c", class: "other" }]);
  });
});

describe("sync.py: a prepared checkout made to match a run's checkout", () => {
  const syncScriptInTempDir = () => {
    const dir = tempDir();
    const script = join(dir, "sync.py");
    writeFileSync(script, SYNC_SCRIPT);
    return { dir, script };
  };

  it("copies the run's files, removes base files the run's checkout lacks, keeps what the install generated", () => {
    const { dir, script } = syncScriptInTempDir();
    const base = join(dir, "base");
    const work = join(dir, "work");
    const run = join(dir, "run");
    for (const root of [base, run]) mkdirSync(join(root, "pkg"), { recursive: true });
    writeFileSync(join(base, "pkg", "a.py"), "A = 1\n");
    writeFileSync(join(base, "pkg", "gone.py"), "GONE = 1\n");
    writeFileSync(join(base, "setup.py"), "");
    // the prepared checkout: the base plus what the install wrote
    execFileSync("python3", [script, "overlay", base, work, "/dev/null"]);
    writeFileSync(join(work, "pkg", "_version.py"), "version = '1.0'\n");
    writeFileSync(join(dir, "base-files.txt"), execFileSync("python3", [script, "list", base]));
    // the run's checkout: a changed file, a deleted one, a new file in a new directory, a link, a .git to skip
    writeFileSync(join(run, "pkg", "a.py"), "A = 2\n");
    writeFileSync(join(run, "setup.py"), "");
    mkdirSync(join(run, "pkg", "sub"));
    writeFileSync(join(run, "pkg", "sub", "new.py"), "NEW = 1\n");
    symlinkSync("a.py", join(run, "pkg", "alias.py"));
    mkdirSync(join(run, ".git"));
    writeFileSync(join(run, ".git", "HEAD"), "ref: x\n");
    execFileSync("python3", [script, "overlay", run, work, join(dir, "base-files.txt")]);
    expect(readFileSync(join(work, "pkg", "a.py"), "utf8")).toBe("A = 2\n");
    expect(existsSync(join(work, "pkg", "gone.py"))).toBe(false);
    expect(readFileSync(join(work, "pkg", "_version.py"), "utf8")).toBe("version = '1.0'\n");
    expect(readFileSync(join(work, "pkg", "sub", "new.py"), "utf8")).toBe("NEW = 1\n");
    expect(lstatSync(join(work, "pkg", "alias.py")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(work, "pkg", "alias.py"))).toBe("a.py");
    expect(existsSync(join(work, ".git"))).toBe(false);
  });

  it("byte-compiles a prepared tree once, hash-checked: a run that writes no byte-code loads the unchanged modules compiled and never a changed one stale", () => {
    const { dir, script } = syncScriptInTempDir();
    const work = join(dir, "work");
    const run = join(dir, "run");
    for (const root of [work, run]) mkdirSync(join(root, "pkg"), { recursive: true });
    for (const root of [work, run]) writeFileSync(join(root, "pkg", "__init__.py"), "");
    writeFileSync(join(work, "pkg", "kept.py"), "KEPT = 1\n");
    writeFileSync(join(work, "pkg", "changed.py"), "VALUE = 1\n");
    // Python 2 source among a package's files: left uncompiled, the build goes on
    writeFileSync(join(work, "pkg", "py2_data.py"), "print 'old'\n");
    execFileSync("python3", [script, "compile", work]);
    const cache = join(work, "pkg", "__pycache__");
    const compiled = readdirSync(cache).sort();
    expect(compiled.filter((f) => f.startsWith("kept.")).length).toBe(1);
    expect(compiled.some((f) => f.startsWith("py2_data."))).toBe(false);
    // flags word of the header: bit 0 hash-based, bit 1 checked against the source
    const flags = readFileSync(
      join(
        cache,
        compiled.find((f) => f.startsWith("changed."))!,
      ),
    ).readUInt32LE(4);
    expect(flags).toBe(0b11);
    // The run's checkout: the same size and bytes but one, overlaid (every file rewritten).
    writeFileSync(join(run, "pkg", "kept.py"), "KEPT = 1\n");
    writeFileSync(join(run, "pkg", "changed.py"), "VALUE = 2\n");
    execFileSync("python3", [script, "overlay", run, work, "/dev/null"]);
    // -v: Python says which modules it loaded from byte-code
    const loaded = spawnSync("python3", ["-v", "-c", "import pkg.kept, pkg.changed; print(pkg.changed.VALUE)"], {
      cwd: work,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
      encoding: "utf8",
    });
    expect(loaded.stdout.trim()).toBe("2");
    expect(loaded.stderr).toMatch(/code object from '[^']*kept\.cpython-\d+\.pyc'/);
    expect(loaded.stderr).not.toMatch(/code object from '[^']*changed\.cpython-\d+\.pyc'/);
    expect(readdirSync(cache).sort()).toEqual(compiled);
  });
});
