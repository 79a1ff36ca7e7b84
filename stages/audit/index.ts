import { parse } from "yaml";
import { z } from "zod";
import { describeFirstIssue } from "../../pipeline/validation.ts";
import { PipelineError } from "../../pipeline/engine/engine.ts";
import { describeInvalid } from "../../pipeline/decode.ts";
import { AuditRecord } from "../../pipeline/schemas/audit.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { SplitChange } from "../../pipeline/schemas/split.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { defineStage, input, RecordError } from "../../pipeline/engine/stage.ts";
import { alignTask } from "./runner.ts";
import { alignmentCsv, type AuditedTask } from "./report.ts";
import { htmlReport } from "./page.ts";
import { PatchOnlyTree, type SourceTree, sourcesAt } from "./readers/source-tree.ts";
import { assess, loadRiskModel } from "./risk/model.ts";
import { RuleSettings, rulesInUse } from "./rules/registry.ts";

export { alignTask } from "./runner.ts";

/** Auditors' sign-off: `audits/decisions.yaml`. */
export const Decisions = z.strictObject({
  decisions: z
    .array(
      z.strictObject({
        task: z.string(),
        verdict: z.enum(["approve", "exclude"]),
        auditor: z.string().min(1),
        reason: z.string().min(1),
        /** Public contracts that justify F2P tests no request mentions, by test id. */
        contracts: z.record(z.string(), z.string()).default({}),
      }),
    )
    .default([]),
});

export const AuditConfig = z.strictObject({
  decisions: z.string().default("audits/decisions.yaml"),
  /** Where the report goes, a folder of its own, replaced whole on each run: `<report_dir>/alignment.csv` and `<report_dir>/index.html`. */
  report_dir: z.string().default("audits/report"),
  /**
   * A task whose severity (0–3, the annotators' scale) reaches this, and on which some rule found
   * something substantial (a finding of 2 or more, with the lines that show it), is excluded unless
   * an auditor approves it; 4 excludes none for severity. A risk without such evidence only puts the
   * task first on the page for an auditor to read. A test no request links to is excluded either
   * way (SPEC §2.5).
   */
  exclude_at_severity: z.number().int().min(1).max(4).default(2),
  /** Rules turned off, or whose findings weigh another severity: `{open_choice: {enabled: false}, new_name: {severity: 2}}`. */
  rules: RuleSettings,
  /**
   * Where a task's severity comes from: the band its risk falls in (the risk model shipped in
   * data/audit/risk-model.json), or its rules alone (the highest of its flags', 3 when two kinds of
   * substantial flag meet).
   */
  severity_from: z.enum(["risk", "rules"]).default("risk"),
});

