import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import type { PullIntent } from "../../demo/build.ts";
import { runProjectOnce } from "../../pipeline/project/project.ts";
import { AuditFlag, type AuditRecord } from "../../pipeline/schemas/audit.ts";
import type { Task } from "../../pipeline/schemas/task.ts";
import { alignTask } from "../../stages/audit/runner.ts";
import { changedEvidence, evidenceOf, testSource } from "../../stages/audit/readers/evidence.ts";
import { demoRunCopy, type DemoRunCopy } from "../helpers/demo-run.ts";
import { fileTempDir } from "../helpers/tmp.ts";

const CHROMIUM = "/usr/bin/chromium";

describe("evidence", () => {
  it("separates what a test calls from what it checks, and drops scaffolding", () => {
    const source = `def test_fold_rejects(sample_input):\n    with pytest.raises(TypeError, match="fold expects a number"):\n        importlib.import_module("pkg.mod").fold("2", scale=3)\n    assert importlib.import_module("pkg.mod").fold(2) == 7.0`;
    expect(evidenceOf(source, "test_fold_rejects")).toEqual({
      subject: ["fold", "pkg.mod"],
      behaviour: ["3", "7", "TypeError", "fold expects a number", "scale"],
    });
  });

  it("reads a string with any prefix Python accepts as what a test checks, and never pairs the quotes of two literals", () => {
    const source =
      'def test_r():\n    assert latex(a) == r"\\alpha " + "x y"\n    assert str(b) == u"be ta"\n    assert f"{c} c " + "d e" == rb"g h " + Rf"i j"';
    // Read without the prefix, the closing quote of `r"\alpha "` and the opening one of `"x y"` made a literal " + ".
    expect(evidenceOf(source, "test_r").behaviour).toEqual(["\\alpha ", "be ta", "d e", "g h ", "i j", "x y", "{c} c "]);
  });

  it("judges a changed test on what the patch changed in it", () => {
    const patch = `diff --git a/tests/test_m.py b/tests/test_m.py\n--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -1,3 +1,3 @@\n def test_g():\n-    assert importlib.import_module("pkg.old").g(1) == 5\n+    assert importlib.import_module("pkg.new").g(1) == 5\n`;
    const test = testSource(patch, "tests/test_m.py", "test_g")!;
    expect(changedEvidence(test, "test_g")).toEqual({ subject: ["pkg.new"], behaviour: [] });
  });

  it("links a test to the stages that name its subject and its behaviour, and flags the rest", async () => {
    const patch = `diff --git a/tests/test_m.py b/tests/test_m.py\n--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -0,0 +1,6 @@\n+def test_f():\n+    assert m.fold(2) == 13\n+def test_f_raises():\n+    with pytest.raises(ValueError, match="negative"):\n+        m.fold(-1)\n+def test_f_listed():\n+    assert "fold" in m.__all__\n`;
    const task = {
      id: "o__r-1",
      requests: [
        { stage: 1, text: "`fold(x)` should return 13 for 2.", provenance: { sources: [] } },
        { stage: 2, text: "`fold` must raise ValueError for negative input.", provenance: { sources: [] } },
        { stage: 3, text: "Please also make it faster.", provenance: { sources: [] } },
      ],
      verifier: { test_patch: patch, fail_to_pass: ["tests/test_m.py::test_f", "tests/test_m.py::test_f_raises", "tests/test_m.py::test_f_listed"] },
    } as unknown as Task;
    const { links, flags } = await alignTask({ task });
    expect(links.map((l) => [l.test.split("::")[1], l.stages])).toEqual([
      ["test_f", [1]],
      ["test_f_raises", [2]],
      ["test_f_listed", []],
    ]);
    expect(links[1]!.evidence.map((e) => `${e.stage}:${e.token}`).sort()).toEqual(["2:ValueError", "2:fold", "2:negative"]);
    expect(flags.map((f) => [f.flag, f.subject])).toEqual([
      ["no_repository", "o__r-1"],
      ["unjustified_test", "tests/test_m.py::test_f_listed"],
      // Other tests check what the requests ask: this one checks more than they ask.
      ["unrequested_test", "tests/test_m.py::test_f_listed"],
      ["unverified_stage", "stage 3"],
    ]);
    expect(flags.find((f) => f.flag === "unrequested_test")).toMatchObject({
      severity: 2,
      detail: "checks what no request asks, while `tests/test_m.py::test_f` checks what a request does",
      evidence: [{ file: "tests/test_m.py", line: 6, text: "def test_f_listed():" }],
    });
    expect((await alignTask({ task, contracts: { "tests/test_m.py::test_f_listed": "public API listing" } })).flags.map((f) => f.flag)).toEqual([
      "no_repository",
      "unverified_stage",
    ]);
  });
});

