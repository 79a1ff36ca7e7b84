import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadProfiles } from "../../../pipeline/profiles/load.ts";
import { designatedTestFiles, runFailure } from "../../../pipeline/qualification/qualify-task.ts";

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
        { path: "pytest-dev__pytest.json", text: readFileSync(new URL("../../../data/repos/pytest-dev__pytest.json", import.meta.url), "utf8") },
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