export const auditStage = defineStage({
  name: "audit",
  summary: "link every FAIL_TO_PASS test to the request that justifies it; flag the rest; apply auditors' decisions; write the report",
  example: "switch-swe audit --config data/demo/pipeline.yaml",
  version: "1",
  module: import.meta.url,
  configSchema: AuditConfig,
  inputs: { tasks: input("reconstruct", "tasks", Task), splits: input("split", "splits", SplitChange) },
  outputs: [
    { name: "records", schema: AuditRecord, key: (r: AuditRecord) => r.task_id },
    { name: "tasks", schema: Task, key: (t: Task) => t.id },
  ],
  // No decisions file yet means no auditor has decided anything.
  externalFiles: (config) => [{ path: config.decisions, optional: true }],
  async run(ctx, { tasks, splits }) {
    const file = ctx.files[0] ?? { path: ctx.config.decisions, text: "decisions: []\n" };
    if (file.invalid?.length) throw new PipelineError(`${file.path}: not valid UTF-8 at ${describeInvalid(file.invalid)}`);
    let raw: unknown;
    try {
      raw = parse(file.text) ?? {};
    } catch (error) {
      throw new PipelineError(`${file.path}: not valid YAML: ${(error as Error).message.split("\n")[0]}`);
    }
    const parsed = Decisions.safeParse(raw);
    if (!parsed.success) throw new PipelineError(`${file.path}: ${describeFirstIssue(parsed.error, raw)}`);
    const decisions = new Map(parsed.data.decisions.map((d) => [d.task, d]));
    const references = new Map(splits.map((s) => [s.task_id, s.implementation_patch]));
    // Test sources come from the repository the earlier stages mirrored, at the task's base with its test patch applied.
    const treeFor = async (task: Task): Promise<SourceTree> => {
      const mirror = ctx.mirrors.pathFor(task.snapshot.repo);
      if (!existsSync(join(mirror, "HEAD"))) return new PatchOnlyTree(task.verifier.test_patch, `no mirror of ${task.snapshot.repo} in the work directory`);
      return sourcesAt(mirror, task.snapshot.base_commit, task.verifier.test_patch);
    };
    const rules = rulesInUse(ctx.config.rules);
    const riskModel = ctx.config.severity_from === "risk" ? loadRiskModel() : undefined;
    const results = await ctx.mapRecords(tasks, {
      id: (t) => t.id,
      cache: false,
      work: async (task): Promise<{ record: AuditRecord; task?: Task }> => {
        const decision = decisions.get(task.id);
        const findings = await alignTask({ task, referencePatch: references.get(task.id), tree: await treeFor(task), contracts: decision?.contracts }, rules);
        // The gate's severity: the band of the task's risk (the hard rule, an unjustified test, excludes by itself below).
        const assessed = riskModel ? assess(riskModel, { task_id: task.id, ...findings }) : undefined;
        // Parsing leaves out what is no part of the record (the tests' sources the runner read).
        const record = AuditRecord.parse({
          task_id: task.id,
          ...findings,
          ...(assessed ? { risk: assessed.risk, severity: assessed.severity } : {}),
          ...(decision ? { decision: { verdict: decision.verdict, auditor: decision.auditor, reason: decision.reason } } : {}),
        });
        // An excluded task keeps its audit record: the report shows why it left.
        if (decision?.verdict === "exclude")
          throw new RecordError("audit_excluded", `${task.id}: excluded by ${decision.auditor}: ${decision.reason}`, { file: file.path }, true, { record });
        const { flags } = record;
        const unjustified = flags.filter((f) => f.flag === "unjustified_test");
        if (unjustified.length && decision?.verdict !== "approve") {
          throw new RecordError(
            "unjustified_test",
            `${task.id}: ${unjustified.length} fail-to-pass test(s) no request justifies: ${unjustified.map((f) => f.subject).join(", ")}; approve with a public contract in ${file.path}, or curate the requests`,
            { field: "verifier.fail_to_pass" },
            true,
            { record },
          );
        }
        // The risk says how severe; a substantial finding is the evidence the gate acts on without an auditor.
        const severe = flags.filter((f) => f.severity >= 2);
        if (record.severity >= ctx.config.exclude_at_severity && severe.length && decision?.verdict !== "approve") {
          throw new RecordError(
            "unfair_verifier",
            `${task.id}: severity ${record.severity}${record.risk === undefined ? "" : ` (risk ${record.risk})`}: ${severe.map((f) => `${f.flag} (${f.subject}: ${f.detail})`).join("; ")}; approve in ${file.path} if a reasonable solution would pass, or curate the requests`,
            { field: "verifier.fail_to_pass" },
            true,
            { record },
          );
        }
        return { record, task };
      },
    });
    const records = results.map((r) => r.record).sort((a, b) => (a.task_id < b.task_id ? -1 : 1));
    const passed = results.flatMap((r) => (r.task ? [r.task] : []));
    const byId = new Map<string, AuditedTask>(tasks.map((t) => [t.id, { repo: t.snapshot.repo, base_commit: t.snapshot.base_commit, requests: t.requests }]));
    // Published whole, as emit's folder is: nothing an earlier run (or anyone) left there survives.
    await ctx.publishDirectory(
      ctx.config.report_dir,
      new Map([
        ["alignment.csv", alignmentCsv(records, byId)],
        ["index.html", htmlReport(records, byId, undefined, riskModel)],
      ]),
    );
    return { records, tasks: passed };
  },
});
