import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import seedrandom from "seedrandom";
import { beforeAll, describe, expect, it } from "vitest";
import { AuditMeasurements, type AuditRecord, RiskModel } from "../../../../pipeline/schemas/audit.ts";
import { fitLogistic, predict } from "../../../../stages/audit/risk/logistic.ts";
import { type Blind, featureValue, loadRiskModel, riskOf, severityOfRisk } from "../../../../stages/audit/risk/model.ts";
import { fitRisk } from "../../../../stages/audit/study/fit.ts";
import { auc } from "../../../../stages/audit/study/statistics.ts";
import { drawSeed, folds, kFold } from "../../../../stages/audit/study/validation.ts";
import { alignTask } from "../../../../stages/audit/runner.ts";
import { ModelEndpoint } from "../../../../pipeline/model-endpoint/server.ts";
import { runCli } from "../../../helpers/cli-in-process.ts";
import { SHARED_DATA } from "../../../helpers/shared-data.ts";
import { fileTempDir } from "../../../helpers/tmp.ts";

const signals = { reference_lines: 3, open_sentences: 0, test_calls: 4, leaked_names: 0, tests_added: 1, shared_names: 0 };

/** A record for the model: its flags (kind and severity) and signals. */
function record(id: string, flags: [string, number][], over: Partial<typeof signals> = {}): Pick<AuditRecord, "task_id" | "flags" | "links" | "signals"> {
  return {
    task_id: id,
    flags: flags.map(([flag, severity]) => ({
      flag: flag as AuditRecord["flags"][number]["flag"],
      subject: "t",
      detail: "",
      severity,
      evidence: [],
      gate: "only with a decision" as const,
    })),
    links: [{ test: "t", stages: [], evidence: [] }],
    signals: { ...signals, ...over },
  };
}

describe("the risk model", () => {
  it("fits a logistic regression that recovers the weights data were drawn from, and shrinks them under a heavier penalty", () => {
    const random = seedrandom("logistic");
    const x: number[][] = [];
    const y: boolean[] = [];
    for (let i = 0; i < 4000; i++) {
      const row = [random() * 4 - 2, random() < 0.5 ? 1 : 0];
      x.push(row);
      y.push(random() < 1 / (1 + Math.exp(-(-0.5 + 1.5 * row[0]! - 1 * row[1]!))));
    }
    const fit = fitLogistic(x, y, 0);
    expect(fit.intercept).toBeCloseTo(-0.5, 0);
    expect(fit.weights[0]).toBeCloseTo(1.5, 0);
    expect(fit.weights[1]).toBeCloseTo(-1, 0);
    const shrunk = fitLogistic(x, y, 2000);
    expect(Math.abs(shrunk.weights[0]!)).toBeLessThan(Math.abs(fit.weights[0]!));
    // The same data, the same fit, to the last bit.
    expect(fitLogistic(x, y, 0)).toEqual(fit);
    expect(predict(fit, [2, 0])).toBeGreaterThan(predict(fit, [-2, 0]));
  });

  it("reads each feature from the record, and credits no rule on a record it was written from", () => {
    const r = record("a__b-1", [
      ["new_name", 3],
      ["open_choice", 2],
      ["unjustified_test", 1],
      ["no_repository", 0],
    ]);
    expect(featureValue("findings", r)).toBe(2);
    expect(featureValue("unlinked", r)).toBe(1);
    expect(featureValue("reference_lines", r)).toBeCloseTo(Math.log1p(3));
    const blind: Blind = (flag, id) => flag === "open_choice" && id === "a__b-1";
    expect(featureValue("findings", r, blind)).toBe(1);
    expect(featureValue("findings", { ...r, task_id: "a__b-2" }, blind)).toBe(2);
    expect(() => featureValue("judge", r)).toThrow("the judge has not judged it");
  });

  it("bands risks into severities with thresholds fitted for the best agreement, 1 ≤ 2 ≤ 3", () => {
    const rows = Array.from({ length: 40 }, (_, i) => ({
      input: record(`x__y-${i}`, i % 4 >= 2 ? [["exact_message", 2]] : [], { reference_lines: i }),
      score: i % 4,
    }));
    const model = fitRisk(["findings", "reference_lines"], rows, () => false);
    const [one, two, three] = model.thresholds;
    expect(one).toBeLessThanOrEqual(two);
    expect(two).toBeLessThanOrEqual(three);
    expect(model.weights.findings).toBeGreaterThan(0);
    // Every record with the finding is flagged; none without.
    for (const r of rows) expect(severityOfRisk(model, riskOf(model, r.input)) >= 2).toBe(r.score >= 2);
  });

  it("folds records the same way on every run, each in exactly one fold", () => {
    const ids = Array.from({ length: 23 }, (_, i) => `r-${i}`);
    const a = folds(ids);
    expect(a).toEqual(folds([...ids].reverse()));
    expect(a).toHaveLength(10);
    expect(a.flat().sort()).toEqual([...ids].sort());
    expect(Math.max(...a.map((f) => f.length)) - Math.min(...a.map((f) => f.length))).toBeLessThanOrEqual(1);
    // Another draw of the folds (--fold-draws) holds the same records, in other folds, the same on every run.
    const other = folds(ids, 10, drawSeed(1));
    expect(other.flat().sort()).toEqual([...ids].sort());
    expect(other).not.toEqual(a);
    expect(other).toEqual(folds(ids, 10, drawSeed(1)));
    expect(folds(ids, 10, drawSeed(2))).not.toEqual(other);
  });

  it("cross-validated, a rule that fires only where it was written from is worth nothing, though it looks perfect in the sample", () => {
    // The rule fires on exactly the unfair records, each one it was written from; the other signal is noise.
    const random = seedrandom("blind");
    const rows = Array.from({ length: 60 }, (_, i) => {
      const unfair = i % 2 === 0;
      const shaped = unfair;
      return {
        input: record(`s__t-${i}`, shaped ? [["open_choice", 2]] : [], { test_calls: Math.floor(random() * 10) }),
        repo: "s/t",
        score: unfair ? 2 : 0,
        shaped,
      };
    });
    const shapedIds = new Set(rows.filter((r) => r.shaped).map((r) => r.input.task_id));
    const blind: Blind = (flag, id) => flag === "open_choice" && shapedIds.has(id);
    const truth = (scored: { score: number }[]) => scored.map((s) => s.score >= 2);
    const open = kFold(rows, ["findings", "test_calls"], () => false);
    const honest = kFold(rows, ["findings", "test_calls"], blind);
    expect(
      auc(
        open.map((s) => s.risk),
        truth(open),
      )!,
    ).toBeGreaterThan(0.9);
    expect(
      auc(
        honest.map((s) => s.risk),
        truth(honest),
      )!,
    ).toBeLessThan(0.6);
  });
});

