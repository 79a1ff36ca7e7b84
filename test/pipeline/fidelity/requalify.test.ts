import { describe, expect, it } from "vitest";
import { auditRecord } from "../../../pipeline/fidelity/defects.ts";
import { renderRequalifyCsv, renderRequalifyMarkdown, summariseEras } from "../../../pipeline/fidelity/requalify.ts";
import type { TestStatus } from "../../../pipeline/schemas/common.ts";
import { QualificationRecord } from "../../../pipeline/schemas/qualification.ts";
import { RequalifyReport } from "../../../pipeline/schemas/requalify.ts";

/** A qualification of two runs per state: each test's statuses as `[before1, before2, after1, after2]`. */
function qualification(
  statuses: Record<string, [TestStatus, TestStatus, TestStatus, TestStatus]>,
  fields: Partial<QualificationRecord> = {},
): QualificationRecord {
  const run = (state: "before" | "after", index: number, at: number) => ({
    state,
    run: index,
    timed_out: false,
    infrastructure_retries: 0,
    outcomes: Object.fromEntries(Object.entries(statuses).map(([t, s]) => [t, s[at]!])),
  });
  const tests = Object.keys(statuses).sort();
  const f2p = tests.filter((t) => statuses[t]!.slice(0, 2).every((s) => s !== "passed") && statuses[t]!.slice(2).every((s) => s === "passed"));
  return QualificationRecord.parse({
    task_id: "o__r-1",
    executor: "docker",
    environment_key: "k",
    python: "3.9",
    python_fallback: false,
    as_of: null,
    test_args: ["t.py"],
    runs_per_state: 2,
    test_runner: "pytest",
    designated_tests: tests,
    runs: [run("before", 0, 0), run("before", 1, 1), run("after", 0, 2), run("after", 1, 3)],
    fail_to_pass: f2p,
    pass_to_pass: [],
    pass_to_fail: [],
    fail_to_fail: [],
    unstable: [],
    needs_network: [],
    kept: true,
    ...fields,
  });
}

