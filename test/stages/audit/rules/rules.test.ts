import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AuditFlag } from "../../../../pipeline/schemas/audit.ts";
import type { Request } from "../../../../pipeline/schemas/task.ts";
import { alignTask, type AuditSubject } from "../../../../stages/audit/runner.ts";
import { PatchOnlyTree } from "../../../../stages/audit/readers/source-tree.ts";
import { loadProvenance } from "../../../../stages/audit/rules/provenance.ts";
import { RULES, rulesInUse } from "../../../../stages/audit/rules/registry.ts";
import { rulesMarkdown } from "../../../../stages/audit/report.ts";
import { runCli } from "../../../helpers/cli-in-process.ts";
import { sharedRecords } from "../../../helpers/shared-data.ts";

const records = sharedRecords();

/** A real record as the audit sees it, read from its test patch, with the requests given. */
function subject(id: string, requests?: Request[]): AuditSubject {
  const r = records.get(id)!;
  return {
    task: {
      id,
      requests: requests ?? [{ stage: 1, text: r.problem_statement, provenance: { sources: [{ kind: "issue", record_id: id, author: "x" }] } }],
      verifier: { test_patch: r.test_patch, fail_to_pass: JSON.parse(r.FAIL_TO_PASS) as string[] },
    },
    referencePatch: r.patch,
    tree: new PatchOnlyTree(r.test_patch, "not cloned in this test"),
  };
}

describe("the registry of rules", () => {
  it("has one rule per flag the audit can say, and the flags are the rules' (needs_reference, never said, is not one)", () => {
    expect(RULES.map((r) => r.flag).sort()).toEqual([...AuditFlag.options].sort());
    expect(new Set(RULES.map((r) => r.flag)).size).toBe(RULES.length);
    expect(AuditFlag.options).not.toContain("needs_reference");
    for (const rule of RULES) {
      expect(rule.asks, rule.flag).toMatch(/\?$/);
      expect(rule.example.length, rule.flag).toBeGreaterThan(10);
      expect([0, 1, 2, 3], rule.flag).toContain(rule.severity);
    }
  });

  it("says where every rule came from, and every record it names is one of the data's", () => {
    const provenance = loadProvenance();
    expect(Object.keys(provenance.rules).sort()).toEqual(RULES.map((r) => r.flag).sort());
    const named = Object.values(provenance.rules).flatMap((p) => p!.written_from);
    expect(named.length).toBeGreaterThan(30);
    expect(named.filter((id) => !records.has(id))).toEqual([]);
  });

  it("docs/AUDITING.md holds the table `audit rules` prints, a row per rule", async () => {
    const printed = await runCli(["audit", "rules"]);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toBe(rulesMarkdown());
    for (const rule of RULES) expect(printed.stdout).toContain(`| \`${rule.flag}\` | ${rule.scope} | ${rule.family} |`);
    expect(readFileSync(new URL("../../../../docs/AUDITING.md", import.meta.url), "utf8")).toContain(printed.stdout);
    const json = JSON.parse((await runCli(["audit", "rules", "--json"])).stdout) as { flag: string; asks: string }[];
    expect(json.map((r) => r.flag)).toEqual(RULES.map((r) => r.flag));
  });

  it("a rule the config turns off says nothing, and one given another severity weighs it", async () => {
    const id = "pylint-dev__pylint-6506";
    const all = await alignTask(subject(id));
    expect(all.flags.map((f) => f.flag)).toContain("unrequested_exception");
    const off = await alignTask(subject(id), rulesInUse({ unrequested_exception: { enabled: false } }));
    expect(off.flags.map((f) => f.flag)).not.toContain("unrequested_exception");
    // Only that rule: every other flag is as it was.
    expect(off.flags).toEqual(all.flags.filter((f) => f.flag !== "unrequested_exception"));
    const heavier = await alignTask(subject(id), rulesInUse({ unrequested_exception: { enabled: true, severity: 3 } }));
    expect(heavier.flags.filter((f) => f.flag === "unrequested_exception").map((f) => f.severity)).toEqual(
      all.flags.filter((f) => f.flag === "unrequested_exception").map(() => 3),
    );
  });
});

describe("tests a benchmark-authored stage declares (#53)", () => {
  // django-14730's test patch adds a test its issue never names: unlinked, it is unjustified.
  const id = "django__django-14730";
  const issue = records.get(id)!.problem_statement;
  const tests = JSON.parse(records.get(id)!.FAIL_TO_PASS) as string[];
  const authored: Request = {
    stage: 2,
    text: "Say which related fields cannot take a related_name.",
    provenance: {
      sources: [{ kind: "authored", record_id: `${id}:extension`, author: "benchmark", file: "data/extensions/django-14730.yaml", reason: "a second stage" }],
    },
    tests,
  };
  const upstream: Request = { stage: 1, text: issue, provenance: { sources: [{ kind: "issue", record_id: id, author: "x" }] } };

  it("links each declared test to its stage, with the declaration naming the file as evidence", async () => {
    const plain = await alignTask(subject(id, [upstream, { ...authored, tests: undefined }]));
    expect(plain.flags.map((f) => f.flag)).toContain("unjustified_test");
    const unverified = (f: { flag: string; subject: string }[]) => f.filter((x) => x.flag === "unverified_stage").map((x) => x.subject);
    expect(unverified(plain.flags)).toContain("stage 2");
    const declared = await alignTask(subject(id, [upstream, authored]));
    for (const link of declared.links) {
      expect(link.stages).toContain(2);
      expect(link.evidence).toContainEqual({ stage: 2, token: "declared in data/extensions/django-14730.yaml" });
    }
    expect(declared.flags.map((f) => f.flag)).not.toContain("unjustified_test");
    expect(unverified(declared.flags)).not.toContain("stage 2");
  });

  it("still has the fairness rules read those tests", async () => {
    const declared = await alignTask(subject(id, [upstream, authored]));
    // The test asserts the fix's message word for word, which no request states.
    expect(declared.flags.filter((f) => f.flag === "exact_message").map((f) => f.subject)).toEqual(
      (await alignTask(subject(id))).flags.filter((f) => f.flag === "exact_message").map((f) => f.subject),
    );
    expect(declared.flags.some((f) => f.flag === "exact_message")).toBe(true);
  });
});
