import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { silentLogger } from "../../../pipeline/logger.ts";
import type { Request } from "../../../pipeline/schemas/task.ts";
import { importAnnotations, readAnnotations } from "../../../stages/audit/annotations.ts";
import { decisionBook, readDecisions, recordDecision } from "../../../stages/audit/decisions.ts";
import { checkMeasurement, GateConfigError, rulesInForce } from "../../../stages/audit/gate.ts";
import { wilson } from "../../../stages/audit/measured.ts";
import { loadProvenance } from "../../../stages/audit/rules/provenance.ts";
import { RuleSettings, rulesInUse } from "../../../stages/audit/rules/registry.ts";
import { triage } from "../../../stages/audit/study/measure.ts";
import { auditSwebench } from "../../../stages/audit/study/swebench.ts";
import { auditTask } from "../../../stages/audit/task.ts";
import { importSwebench } from "../../../stages/mine/swebench.ts";
import { runCli } from "../../helpers/cli-in-process.ts";
import { sharedRecords } from "../../helpers/shared-data.ts";
import { fileTempDir } from "../../helpers/tmp.ts";

const records = sharedRecords();
const gate = { excludeAtSeverity: 2, judgeGate: "only with a decision" as const, inForce: new Set<string>(), decisionsFile: "audits/decisions.yaml" };

/** A task whose second test expects an exception the fix invents; its second request authored (declaring that test) or not. */
function folding(said: string, authored: boolean) {
  const testPatch = [
    "diff --git a/tests/test_m.py b/tests/test_m.py",
    "new file mode 100644",
    "--- /dev/null",
    "+++ b/tests/test_m.py",
    "@@ -0,0 +1,7 @@",
    "+import pytest",
    "+from pkg import m",
    "+def test_fold():",
    "+    assert m.fold(2) == 13",
    "+def test_fold_negative():",
    "+    with pytest.raises(FoldError):",
    "+        m.fold(-1)",
    "",
  ].join("\n");
  const reference = [
    "diff --git a/pkg/m.py b/pkg/m.py",
    "--- a/pkg/m.py",
    "+++ b/pkg/m.py",
    "@@ -1,2 +1,6 @@",
    "+class FoldError(ValueError):",
    "+    pass",
    " def fold(x):",
    "+    if x < 0:",
    "+        raise FoldError(x)",
    "     return x * 6 + 1",
    "",
  ].join("\n");
  const source = (kind: "issue" | "review" | "authored") => ({
    sources: [{ kind, record_id: "r", author: "a", ...(kind === "authored" ? { file: "ext.yaml" } : {}) }],
  });
  const requests: Request[] = [
    { stage: 1, text: "`fold(x)` should return 13 for 2.", provenance: source("issue") },
    { stage: 2, text: said, provenance: source(authored ? "authored" : "review"), ...(authored ? { tests: ["tests/test_m.py::test_fold_negative"] } : {}) },
  ];
  return {
    task: { id: "o__r-1", requests, verifier: { test_patch: testPatch, fail_to_pass: ["tests/test_m.py::test_fold", "tests/test_m.py::test_fold_negative"] } },
    referencePatch: reference,
  };
}

