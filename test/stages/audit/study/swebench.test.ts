import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { readAnnotations } from "../../../../stages/audit/annotations.ts";
import { agreement } from "../../../../stages/audit/study/agreement.ts";
import { runCli } from "../../../helpers/cli-in-process.ts";
import { fileTempDir } from "../../../helpers/tmp.ts";
import { MIRRORS, records } from "../../../helpers/audit-subjects.ts";

describe("agreement with human annotations", () => {
  it("computes the confusion matrix, precision, recall and both kappas", () => {
    // 4 both, 1 audit only, 2 annotators only, 3 neither: po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5.
    const pairs = [
      ...Array.from({ length: 4 }, () => ({ severity: 2, score: 3 })),
      { severity: 3, score: 0 },
      ...Array.from({ length: 2 }, () => ({ severity: 1, score: 2 })),
      ...Array.from({ length: 3 }, () => ({ severity: 0, score: 0 })),
    ];
    const a = agreement("all", "in sample", pairs);
    expect(a).toMatchObject({ records: 10, both: 4, audit_only: 1, annotators_only: 2, neither: 3, flagged_of_score0: "1 of 4", flagged_of_score3: "4 of 4" });
    expect(a.precision).toBeCloseTo(0.8);
    expect(a.recall).toBeCloseTo(4 / 6);
    expect(a.kappa).toBeCloseTo(0.4);
    expect(
      agreement(
        "same",
        "in sample",
        [0, 1, 2, 3].map((s) => ({ severity: s, score: s })),
      ).weighted_kappa,
    ).toBeCloseTo(1);
    // The risk's AUC: the share of (scored 2+, scored below) pairs it orders right.
    const risks = [
      { severity: 0, score: 0, risk: 0.1 },
      { severity: 2, score: 3, risk: 0.9 },
      { severity: 1, score: 2, risk: 0.2 },
      { severity: 0, score: 1, risk: 0.3 },
    ];
    expect(agreement("risk", "in sample", risks).auc).toBeCloseTo(0.75);
    expect(a.auc).toBeNull();
  });

  it("names the file, row and field of a bad annotation", () => {
    expect(() => readAnnotations("a.csv", "instance_id,false_negative\nx__y-1,2.0\nx__y-2,high\n")).toThrow(
      'a.csv row 3, record x__y-2: field false_negative: expected a score from 0 to 3, got "high"',
    );
  });
});

describe("switch-swe audit swebench", () => {
  let out: string;
  let result: Awaited<ReturnType<typeof runCli>>;
  beforeAll(async () => {
    const work = fileTempDir();
    out = join(work, "report");
    const ids = ["pylint-dev__pylint-6506", "django__django-16527", "django__django-14730", "sqlfluff__sqlfluff-1625"];
    const file = join(work, "records.jsonl");
    writeFileSync(file, ids.map((id) => JSON.stringify(records.get(id))).join("\n") + "\n");
    const annotations = join(work, "annotations.csv");
    writeFileSync(
      annotations,
      'instance_id,false_negative,false_negative_notes\npylint-dev__pylint-6506,3.0,exit\ndjango__django-16527,0.0,fine\ndjango__django-14730,2.0,"message, exact"\n',
    );
    // The rules' own severities: what this checks is the command, not the risk model's weights (test/stages/audit/risk/risk.test.ts).
    result = await runCli([
      "audit",
      "swebench",
      file,
      "--mirrors",
      MIRRORS,
      "--annotations",
      annotations,
      "--risk-model",
      "none",
      "--out",
      out,
      "--work-dir",
      join(work, "w"),
    ]);
  });

  it("writes the report, audit.json and the agreement, and says what it measured", () => {
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("4 records audited");
    expect(result.stdout).toContain("the risk against 3 annotated records (as shipped; in sample): kappa 1.00");
    const json = JSON.parse(readFileSync(join(out, "audit.json"), "utf8")) as {
      records: { instance_id: string; severity: number; flags: { kind: string; test: string; evidence: unknown[] }[] }[];
      agreement: { scope: string }[];
    };
    expect(json.records.map((r) => [r.instance_id, r.severity >= 2])).toEqual([
      ["django__django-14730", true],
      ["django__django-16527", false],
      ["pylint-dev__pylint-6506", true],
      ["sqlfluff__sqlfluff-1625", false],
    ]);
    expect(json.agreement.map((a) => a.scope)).toEqual(["django/django", "pylint-dev/pylint", "all"]);
    expect(readFileSync(join(out, "agreement.md"), "utf8")).toContain("| all | in sample | 3 | 2 | 0 | 0 | 1 |");
    // Per rule: where it fires, its precision and how it was measured, and the annotated records it was written from (pylint-6506 for unrequested_exception).
    expect(readFileSync(join(out, "agreement.md"), "utf8")).toContain(
      "| unrequested_exception | 0 | 0 | 0 | 1 | 1.00 [0.21, 1.00], 1 of 1, in sample | 1 | 0 | — |",
    );
    const page = readFileSync(join(out, "index.html"), "utf8");
    // Every flag's evidence is on the page, where a person can check it.
    expect(page).toContain("tests/config/test_config.py:67");
    expect(page).toContain("Agreement of this audit with the annotations given");
    expect(readFileSync(join(out, "alignment.csv"), "utf8")).toMatch(/^task,repo,severity,test,/);
  });

  it("run again into the same folder without annotations, leaves no agreement from the earlier run", async () => {
    const work = fileTempDir();
    const file = join(work, "r.jsonl");
    writeFileSync(file, JSON.stringify(records.get("django__django-16527")) + "\n");
    const again = join(work, "again");
    const annotations = join(work, "a.csv");
    writeFileSync(annotations, "instance_id,false_negative\ndjango__django-16527,0.0\n");
    expect((await runCli(["audit", "swebench", file, "--annotations", annotations, "--out", again, "--work-dir", join(work, "w")])).code).toBe(0);
    expect(existsSync(join(again, "agreement.md"))).toBe(true);
    const plain = await runCli(["audit", "swebench", file, "--out", again, "--work-dir", join(work, "w")]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(existsSync(join(again, "agreement.md"))).toBe(false);
    expect(JSON.parse(readFileSync(join(again, "audit.json"), "utf8"))).not.toHaveProperty("agreement");
  });

  it("refuses bad annotations with the file, row and field, exit 2", async () => {
    const work = fileTempDir();
    const bad = join(work, "bad.csv");
    writeFileSync(bad, "instance_id,false_negative\nx__y-1,7\n");
    const file = join(work, "r.jsonl");
    writeFileSync(file, JSON.stringify(records.get("django__django-16527")) + "\n");
    const refused = await runCli(["audit", "swebench", file, "--annotations", bad, "--out", join(work, "o")]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${bad} row 2, record x__y-1: field false_negative`);
  });
});
