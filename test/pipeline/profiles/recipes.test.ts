import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadProfiles } from "../../../pipeline/profiles/load.ts";
import { environmentSpec } from "../../../pipeline/executors/environment.ts";
import { planEnvironments } from "../../../pipeline/profiles/environments.ts";
import { recipeFor } from "../../../pipeline/profiles/recipes.ts";
import { environmentLayerKey, raisedFloors, revisionAsOf, revisionScript, uvFiles } from "../../../pipeline/executors/recipe-scripts.ts";
import { fromCommit, fromDirectory, readCheckoutPins } from "../../../pipeline/executors/checkout-pins.ts";
import { describeTestCommand } from "../../../pipeline/executors/runners.ts";
import { BuildFailed, buildFailure, InfrastructureFault, summariseBuildLog } from "../../../pipeline/executors/types.ts";
import { EnvironmentRecipe, RepoProfile } from "../../../pipeline/schemas/repo-profile.ts";
import { tempDir } from "../../helpers/tmp.ts";

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
    const bundle = fileURLToPath(new URL("../../../../shared/data/mirrors/pylint-dev__astroid.bundle", import.meta.url));
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
    const bundle = fileURLToPath(new URL("../../../../shared/data/mirrors/pylint-dev__astroid.bundle", import.meta.url));
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