describe("the gate: human decisions and hard findings exclude, the risk only ranks", () => {
  it("an authored stage whose test checks an exception its request never states is excluded by itself; stated, it stays", async () => {
    const setup = { rules: rulesInUse(), gate };
    const unstated = await auditTask({ ...folding("`fold` must refuse negative input.", true), decisions: {} }, setup);
    expect(unstated.flags.filter((f) => f.authored).map((f) => [f.flag, f.gate])).toEqual([
      ["new_name", "excludes alone"],
      ["unrequested_exception", "excludes alone"],
    ]);
    expect(unstated.exclusion).toMatchObject({ reason: "unfair_verifier", by: "hard finding" });
    expect(unstated.exclusion!.message).toContain("unrequested_exception (tests/test_m.py::test_fold_negative: expects `FoldError`, which no request names)");
    // An imported decision covers the upstream stage only: the authored stage's own check still excludes.
    const imported = {
      task: "o__r-1",
      verdict: "approve" as const,
      reason: "fine",
      scope: "upstream" as const,
      annotators: "x",
      scores: { false_negative: 0, underspecified: 0, other_major_issues: 0, filter_out: false },
    };
    const approved = await auditTask(
      { ...folding("`fold` must refuse negative input.", true), decisions: { imported: { ...imported, file: "i.yaml", annotatorsOf: "them" } } },
      setup,
    );
    expect(approved.exclusion?.by).toBe("hard finding");
    expect((await auditTask({ ...folding("`fold` must raise FoldError for negative input.", true), decisions: {} }, setup)).exclusion).toBeUndefined();
  });

  it("upstream, the same findings only rank the task; a test no request names beside one a request names excludes, unless a decision covers it", async () => {
    const setup = { rules: rulesInUse(), gate };
    const upstream = await auditTask({ ...folding("`fold` must refuse negative input.", false), decisions: {} }, setup);
    expect(upstream.flags.find((f) => f.flag === "unrequested_exception")!.gate).toBe("only with a decision");
    expect(upstream.exclusion).toMatchObject({ reason: "unjustified_test", by: "hard finding" });
    expect(upstream.exclusion!.message).toContain("unrequested_test (tests/test_m.py::test_fold_negative: checks what no request asks");
    const imported = {
      task: "o__r-1",
      verdict: "approve" as const,
      reason: "fine",
      scope: "upstream" as const,
      annotators: "x",
      scores: { false_negative: 1, underspecified: 0, other_major_issues: 0, filter_out: false },
    };
    const covered = await auditTask(
      { ...folding("`fold` must refuse negative input.", false), decisions: { imported: { ...imported, file: "i.yaml", annotatorsOf: "them" } } },
      setup,
    );
    expect(covered.exclusion).toBeUndefined();
    expect(covered.imported).toMatchObject({ verdict: "approve", file: "i.yaml" });
    // An imported exclusion names the annotators and the file once, whichever names the other.
    const excluding = {
      ...imported,
      verdict: "exclude" as const,
      reason: "tests check more than asked",
      scores: { ...imported.scores, false_negative: 3, filter_out: true },
    };
    const messages: [string, string][] = [
      ["them", "excluded by them (i.yaml; false_negative 3, filter_out)"],
      ["the annotators of i.yaml", "excluded by the annotators of i.yaml (false_negative 3, filter_out)"],
    ];
    for (const [annotatorsOf, said] of messages)
      expect(
        (
          await auditTask(
            { ...folding("`fold` must refuse negative input.", false), decisions: { imported: { ...excluding, file: "i.yaml", annotatorsOf } } },
            setup,
          )
        ).exclusion,
      ).toEqual({ reason: "audit_excluded", by: "imported decision", message: `o__r-1: ${said}: tests check more than asked` });
    const local = { task: "o__r-1", verdict: "exclude" as const, auditor: "ann", reason: "ambiguous", contracts: {}, file: "d.yaml" };
    expect((await auditTask({ ...folding("`fold` must raise FoldError for negative input.", false), decisions: { local } }, setup)).exclusion).toEqual({
      reason: "audit_excluded",
      by: "local decision",
      message: "o__r-1: excluded by ann (d.yaml): ambiguous",
    });
  });

  it("on an extended task, a test its authored stage declares shows nothing of the issue's words: an upstream test no request names beside it stays a lead", async () => {
    // The upstream request names nothing test_fold checks; the authored stage declares (and names) test_fold_negative.
    const task = folding("`fold` must raise FoldError for negative input.", true);
    task.task.requests[0]!.text = "Folding is broken for small numbers.";
    const record = await auditTask({ ...task, decisions: {} }, { rules: rulesInUse(), gate });
    expect(record.flags.filter((f) => f.subject === "tests/test_m.py::test_fold").map((f) => f.flag)).toEqual(["unjustified_test"]);
    expect(record.exclusion).toBeUndefined();
  });

  it("puts a rule in force only on a measurement out of sample whose lower bound is above the base rate", () => {
    const unseen = Array.from({ length: 40 }, (_, i) => `other__repo-${i + 1}`);
    const measured = {
      records_file: "hidden.jsonl",
      annotations_file: "hidden.csv",
      records: unseen,
      fired: unseen.slice(0, 12),
      unfair: unseen.slice(0, 11),
      scored_2_or_more: 16,
    };
    const inForce = checkMeasurement("exact_message", "excludes alone", measured, new Set(), "k");
    expect(inForce.precision).toMatchObject({ fired: 12, unfair: 11, method: "unseen" });
    expect(inForce.precision.interval![0]).toBeGreaterThan(0.4);
    expect(() => checkMeasurement("exact_message", "excludes alone", { ...measured, unfair: unseen.slice(0, 8) }, new Set(), "k")).toThrow(
      /k: exact_message's precision 0.6667 has a lower bound of 0.3906 \(95 % Wilson\), not above the base rate 0.4000 of the 40 records/,
    );
    // Measured on the records the audit's authors read: in sample, refused.
    const provenance = loadProvenance();
    const seen = provenance.looked_at.records.slice(0, 40);
    const settings = RuleSettings.parse({
      exact_message: { gate: "excludes alone", measured: { ...measured, records: seen, fired: seen.slice(0, 12), unfair: seen.slice(0, 11) } },
    });
    expect(() => rulesInForce(settings, provenance, "stages.audit.rules")).toThrow(GateConfigError);
    expect(() => rulesInForce(settings, provenance, "stages.audit.rules")).toThrow(
      /stages\.audit\.rules\.exact_message\.measured\.records: 40 of its 40 records/,
    );
    // A gate that excludes needs the measurement at all.
    expect(RuleSettings.safeParse({ exact_message: { gate: "excludes alone" } }).success).toBe(false);
    expect(RuleSettings.safeParse({ unrequested_test: { gate: "only with a decision" } }).success).toBe(true);
    expect(wilson(5, 7)).toEqual([0.3589, 0.9178]);
  });

  it("counts how many tasks an auditor reads, riskiest first, to find half of the unfair ones", () => {
    const scored = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4].map((risk, i) => ({ id: `t-${i}`, risk, score: [3, 0, 2, 0, 2, 3][i]! }));
    expect(triage("x", "in sample", scored)).toEqual({ scheme: "x", method: "in sample", read: 3, of: 6, found: 2, unfair: 4, random: 2.8 });
  });
});