/** A fix and its tests as unified diffs of one file each, with the lines each adds (and a context line). */
const diff = (file: string, context: string, added: string[]) =>
  [
    `diff --git a/${file} b/${file}`,
    `--- a/${file}`,
    `+++ b/${file}`,
    `@@ -1,1 +1,${added.length + 1} @@`,
    ` ${context}`,
    ...added.map((l) => `+${l}`),
    "",
  ].join("\n");

/** The shared_names signal of a task whose issue says `issue`, whose fix adds `fix` and whose test patch adds `tests`. */
async function sharedNames(issue: string, fix: string[], tests: string[]): Promise<number> {
  const testPatch = diff("tests/test_parse.py", "from parse import parse", ["def test_parse():", ...tests]);
  const found = await alignTask({
    task: {
      id: "o__r-1",
      requests: [{ stage: 1, text: issue, provenance: { sources: [{ kind: "issue", record_id: "o__r-1", author: "x" }] } }],
      verifier: { test_patch: testPatch, fail_to_pass: ["tests/test_parse.py::test_parse"] },
    },
    referencePatch: diff("parse.py", "def parse(text):", fix),
  });
  return found.signals.shared_names;
}

describe("the shared_names signal", () => {
  const issue = "parse() crashes on an empty string; it should return an empty list.";
  const fix = ["    if not text:", "        raise EmptyInputError(text)", "    return normalise_tokens(text)"];

  it("is the overlap (Ochiai's) of the names the test patch and the fix bring that the issue does not contain", async () => {
    // The tests bring test_parse, EmptyInputError and expected ("parse" is the issue's); the fix brings
    // EmptyInputError and normalise_tokens ("text" is on its context line already): one shared of 3 and 2.
    const value = await sharedNames(issue, fix, ["    with pytest.raises(EmptyInputError):", "        expected = parse('')"]);
    expect(value).toBeCloseTo(1 / Math.sqrt(3 * 2), 4);
  });

  it("is 0 once the issue names what the tests share with the fix, or when they share nothing", async () => {
    expect(await sharedNames(`${issue} Raise an EmptyInputError instead.`, fix, ["    with pytest.raises(EmptyInputError):", "        parse('')"])).toBe(0);
    expect(await sharedNames(issue, fix, ["    assert parse('') == []"])).toBe(0);
  });

  it("falls as the test patch brings more names of its own: one shared name among many is weaker evidence", async () => {
    const few = await sharedNames(issue, fix, ["    with pytest.raises(EmptyInputError):", "        parse('')"]);
    const many = await sharedNames(issue, fix, [
      "    with pytest.raises(EmptyInputError):",
      "        parse('')",
      "    assert parse('alpha beta') == ['alpha', 'beta']",
      "    assert parse('gamma delta epsilon') == ['gamma', 'delta', 'epsilon']",
    ]);
    expect(many).toBeGreaterThan(0);
    expect(many).toBeLessThan(few);
  });
});