describe("auditing a SWE-bench-family record against a re-run of its tests", () => {
  it("finds nothing wrong with a record whose claims hold", () => {
    const q = qualification({ "t.py::fixed": ["failed", "failed", "passed", "passed"], "t.py::kept": ["passed", "passed", "passed", "passed"] });
    expect(auditRecord({ id: "o__r-1", repo: "o/r", failToPass: ["t.py::fixed"], passToPass: ["t.py::kept"] }, q)).toEqual({
      instance_id: "o__r-1",
      repo: "o/r",
      requalified: true,
      differences: [],
      defects: [],
    });
  });

  it("names every kind of defect, with the tests it concerns", () => {
    const q = qualification(
      {
        "t.py::fixed": ["failed", "failed", "passed", "passed"],
        "t.py::still_broken": ["failed", "failed", "failed", "failed"],
        "t.py::always_passes": ["passed", "passed", "passed", "passed"],
        "t.py::flaky": ["failed", "failed", "passed", "failed"],
        "t.py::online": ["failed", "failed", "failed", "failed"],
        "t.py::p[a b]": ["failed", "failed", "passed", "passed"],
        "t.py::regressed": ["passed", "passed", "failed", "failed"],
        "t.py::gone": ["absent", "absent", "absent", "absent"],
      },
      { unstable: ["t.py::flaky"], needs_network: ["t.py::online"] },
    );
    const audit = auditRecord(
      {
        id: "o__r-1",
        repo: "o/r",
        failToPass: ["t.py::fixed", "t.py::still_broken", "t.py::always_passes", "t.py::flaky", "t.py::online", "t.py::missing", "t.py::p[a"],
        passToPass: ["t.py::regressed", "t.py::gone", "t.py::nowhere"],
      },
      q,
    );
    expect(Object.fromEntries(audit.defects.map((d) => [d.kind, d.tests]))).toEqual({
      f2p_needs_network: ["t.py::online"],
      f2p_not_collected: ["t.py::missing"],
      f2p_passes_before: ["t.py::always_passes"],
      f2p_set_differs: ["-t.py::always_passes", "-t.py::flaky", "-t.py::missing", "-t.py::online", "-t.py::still_broken"],
      f2p_unstable: ["t.py::flaky"],
      gold_patch_fails: ["t.py::still_broken"],
      malformed_id: ["t.py::p[a"],
      p2p_fails: ["t.py::regressed"],
      p2p_not_collected: ["t.py::gone", "t.py::nowhere"],
    });
    // The cut id names the test it stands for; run-by-run statuses say what was seen.
    expect(audit.defects.find((d) => d.kind === "malformed_id")!.detail).toBe("t.py::p[a → t.py::p[a b]");
    expect(audit.defects.find((d) => d.kind === "gold_patch_fails")!.detail).toBe("t.py::still_broken: before failed,failed; after failed,failed");
  });

  it("takes a cut id as any of the tests it could stand for: only the cut is a defect when one of them bears the claim out", () => {
    const q = qualification({
      "t.py::m[x 1]": ["failed", "failed", "passed", "passed"],
      "t.py::m[x 2]": ["passed", "passed", "passed", "passed"],
      "t.py::k[a b]": ["passed", "passed", "passed", "passed"],
      "t.py::k[a c]": ["failed", "failed", "failed", "failed"],
    });
    const audit = auditRecord({ id: "o__r-1", repo: "o/r", failToPass: ["t.py::m[x"], passToPass: ["t.py::k[a"] }, q);
    expect(audit.defects.map((d) => [d.kind, d.tests])).toEqual([["malformed_id", ["t.py::k[a", "t.py::m[x"]]]);
    expect(audit.defects[0]!.detail).toBe("t.py::k[a → t.py::k[a b] | t.py::k[a c]; t.py::m[x → t.py::m[x 1] | t.py::m[x 2]");
  });

  it("takes an id whose parameter embeds another machine's path as the test over the same file here", () => {
    const q = qualification({ "t.py::read[/root/.cache/pkg/data/x.dcm-data4]": ["passed", "passed", "passed", "passed"] });
    const audit = auditRecord({ id: "o__r-1", repo: "o/r", failToPass: [], passToPass: ["t.py::read[/n/fs/guest/someone/.pkg/data/x.dcm-data4]"] }, q);
    expect(audit.defects).toEqual([
      {
        kind: "malformed_id",
        tests: ["t.py::read[/n/fs/guest/someone/.pkg/data/x.dcm-data4]"],
        detail: "t.py::read[/n/fs/guest/someone/.pkg/data/x.dcm-data4] → t.py::read[/root/.cache/pkg/data/x.dcm-data4]",
      },
    ]);
  });

  it("reports a record that could not be re-run, with why, and renders the report in every format", () => {
    const missing = auditRecord({ id: "o__r-2", repo: "o/r", failToPass: ["t.py::x"], passToPass: [] }, undefined, {
      reason: "environment_failed",
      message: "step 'installing the project' failed: No matching distribution\nmore",
    });
    expect(missing).toEqual({
      instance_id: "o__r-2",
      repo: "o/r",
      requalified: false,
      differences: [],
      defects: [{ kind: "not_requalified", tests: [], detail: "environment_failed: step 'installing the project' failed: No matching distribution" }],
    });
    const clean = auditRecord(
      { id: "o__r-1", repo: "o/r", failToPass: ["t.py::fixed"], passToPass: [] },
      qualification({ "t.py::fixed": ["failed", "failed", "passed", "passed"] }),
    );
    const report = RequalifyReport.parse({
      source: "lite.jsonl",
      runs_per_state: 2,
      executor: "docker",
      eras: summariseEras([clean, missing]),
      records: [clean, missing],
      by_kind: { not_requalified: 1 },
    });
    const md = renderRequalifyMarkdown(report);
    expect(md).toContain("| not_requalified | 1 |");
    expect(md).toContain("### o__r-1\n\nNo defect found.");
    expect(renderRequalifyCsv(report).split("\n").slice(0, 3)).toEqual([
      "instance_id,repo,requalified,kind,tests,test_ids,detail",
      "o__r-1,o/r,true,,0,,",
      "o__r-2,o/r,false,not_requalified,0,,environment_failed: step 'installing the project' failed: No matching distribution",
    ]);
  });

  it("sums up each repository and era: records, built, F2P exact and explained, P2P exact, differences by class", () => {
    const built = (id: string, version: string, f2p: "exact" | "subset", differences: { set: "f2p" | "p2p"; class: string }[]) => ({
      instance_id: id,
      repo: "o/r",
      version,
      requalified: true,
      f2p_agreement: f2p,
      p2p_agreement: differences.some((d) => d.set === "p2p") ? ("superset" as const) : ("exact" as const),
      differences: differences.map((d, i) => ({ set: d.set, side: "missing" as const, test: `t.py::x${i}`, class: d.class as "other" })),
      defects: [],
    });
    const eras = summariseEras([
      built("o__r-1", "1.10", "exact", [{ set: "p2p", class: "unlisted" }]),
      built("o__r-2", "1.9", "subset", [{ set: "f2p", class: "needs_network" }]),
      built("o__r-3", "1.9", "subset", [{ set: "f2p", class: "other" }]),
      {
        instance_id: "o__r-4",
        repo: "o/r",
        version: "1.9",
        requalified: false,
        differences: [],
        defects: [{ kind: "not_requalified" as const, tests: [], detail: "build_failed: no solution" }],
      },
    ]);
    expect(eras).toEqual([
      {
        repo: "o/r",
        version: "1.9",
        records: 3,
        requalified: 2,
        f2p_exact: 0,
        f2p_explained: 1,
        p2p_exact: 2,
        f2p_classes: { needs_network: 1, other: 1 },
        p2p_classes: {},
        not_requalified: { build_failed: 1 },
      },
      {
        repo: "o/r",
        version: "1.10",
        records: 1,
        requalified: 1,
        f2p_exact: 1,
        f2p_explained: 1,
        p2p_exact: 0,
        f2p_classes: {},
        p2p_classes: { unlisted: 1 },
        not_requalified: {},
      },
    ]);
    const md = renderRequalifyMarkdown(RequalifyReport.parse({ source: "f.jsonl", runs_per_state: 1, executor: "docker", eras, records: [], by_kind: {} }));
    expect(md).toContain("| o/r | 1.9 | 3 | 2 | 0 | 1 | 2 | needs_network 1, other 1 | none | build_failed 1 |");
    expect(md).toContain("| **all** | | 4 | 3 | 1 | 2 | 2 | | | |");
  });
});