describe("decisions imported from annotations, and an auditor's", () => {
  const csv =
    "instance_id,underspecified,underspecified_notes,false_negative,false_negative_notes,other_major_issues,other_notes,false_negative_decided_by,filter_out\n" +
    "django__django-12915,0.0,,0.0,The tests check the handler.,0.0,,7,False\n" +
    "sphinx-doc__sphinx-8273,1.0,,3.0,The setting's name is invented by the fix.,0.0,,18,True\n" +
    'django__django-14730,2.0,"It is unclear what to do.",1.0,Fine tests.,0.0,,6,True\n';

  it("excludes a record scored false_negative 2 or more, or filter_out, with the notes as the reason and the scores as provenance", () => {
    const imported = importAnnotations("a.csv", Buffer.from(csv), readAnnotations("a.csv", csv), { annotators: "SWE-bench Verified's" });
    expect(imported.imported).toMatchObject({ from: "a.csv", annotators: "SWE-bench Verified's", threshold: { false_negative: 2, filter_out: true } });
    expect(imported.decisions.map((d) => [d.task, d.verdict, d.reason])).toEqual([
      ["django__django-12915", "approve", "false_negative 0: The tests check the handler."],
      ["django__django-14730", "exclude", "filter_out, underspecified 2: It is unclear what to do."],
      ["sphinx-doc__sphinx-8273", "exclude", "false_negative 3: The setting's name is invented by the fix."],
    ]);
    expect(imported.decisions[2]!.annotators).toBe("false_negative by 18");
  });

  it("audit swebench follows imported decisions exactly, and with none excludes only on hard findings", async () => {
    const work = fileTempDir();
    const ids = ["django__django-12915", "django__django-14730", "sphinx-doc__sphinx-8273"];
    const { candidates } = importSwebench("r.jsonl", ids.map((id) => JSON.stringify(records.get(id))).join("\n") + "\n");
    const plain = await auditSwebench({ candidates, workDir: join(work, "w"), log: silentLogger });
    // django-12915's third test checks what the issue does not ask beside two that do: a hard finding. The others' findings only rank.
    expect(plain.records.map((r) => [r.task_id, r.exclusion?.by ?? "kept"])).toEqual([
      ["django__django-12915", "hard finding"],
      ["django__django-14730", "kept"],
      ["sphinx-doc__sphinx-8273", "kept"],
    ]);
    const book = decisionBook(undefined, [{ file: "a.csv", decisions: importAnnotations("a.csv", Buffer.from(csv), readAnnotations("a.csv", csv)) }]);
    const decided = await auditSwebench({ candidates, workDir: join(work, "w"), log: silentLogger, decisions: book });
    expect(decided.records.map((r) => [r.task_id, r.exclusion?.by ?? "kept"])).toEqual([
      ["django__django-12915", "kept"],
      ["django__django-14730", "imported decision"],
      ["sphinx-doc__sphinx-8273", "imported decision"],
    ]);
    expect(decided.records[2]!.exclusion!.message).toContain("false_negative 3: The setting's name is invented by the fix.");
  });

  it("`audit import-annotations` writes the decisions file a config names, and refuses a bad score naming the row", async () => {
    const work = fileTempDir();
    writeFileSync(join(work, "a.csv"), csv);
    const run = await runCli(["audit", "import-annotations", join(work, "a.csv"), "--out", join(work, "imported.yaml")]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("3 decisions: 2 exclude (1 false_negative 2 or more, 1 filter_out alone), 1 approve");
    expect((parse(readFileSync(join(work, "imported.yaml"), "utf8")) as { decisions: unknown[] }).decisions).toHaveLength(3);
    writeFileSync(join(work, "bad.csv"), "instance_id,false_negative,filter_out\nx__y-1,2.0,maybe\n");
    const bad = await runCli(["audit", "import-annotations", join(work, "bad.csv"), "--out", join(work, "x.yaml")]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("bad.csv row 2, record x__y-1: field filter_out: expected True or False");
  });

  it("`audit decide` records a verdict with its reason, replaces the task's earlier one, and keeps the file's comments", async () => {
    const work = fileTempDir();
    const file = join(work, "decisions.yaml");
    writeFileSync(file, "# reviewed by the team\ndecisions:\n  - task: a__b-1\n    verdict: approve\n    auditor: bo\n    reason: fine\n");
    const decide = (task: string, verdict: string, ...more: string[]) =>
      runCli(["audit", "decide", "--decisions", file, "--task", task, "--verdict", verdict, "--auditor", "ann", "--reason", `${verdict} it`, ...more]);
    expect((await decide("a__b-2", "exclude")).code).toBe(0);
    expect((await decide("a__b-1", "approve", "--contract", "t.py::test_x=public names are listed")).code).toBe(0);
    const written = readFileSync(file, "utf8");
    expect(written.startsWith("# reviewed by the team\n")).toBe(true);
    expect(readDecisions(file, written).decisions).toEqual([
      { task: "a__b-1", verdict: "approve", auditor: "ann", reason: "approve it", contracts: { "t.py::test_x": "public names are listed" } },
      { task: "a__b-2", verdict: "exclude", auditor: "ann", reason: "exclude it", contracts: {} },
    ]);
    // With the config, the file its audit stage names, resolved against the config's folder.
    writeFileSync(join(work, "pipeline.yaml"), "stages:\n  audit:\n    decisions: reviewed/mine.yaml\n");
    const byConfig = await runCli([
      "audit",
      "decide",
      "-c",
      join(work, "pipeline.yaml"),
      "--task",
      "c__d-1",
      "--verdict",
      "exclude",
      "--auditor",
      "bo",
      "--reason",
      "the issue is ambiguous",
    ]);
    expect(byConfig.code, byConfig.stderr).toBe(0);
    expect(readDecisions("mine.yaml", readFileSync(join(work, "reviewed", "mine.yaml"), "utf8")).decisions.map((d) => d.task)).toEqual(["c__d-1"]);
    const refused = await decide("a__b-3", "maybe");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--verdict maybe: expected approve or exclude");
    expect(() => recordDecision("d.yaml", "decisions: [1", { task: "x", verdict: "approve", auditor: "a", reason: "r", contracts: {} })).toThrow(
      /d.yaml: not valid YAML/,
    );
  });
});
