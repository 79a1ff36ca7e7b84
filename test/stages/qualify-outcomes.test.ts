import { describe, expect, it } from "vitest";
import { classifyTests, keepDecision } from "../../pipeline/qualification/outcomes.ts";

describe("qualification sets", () => {
  it("sorts tests into F2P, P2P, P2F, F2F and unstable over repeated runs", () => {
    const before = [
      { f2p: "failed", p2p: "passed", p2f: "passed", f2f: "error", flaky: "failed", gone: "passed" },
      { f2p: "error", p2p: "passed", p2f: "passed", f2f: "failed", flaky: "failed", gone: "passed" },
    ] as const;
    const after = [
      { f2p: "passed", p2p: "passed", p2f: "failed", f2f: "skipped", flaky: "passed" },
      { f2p: "passed", p2p: "passed", p2f: "failed", f2f: "xfailed", flaky: "failed" },
    ] as const;
    expect(classifyTests([...before], [...after])).toEqual({
      designated: ["f2f", "f2p", "flaky", "gone", "p2f", "p2p"],
      failToPass: ["f2p"],
      passToPass: ["p2p"],
      passToFail: ["gone", "p2f"],
      failToFail: ["f2f"],
      unstable: ["flaky"],
    });
  });

  it("counts skipped, xfailed, xpassed, absent and timed-out as not passing", () => {
    for (const status of ["skipped", "xfailed", "xpassed", "absent", "timeout", "error", "failed"] as const) {
      expect(classifyTests([{ t: status }], [{ t: "passed" }]).failToPass, status).toEqual(["t"]);
      expect(classifyTests([{ t: "passed" }], [{ t: status }]).passToFail, status).toEqual(["t"]);
    }
  });

  it("keeps a task only with a stable F2P, a P2P and no regression, naming the first failing rule", () => {
    const sets = (o: Partial<ReturnType<typeof classifyTests>>) => ({
      designated: [],
      failToPass: [],
      passToPass: [],
      passToFail: [],
      failToFail: [],
      unstable: [],
      ...o,
    });
    expect(keepDecision(sets({ failToPass: ["a"], passToPass: ["b"] }))).toEqual({ kept: true });
    expect(keepDecision(sets({ failToPass: ["a"], passToPass: ["b"], passToFail: ["c"] }))).toMatchObject({ kept: false, reason: "regression" });
    expect(keepDecision(sets({ passToPass: ["b"], unstable: ["a"] }))).toMatchObject({
      kept: false,
      reason: "no_fail_to_pass",
      detail: expect.stringContaining("1 unstable: a"),
    });
    expect(keepDecision(sets({ unstable: ["a"] }))).toMatchObject({ kept: false, reason: "all_unstable" });
    expect(keepDecision(sets({ failToPass: ["a"] }))).toMatchObject({ kept: false, reason: "no_pass_to_pass" });
  });
});