describe("the audit on the demo corpus", () => {
  let demo: DemoRunCopy;
  let intents: PullIntent[];
  const records = () =>
    readFileSync(join(demo.workDir, "artifacts", "audit", "records.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditRecord);
  const reportDir = () => join(demo.configPath, "..", "..", "audits", "demo");

  beforeAll(async () => {
    // The test run's one demo run (test/helpers/demo-run.ts), copied here: the tests below run the
    // audit again in the copy.
    demo = await demoRunCopy();
    expect(demo.summary.ok).toBe(true);
    intents = JSON.parse(readFileSync(join(demo.corpus.dir, "intents.json"), "utf8"));
  });

  it("flags the demo's deliberately unjustified tests, and no other test; reads every test from the repository; finds nothing else unfair", () => {
    const unjustified = records()
      .flatMap((r) => r.flags.filter((f) => f.flag === "unjustified_test").map((f) => f.subject))
      .sort();
    expect(unjustified).toEqual(intents.flatMap((i) => i.unjustified).sort());
    // The only other flags: the flaky PRs' first stage, whose only test is unstable.
    const flakyFirstStages = intents
      .filter((i) => i.kind === "flaky" && i.stages > 1)
      .map((i) => `${i.repo.replace("/", "__")}-${i.number}`)
      .sort();
    expect(
      records()
        .filter((r) => r.flags.some((f) => f.flag === "unverified_stage"))
        .map((r) => r.task_id),
    ).toEqual(flakyFirstStages);
    expect(new Set(records().map((r) => r.source))).toEqual(new Set(["repository"]));
    // The planted tests sit beside tests of their task that check what its requests ask: they
    // check more than the requests ask, and say so.
    expect(
      records()
        .flatMap((r) => r.flags.filter((f) => f.flag === "unrequested_test").map((f) => f.subject))
        .sort(),
    ).toEqual(unjustified);
    // Otherwise the demo's tests check what its requests ask, in names and messages the requests
    // give: no flag fires but the linkage ones above (every other kind, including any added later).
    const linkage = ["unjustified_test", "unrequested_test", "unverified_stage", "not_substantive", "no_repository"];
    const fairness = AuditFlag.options.filter((kind) => !linkage.includes(kind));
    expect(records().flatMap((r) => r.flags.filter((f) => fairness.includes(f.flag)).map((f) => `${r.task_id}: ${f.flag} ${f.detail}`))).toEqual([]);
    // Every task has a risk and the severity of its band; none but the planted ones is rejected:
    // without a substantial finding, a risk only puts a task first on the page.
    const kept = records().filter((r) => !r.flags.some((f) => f.flag === "unjustified_test"));
    expect(kept.every((r) => r.risk !== undefined && r.flags.every((f) => f.severity < 2))).toBe(true);
    // The audit rejects exactly the tasks of the planted tests, each for its unjustified test.
    const rejected = readFileSync(join(demo.workDir, "artifacts", "audit", "rejects.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { record_id: string; reason: string });
    const planted = intents.filter((i) => i.unjustified.length).map((i) => `${i.repo.replace("/", "__")}-${i.number}`);
    expect(rejected.map((r) => [r.record_id, r.reason]).sort()).toEqual(planted.sort().map((id) => [id, "unjustified_test"]));
    expect(planted).toHaveLength(3);
  });

  it("applies auditors' decisions: approval with a contract keeps a task, exclusion removes one", async () => {
    const flagged = records().find((r) => r.flags.some((f) => f.flag === "unjustified_test"))!;
    const clean = records().find((r) => !r.flags.length)!;
    const test = flagged.flags.find((f) => f.flag === "unjustified_test")!.subject;
    const decisions = join(demo.configPath, "..", "..", "audits", "decisions.yaml");
    writeFileSync(
      decisions,
      `decisions:\n  - task: ${flagged.task_id}\n    verdict: approve\n    auditor: ann\n    reason: __all__ is the module's documented API list\n    contracts:\n      "${test}": "public names are listed in __all__"\n  - task: ${clean.task_id}\n    verdict: exclude\n    auditor: ann\n    reason: the issue is ambiguous\n`,
    );
    await runProjectOnce(demo.options, { only: "audit" });
    const tasks = readFileSync(join(demo.workDir, "artifacts", "audit", "tasks.jsonl"), "utf8");
    expect(tasks).toContain(`"id":"${flagged.task_id}"`);
    expect(tasks).not.toContain(`"id":"${clean.task_id}"`);
    const rejects = readFileSync(join(demo.workDir, "artifacts", "audit", "rejects.jsonl"), "utf8");
    expect(rejects).toContain(`"reason":"audit_excluded","record_id":"${clean.task_id}"`);
    expect(
      records()
        .find((r) => r.task_id === flagged.task_id)!
        .links.find((l) => l.test === test)!.public_contract,
    ).toBe("public names are listed in __all__");
    expect(readFileSync(join(reportDir(), "alignment.csv"), "utf8")).toMatch(/^task,repo,severity,test,stages,evidence,public_contract,flags,decision\n/);
  });

  it.skipIf(!existsSync(CHROMIUM) && !process.env.CI)("renders a report an auditor can filter, with links to the source records", async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    });
    try {
      const page = await browser.newPage();
      await page.goto(`file://${join(reportDir(), "index.html")}`);
      const all = await page.locator("article").count();
      expect(all).toBe(records().length);
      expect(await page.locator("#shown").textContent()).toBe(String(all));
      await page.selectOption("#flag", "unjustified_test");
      const visible = await page.locator("article:visible").count();
      expect(visible).toBe(records().filter((r) => r.flags.some((f) => f.flag === "unjustified_test")).length);
      await page.selectOption("#flag", "");
      await page.selectOption("#repo", "demo-org/ledger");
      expect(await page.locator("article:visible").count()).toBe(await page.locator('article[data-repo="demo-org/ledger"]').count());
      // A provenance link points at the record it came from.
      const record = records().find((r) => r.task_id.startsWith("demo-org__ledger"))!;
      const link = page.locator(`article[id="${record.task_id}"] .prov a`).first();
      const tasks = readFileSync(join(demo.workDir, "artifacts", "reconstruct", "tasks.jsonl"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Task);
      const source = tasks.find((t) => t.id === record.task_id)!.requests[0]!.provenance.sources[0]!;
      expect(await link.getAttribute("href")).toBe(source.url);
      expect(await link.getAttribute("data-record")).toBe(source.record_id);
      await page.screenshot({ path: join(fileTempDir(), "report.png"), fullPage: false });
    } finally {
      await browser.close();
    }
  });
});
