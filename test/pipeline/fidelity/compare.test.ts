import { describe, expect, it } from "vitest";
import { agreementOf, compareSet } from "../../../pipeline/fidelity/compare.ts";
import type { TestStatus } from "../../../pipeline/schemas/common.ts";
import { QualificationRecord } from "../../../pipeline/schemas/qualification.ts";

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
