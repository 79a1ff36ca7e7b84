import { describe, expect, it } from "vitest";
import { parseJunitXml } from "../../../pipeline/test-results/junit.ts";
import { djangoLabel, normaliseTestId, swebenchTestId, unittestId } from "../../../pipeline/test-results/test-ids.ts";
import { describeTestCommand, runnerArgv } from "../../../pipeline/executors/runners.ts";
import { EnvironmentRecipe } from "../../../pipeline/schemas/repo-profile.ts";

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
