import { describe, expect, it } from "vitest";
import { parseTestId } from "../../../pipeline/test-results/test-ids.ts";

describe("test ids in the SWE-bench family's formats", () => {
  it("reads pytest node ids, Django's two runner formats and sympy's bare names", () => {
    expect(parseTestId("tests/test_x.py::TestA::test_b[case-1]")).toEqual({
      file: "tests/test_x.py",
      candidateFiles: ["tests/test_x.py"],
      classes: ["TestA"],
      name: "test_b",
      caseId: "case-1",
    });
    expect(parseTestId("test_label (auth_tests.test_forms.ReadOnlyPasswordHashTest)")).toMatchObject({
      classes: ["ReadOnlyPasswordHashTest"],
      name: "test_label",
      candidateFiles: [
        "tests/auth_tests/test_forms.py",
        "tests/auth_tests/test_forms/__init__.py",
        "auth_tests/test_forms.py",
        "auth_tests/test_forms/__init__.py",
      ],
    });
    expect(parseTestId("test_x (bulk_create.tests.BulkCreateTests.test_x)")).toMatchObject({ classes: ["BulkCreateTests"], name: "test_x" });
    expect(parseTestId("test_is_upper")).toEqual({ candidateFiles: [], classes: [], name: "test_is_upper" });
    // Django names a test with a docstring by its first line: not an id, found by its text instead.
    expect(parseTestId("ReadOnlyPasswordHashWidget doesn't contain a for attribute in the")).toBeUndefined();
  });
});