describe("switch-swe audit fit-risk, and an audit with its weights", () => {
  let work: string;
  let fit: Awaited<ReturnType<typeof runCli>>;
  const model = () => join(work, "risk-model.json");
  beforeAll(async () => {
    work = fileTempDir();
    // Twenty-four annotated records, read from their test patches: quick, and enough to fit and to fold.
    const annotations = readFileSync(join(SHARED_DATA, "swebench-lite-test-half.annotations.csv"), "utf8");
    const annotated = new Set([...annotations.matchAll(/^(\w[\w-]*__[\w-]+-\d+),/gm)].map((m) => m[1]!));
    const lines = readFileSync(join(SHARED_DATA, "swebench-lite-test-half.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l && annotated.has((JSON.parse(l) as { instance_id: string }).instance_id))
      .slice(0, 24);
    writeFileSync(join(work, "records.jsonl"), lines.join("\n") + "\n");
    fit = await runCli([
      "audit",
      "fit-risk",
      "--swebench",
      join(work, "records.jsonl"),
      "--annotations",
      join(SHARED_DATA, "swebench-lite-test-half.annotations.csv"),
      "--work-dir",
      join(work, "w"),
      "--out",
      model(),
      "--measurements",
      join(work, "measurements.json"),
      "--fold-draws",
      "3",
    ]);
  });

  it("writes the weights with the records they came from, and prints the cross-validated figures", () => {
    expect(fit.code, fit.stderr).toBe(0);
    const written = RiskModel.parse(JSON.parse(readFileSync(model(), "utf8")));
    expect(written.fitted_on.records).toHaveLength(24);
    expect(written.model.features).toEqual(loadRiskModel().model.features);
    expect(fit.stdout).toContain("| 10 folds by record |");
    expect(fit.stdout).toContain("| one repository left out |");
    expect(fit.stdout).toContain("| rule | scored 0 | scored 1 | scored 2 | scored 3 | precision (share scored 2+) [95 % Wilson], measured | written from |");
    // What the page shows, with how each figure was measured: every rule's author read these records.
    const measurements = AuditMeasurements.parse(JSON.parse(readFileSync(join(work, "measurements.json"), "utf8")));
    expect(measurements.annotated).toBe(24);
    expect(Object.values(measurements.rules).every((r) => r.method === "in sample")).toBe(true);
    expect(measurements.triage.map((t) => [t.scheme, t.method])).toEqual([
      ["the shipped risk", "in sample"],
      ["10 folds by record", "cross-validated on the given records"],
      ["one repository left out", "cross-validated on the given records"],
    ]);
    // The spread of the 10-fold figures over other draws of the folds: how much of one row is luck.
    expect(fit.stdout).toMatch(
      /10 folds by record over 3 other draws of the folds: kappa -?\d\.\d\d ± \d\.\d\d, AUC of risk \d\.\d\d ± \d\.\d\d; flagged \d+\.\d of \d+ scored 0, \d+\.\d of \d+ scored 3 \(means\)/,
    );
  });

  it("refuses a number of draws of the folds that is not a whole number of 1 or more, and a penalty below 0, before reading anything", async () => {
    const base = ["audit", "fit-risk", "--swebench", join(work, "records.jsonl"), "--annotations", "missing.csv"];
    const draws = await runCli([...base, "--fold-draws", "0"]);
    expect(draws.code).toBe(2);
    expect(draws.stderr).toContain("option '--fold-draws <n>' argument '0' is invalid. expected a whole number of at least 1.");
    for (const value of ["-1", "ten", ""]) {
      const lambda = await runCli([...base, "--lambda", value]);
      expect(lambda.code, value).toBe(2);
      expect(lambda.stderr, value).toContain(`option '--lambda <x>' argument '${value}' is invalid. expected a number of 0 or more.`);
    }
  });

  it("gives every record a risk, and a severity that is the band its risk falls in", async () => {
    const out = join(work, "out");
    const run = await runCli(["audit", "swebench", join(work, "records.jsonl"), "--risk-model", model(), "--out", out, "--work-dir", join(work, "w")]);
    expect(run.code, run.stderr).toBe(0);
    const written = RiskModel.parse(JSON.parse(readFileSync(model(), "utf8")));
    const json = JSON.parse(readFileSync(join(out, "audit.json"), "utf8")) as { records: { severity: number; risk: number }[] };
    expect(json.records).toHaveLength(24);
    for (const r of json.records) {
      expect(r.risk).toBeGreaterThan(0);
      expect(r.risk).toBeLessThan(1);
      expect(r.severity).toBe(written.model.thresholds.filter((t) => r.risk >= t).length);
    }
    // The page puts the riskiest of the undecided tasks first.
    const page = readFileSync(join(out, "index.html"), "utf8");
    const undecided = page.slice(page.indexOf('<section id="undecided">'), page.indexOf('<section id="excluded">'));
    const order = [...undecided.matchAll(/<span class="risk">risk ([\d.]+)<\/span>/g)].map((m) => Number(m[1]));
    expect(order.length).toBeGreaterThan(10);
    expect(order).toEqual([...order].sort((a, b) => b - a));
    expect(page).toContain("what raises or lowers its risk");
  });

  it("with --risk-model none, gives the rules' own severities and no risk", async () => {
    const out = join(work, "plain");
    const run = await runCli(["audit", "swebench", join(work, "records.jsonl"), "--risk-model", "none", "--out", out, "--work-dir", join(work, "w")]);
    expect(run.code, run.stderr).toBe(0);
    const json = JSON.parse(readFileSync(join(out, "audit.json"), "utf8")) as { records: { risk?: number }[] };
    expect(json.records.every((r) => r.risk === undefined)).toBe(true);
  });

  it("with a judge, fits a second model that reads its score, and an audit the judge judged is scored by it", async () => {
    const endpoint = await ModelEndpoint.start({ script: "judge", knowledge: { schedules: [], stages: () => 1, plan: () => ({}) as never, continuation: "" } });
    try {
      const adapter = join(work, "judge.yaml");
      writeFileSync(
        adapter,
        `protocol: anthropic\nmodel: scripted\nkey_env: SWITCH_SWE_TEST_JUDGE_KEY\nbase_url: ${endpoint.url}\nprice_per_million: {input: 1, output: 1}\n`,
      );
      process.env.SWITCH_SWE_TEST_JUDGE_KEY = "k";
      const judged = join(work, "judged-model.json");
      const records = join(work, "records.jsonl");
      const annotations = join(SHARED_DATA, "swebench-lite-test-half.annotations.csv");
      const fitted = await runCli([
        "audit",
        "fit-risk",
        "--swebench",
        records,
        "--annotations",
        annotations,
        "--judge",
        adapter,
        "--work-dir",
        join(work, "w"),
        "--out",
        judged,
      ]);
      expect(fitted.code, fitted.stderr).toBe(0);
      const model = RiskModel.parse(JSON.parse(readFileSync(judged, "utf8")));
      expect(model.with_judge!.features).toEqual([...model.model.features, "judge"]);
      expect(model.with_judge!.judge).toEqual({ model: "scripted", prompt_version: "judge-1" });
      expect(endpoint.calls).toHaveLength(24 * 3);
      // The audit asks nothing again (the verdicts are cached) and scores each record with the judge's model.
      const out = join(work, "judged");
      const run = await runCli(["audit", "swebench", records, "--judge", adapter, "--risk-model", judged, "--out", out, "--work-dir", join(work, "w")]);
      expect(run.code, run.stderr).toBe(0);
      expect(endpoint.calls).toHaveLength(24 * 3);
      const read = (dir: string) =>
        (JSON.parse(readFileSync(join(dir, "audit.json"), "utf8")) as { records: { risk: number; severity: number; judge?: unknown }[] }).records;
      const withJudge = read(out);
      expect(withJudge.every((r) => r.judge !== undefined)).toBe(true);
      for (const r of withJudge) expect(r.severity).toBe(model.with_judge!.thresholds.filter((t) => r.risk >= t).length);
      // Without the judge, the same file's first model scores them: other risks.
      const plain = join(work, "unjudged");
      expect((await runCli(["audit", "swebench", records, "--risk-model", judged, "--out", plain, "--work-dir", join(work, "w")])).code).toBe(0);
      expect(read(plain).map((r) => r.risk)).not.toEqual(withJudge.map((r) => r.risk));
    } finally {
      delete process.env.SWITCH_SWE_TEST_JUDGE_KEY;
      await endpoint.close();
    }
  });

  it("refuses a model file that is not one, naming the file and the field", async () => {
    const bad = join(work, "bad.json");
    writeFileSync(bad, JSON.stringify({ why: "x", model: { features: ["nonsense"] } }));
    const run = await runCli(["audit", "swebench", join(work, "records.jsonl"), "--risk-model", bad, "--out", join(work, "o")]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${bad}: `);
    expect(run.stderr).toContain("model.features");
  });
});
