import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import type { PullIntent } from "../../demo/build.ts";
import { formatSummary, runProjectOnce } from "../../pipeline/project/project.ts";
import type { EndpointKnowledge } from "../../pipeline/model-endpoint/scripts.ts";
import { ModelEndpoint } from "../../pipeline/model-endpoint/server.ts";
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
    const patch = `diff --git a/tests/test_m.py b/tests/test_m.py\n--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -1,2 +1,2 @@\n def test_g():\n-    assert importlib.import_module("pkg.old").g(1) == 5\n+    assert importlib.import_module("pkg.new").g(1) == 5\n`;
    const test = testSource(patch, "tests/test_m.py", "test_g")!;
    expect(changedEvidence(test, "test_g")).toEqual({ subject: ["pkg.new"], behaviour: [] });
  });

  it("links a test to the stages that name its subject and its behaviour, and flags the rest", async () => {
    const patch = `diff --git a/tests/test_m.py b/tests/test_m.py\n--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -0,0 +1,7 @@\n+def test_f():\n+    assert m.fold(2) == 13\n+def test_f_raises():\n+    with pytest.raises(ValueError, match="negative"):\n+        m.fold(-1)\n+def test_f_listed():\n+    assert "fold" in m.__all__\n`;
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

  it("lists every exclusion with its reason in the run's summary", () => {
    const text = formatSummary(demo.summary);
    const planted = records().filter((r) => r.exclusion);
    expect(planted).toHaveLength(3);
    expect(text).toContain(`audit: 3 of ${records().length} task(s) rejected (unjustified_test 3)`);
    for (const r of planted) {
      expect(r.exclusion).toMatchObject({ reason: "unjustified_test", by: "hard finding" });
      expect(text).toContain(`    ${r.task_id}: unjustified_test: unrequested_test (`);
    }
  });

  it("applies decisions: an auditor's approval with a contract keeps a task, an exclusion removes one; an imported approval covers the upstream stage", async () => {
    const planted = records().filter((r) => r.flags.some((f) => f.flag === "unjustified_test"));
    const [flagged, imported] = planted;
    const clean = records().find((r) => !r.flags.length)!;
    const test = flagged!.flags.find((f) => f.flag === "unjustified_test")!.subject;
    const decisions = join(demo.configPath, "..", "..", "audits", "decisions.yaml");
    writeFileSync(
      decisions,
      `decisions:\n  - task: ${flagged!.task_id}\n    verdict: approve\n    auditor: ann\n    reason: __all__ is the module's documented API list\n    contracts:\n      "${test}": "public names are listed in __all__"\n  - task: ${clean.task_id}\n    verdict: exclude\n    auditor: ann\n    reason: the issue is ambiguous\n`,
    );
    // Annotations named by the config are imported as they are read: the second planted task's tests scored fair.
    writeFileSync(
      join(demo.configPath, "..", "..", "audits", "annotations.csv"),
      `instance_id,false_negative,false_negative_notes,filter_out\n${imported!.task_id},0.0,the listing is part of the API,False\n`,
    );
    const audit = demo.options.stageConfigs.audit as Record<string, unknown>;
    const options = { ...demo.options, stageConfigs: { ...demo.options.stageConfigs, audit: { ...audit, imported: ["../../audits/annotations.csv"] } } };
    const summary = await runProjectOnce(options, { only: "audit" });
    expect(summary.ok, formatSummary(summary)).toBe(true);
    const tasks = readFileSync(join(demo.workDir, "artifacts", "audit", "tasks.jsonl"), "utf8");
    expect(tasks).toContain(`"id":"${flagged!.task_id}"`);
    expect(tasks).toContain(`"id":"${imported!.task_id}"`);
    expect(tasks).not.toContain(`"id":"${clean.task_id}"`);
    const rejects = readFileSync(join(demo.workDir, "artifacts", "audit", "rejects.jsonl"), "utf8");
    expect(rejects).toContain(`"reason":"audit_excluded","record_id":"${clean.task_id}"`);
    expect(formatSummary(summary)).toContain(`    ${clean.task_id}: audit_excluded: excluded by ann (../../audits/decisions.yaml): the issue is ambiguous`);
    expect(records().find((r) => r.task_id === imported!.task_id)!.imported).toMatchObject({
      verdict: "approve",
      reason: "false_negative 0: the listing is part of the API",
    });
    expect(
      records()
        .find((r) => r.task_id === flagged!.task_id)!
        .links.find((l) => l.test === test)!.public_contract,
    ).toBe("public names are listed in __all__");
    expect(readFileSync(join(reportDir(), "alignment.csv"), "utf8")).toMatch(
      /^task,repo,severity,test,stages,evidence,public_contract,flags,decision,imported,excluded\n/,
    );
  });

  it.skipIf(!existsSync(CHROMIUM) && !process.env.CI)(
    "renders a page an auditor can use: what excludes a task, how each figure was measured, the undecided tasks riskiest first with each fired rule's measured precision, the decided ones apart",
    async () => {
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
        // What excludes a task here, and that the risk never does.
        const gate = await page.locator("#gate").innerText();
        expect(gate).toContain("A human decision");
        expect(gate).toContain("A hard finding anyone can check in the files: on an upstream stage unrequested_test");
        expect(gate).toContain("no rule, and no model judge, is shown to be right on records its author did not read");
        expect(gate).toContain("The risk only ranks the tasks nobody has decided");
        expect(await page.locator("#gate a").first().getAttribute("href")).toBe("../decisions.yaml");
        // How the figures were measured: the triage on held-out folds, each labelled.
        const figures = await page.locator("#figures").innerText();
        expect(figures).toMatch(
          /10 folds by record \(cross-validated on the given records\): reading riskiest first, \d+ of 108 tasks \(\d+ %\) find 24 of the 48 unfair ones/,
        );
        expect(figures).toContain('only "unseen" records show what to expect');
        // The undecided tasks, riskiest first; the decided ones apart (the decisions of the test above).
        const risks = await page.locator("#undecided article").evaluateAll((cards) => cards.map((c) => Number((c as HTMLElement).dataset.risk)));
        expect(risks.length).toBeGreaterThan(20);
        expect(risks).toEqual([...risks].sort((a, b) => b - a));
        expect(await page.locator("#imported article").count()).toBe(1);
        expect(await page.locator("#local article").count()).toBe(2);
        expect(await page.locator("#excluded article").count()).toBe(1);
        // Every fired rule says its precision as measured, and how.
        const measured = await page.locator("li[data-flag] .measured").allInnerTexts();
        expect(measured.length).toBeGreaterThan(3);
        for (const text of measured)
          expect(text).toMatch(/^precision \d\.\d\d \[\d\.\d\d, \d\.\d\d\], \d+ of \d+, in sample$|^never fired on the annotated records$/);
        expect(await page.locator("#excluded li[data-flag=unrequested_test] .measured").innerText()).toMatch(
          /^precision 0\.71 \[0\.36, 0\.92\], 5 of 7, in sample$/,
        );
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
    },
  );

  it("asks a model judge named in the config, once per task's content, within its budget, and says what it cost in the run's summary", async () => {
    const knowledge: EndpointKnowledge = { schedules: [], stages: () => 1, plan: () => ({}) as never, continuation: "" };
    const endpoint = await ModelEndpoint.start({ script: "judge", knowledge });
    const adapter = join(demo.dir, "judge.yaml");
    writeFileSync(adapter, "protocol: anthropic\nmodel: scripted-judge\nkey_env: SWITCH_SWE_TEST_JUDGE_KEY\nprice_per_million: {input: 3, output: 15}\n");
    process.env.SWITCH_SWE_TEST_JUDGE_KEY = "k";
    const audit = demo.options.stageConfigs.audit as Record<string, unknown>;
    const run = (judge: Record<string, unknown>) =>
      runProjectOnce(
        {
          ...demo.options,
          stageConfigs: { ...demo.options.stageConfigs, audit: { ...audit, imported: [], judge: { adapter, endpoint: endpoint.url, ...judge } } },
        },
        { only: "audit", force: true },
      );
    try {
      const first = await run({ passes: 2, budget_usd: 5 });
      expect(first.ok, formatSummary(first)).toBe(true);
      const n = records().length;
      expect(endpoint.calls).toHaveLength(2 * n);
      expect(records().every((r) => r.judge?.passes.length === 2)).toBe(true);
      const cost = endpoint.calls.reduce((c, call) => c + ((call.usage!.input + call.usage!.cachedInput) * 3 + call.usage!.output * 15) / 1e6, 0);
      expect(formatSummary(first)).toContain(`notes:\n  audit: judge scripted-judge (2 passes): ${n} task(s) judged, 0 from the cache; ${2 * n} calls`);
      expect(formatSummary(first)).toContain(`$${cost.toFixed(4)} this run of a $5.00 budget`);
      // The verdicts rank; none is in force, so the same tasks leave as without a judge.
      expect(
        records()
          .flatMap((r) => (r.exclusion ? [r.exclusion.by] : []))
          .sort(),
      ).toEqual(["hard finding", "hard finding", "local decision"]);
      // The same tasks again: every verdict from the cache, no call.
      const again = await run({ passes: 2, budget_usd: 5 });
      expect(endpoint.calls).toHaveLength(2 * n);
      expect(formatSummary(again)).toContain(`${n} task(s) judged, ${n} from the cache; 0 calls`);
      // Another model, with a budget one task's calls spend: the rest are left unjudged, and the summary says so.
      const tight = await run({ passes: 2, budget_usd: 0.000001, model: "another-judge" });
      expect(endpoint.calls).toHaveLength(2 * n + 2);
      expect(formatSummary(tight)).toContain(`1 task(s) judged, 0 from the cache; 2 calls`);
      expect(formatSummary(tight)).toContain(`${n - 1} task(s) left unjudged`);
      expect(formatSummary(tight)).toContain("the budget of $0.00 was spent");
      // Up to date, the stage says its last run's notes again, and lists its exclusions from its rejects.
      const judge = { adapter, endpoint: endpoint.url, passes: 2, budget_usd: 0.000001, model: "another-judge" };
      const still = await runProjectOnce(
        { ...demo.options, stageConfigs: { ...demo.options.stageConfigs, audit: { ...audit, imported: [], judge } } },
        { only: "audit" },
      );
      expect(still.stages.find((st) => st.stage === "audit")!.status).toBe("up_to_date");
      expect(formatSummary(still)).toContain("left unjudged");
      expect(formatSummary(still)).toContain("(its last run)");
      expect(formatSummary(still)).toMatch(/audit: 3 of \d+ task\(s\) rejected \(audit_excluded 1, unjustified_test 2\)\n    /);
    } finally {
      delete process.env.SWITCH_SWE_TEST_JUDGE_KEY;
      await endpoint.close();
    }
  });
});
