import { existsSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { PipelineError } from "../../pipeline/engine/engine.ts";
import { type ExternalFile, defineStage, input, RecordError } from "../../pipeline/engine/stage.ts";
import { describeInvalid } from "../../pipeline/decode.ts";
import { AuditRecord } from "../../pipeline/schemas/audit.ts";
import { SplitChange } from "../../pipeline/schemas/split.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { importedFrom } from "./annotations.ts";
import { decisionBook, DecisionsError, readDecisions } from "./decisions.ts";
import { checkMeasurement, describeGate, GateConfigError, type InForce, rulesInForce } from "./gate.ts";
import { JudgeSetupError } from "./judge/client.ts";
import { adapterFor, JudgeConfig, openJudge } from "./judge/step.ts";
import { htmlReport } from "./page.ts";
import { PatchOnlyTree, type SourceTree, sourcesAt } from "./readers/source-tree.ts";
import { alignmentCsv, type AuditedTask } from "./report.ts";
import { loadMeasurements } from "./measured.ts";
import { loadRiskModel } from "./risk/model.ts";
import { loadProvenance } from "./rules/provenance.ts";
import { RuleSettings, rulesInUse } from "./rules/registry.ts";
import { auditTask, type AuditSetup } from "./task.ts";

export { alignTask } from "./runner.ts";
export { Decisions } from "./decisions.ts";

export const AuditConfig = z.strictObject({
  /** An auditor's decisions, one a task (`switch-swe audit decide` writes them); no file yet means no auditor has decided anything. */
  decisions: z.string().default("audits/decisions.yaml"),
  /**
   * Decisions imported from human annotations, each covering a task's upstream stage: files
   * `switch-swe audit import-annotations` writes, or annotations CSVs imported as they are read.
   */
  imported: z.array(z.string()).default([]),
  /** Where the report goes, a folder of its own, replaced whole on each run: `<report_dir>/alignment.csv` and `<report_dir>/index.html`. */
  report_dir: z.string().default("audits/report"),
  /** For a rule whose gate is `at severity`: the task's severity (0–3) from which its finding excludes. */
  exclude_at_severity: z.number().int().min(1).max(3).default(2),
  /**
   * Rules turned off, weighed at another severity, or put in force on a measurement out of sample:
   * `{open_choice: {enabled: false}, new_name: {severity: 2}, exact_message: {gate: excludes alone, measured: {...}}}`.
   */
  rules: RuleSettings,
  /**
   * Where a task's severity comes from: the band its risk falls in (the risk model shipped in
   * data/audit/risk-model.json), or its rules alone (the highest of its flags', 3 when two kinds of
   * substantial flag meet). Either ranks; neither excludes by itself.
   */
  severity_from: z.enum(["risk", "rules"]).default("risk"),
  /** A model judge: adapter, endpoint, model, passes and budget; its verdicts rank unless a measurement puts them in force. */
  judge: JudgeConfig.optional(),
});
export type AuditConfig = z.infer<typeof AuditConfig>;

/** A file the engine read for the stage, by the path the config gives; its text, refusing bytes that are not UTF-8. */
function fileText(files: ExternalFile[], path: string): string | undefined {
  const file = files.find((f) => f.path === path);
  if (file?.invalid?.length) throw new PipelineError(`${file.path}: not valid UTF-8 at ${describeInvalid(file.invalid)}`);
  return file?.text;
}

/** Every decision the config names: the auditor's file (absent: none yet) and the imported ones. */
function decisionsOf(config: AuditConfig, files: ExternalFile[]) {
  try {
    const local = fileText(files, config.decisions);
    return decisionBook(
      local === undefined ? undefined : { file: config.decisions, decisions: readDecisions(config.decisions, local) },
      config.imported.map((path) => ({ file: path, decisions: importedFrom(path, fileText(files, path) ?? "") })),
    );
  } catch (error) {
    if (error instanceof DecisionsError) throw new PipelineError(error.message);
    throw error;
  }
}

/** The rules and the judge the config puts in force, each measurement checked against the records the audit's authors read. */
function inForceOf(config: AuditConfig): InForce[] {
  const provenance = loadProvenance();
  try {
    const judge = config.judge;
    const judged =
      judge?.measured && judge.gate !== "only with a decision"
        ? [checkMeasurement("the judge", judge.gate, judge.measured, new Set(provenance.looked_at.records), "stages.audit.judge.measured")]
        : [];
    return [...rulesInForce(config.rules, provenance, "stages.audit.rules"), ...judged];
  } catch (error) {
    if (error instanceof GateConfigError) throw new PipelineError(`config key ${error.message}`);
    throw error;
  }
}

export const auditStage = defineStage({
  name: "audit",
  summary:
    "link every FAIL_TO_PASS test to the request that justifies it; flag the rest; rank tasks by risk; exclude on human decisions and hard findings; write the report",
  example: "switch-swe audit --config data/demo/pipeline.yaml",
  version: "2",
  module: import.meta.url,
  configSchema: AuditConfig,
  gate: { noun: "task(s)", list: true },
  inputs: { tasks: input("reconstruct", "tasks", Task), splits: input("split", "splits", SplitChange) },
  outputs: [
    { name: "records", schema: AuditRecord, key: (r: AuditRecord) => r.task_id },
    { name: "tasks", schema: Task, key: (t: Task) => t.id },
  ],
  // No decisions file yet means no auditor has decided anything.
  externalFiles: (config) => [{ path: config.decisions, optional: true }, ...config.imported],
  async run(ctx, { tasks, splits }) {
    const config = ctx.config;
    const decided = decisionsOf(config, ctx.files);
    const inForce = inForceOf(config);
    const references = new Map(splits.map((s) => [s.task_id, s.implementation_patch]));
    // Test sources come from the repository the earlier stages mirrored, at the task's base with its test patch applied.
    const treeFor = async (task: Task): Promise<SourceTree> => {
      const mirror = ctx.mirrors.pathFor(task.snapshot.repo);
      if (!existsSync(join(mirror, "HEAD"))) return new PatchOnlyTree(task.verifier.test_patch, `no mirror of ${task.snapshot.repo} in the work directory`);
      return sourcesAt(mirror, task.snapshot.base_commit, task.verifier.test_patch);
    };
    let judge;
    try {
      judge = config.judge
        ? openJudge({ adapter: adapterFor(config.judge, ctx.resolvePath), layout: ctx.layout, passes: config.judge.passes, budgetUsd: config.judge.budget_usd })
        : undefined;
    } catch (error) {
      if (error instanceof JudgeSetupError) throw new PipelineError(`config key stages.audit.judge: ${error.message}`);
      throw error;
    }
    const rules = rulesInUse(config.rules);
    const riskModel = config.severity_from === "risk" ? loadRiskModel() : undefined;
    const judgeGate = inForce.some((f) => f.name === "the judge") ? config.judge!.gate : "only with a decision";
    const gate = { excludeAtSeverity: config.exclude_at_severity, judgeGate, inForce: new Set(inForce.map((f) => f.name)), decisionsFile: config.decisions };
    const setup: AuditSetup = { rules, ...(riskModel ? { riskModel } : {}), ...(judge ? { judge } : {}), gate };
    const results = await ctx.mapRecords(tasks, {
      id: (t) => t.id,
      cache: false,
      work: async (task): Promise<{ record: AuditRecord; task?: Task }> => {
        const record = await auditTask({ task, referencePatch: references.get(task.id), tree: await treeFor(task), decisions: decided(task.id) }, setup);
        if (judgeGate !== "only with a decision" && !record.judge && !record.decision && !record.imported)
          throw new RecordError("transient_failure", `${task.id}: the judge is in force and left it unjudged: ${judge!.unjudged.at(-1)}`, {}, false);
        // An excluded task keeps its audit record: the report shows why it left.
        const { exclusion } = record;
        if (exclusion) {
          const where =
            exclusion.by === "local decision"
              ? { file: config.decisions }
              : exclusion.by === "imported decision"
                ? { file: record.imported!.file }
                : { field: "verifier.fail_to_pass" };
          throw new RecordError(exclusion.reason, exclusion.message, where, true, { record });
        }
        return { record, task };
      },
    });
    if (judge) ctx.note(judge.summary());
    const records = results.map((r) => r.record).sort((a, b) => (a.task_id < b.task_id ? -1 : 1));
    const byId = new Map<string, AuditedTask>(tasks.map((t) => [t.id, { repo: t.snapshot.repo, base_commit: t.snapshot.base_commit, requests: t.requests }]));
    const description = describeGate(rules, inForce, setup.gate, { local: config.decisions, imported: config.imported, reportDir: config.report_dir });
    // Published whole, as emit's folder is: nothing an earlier run (or anyone) left there survives.
    await ctx.publishDirectory(
      config.report_dir,
      new Map([
        ["alignment.csv", alignmentCsv(records, byId)],
        ["index.html", htmlReport({ records, tasks: byId, gate: description, measurements: loadMeasurements(), ...(riskModel ? { model: riskModel } : {}) })],
      ]),
    );
    return { records, tasks: results.flatMap((r) => (r.task ? [r.task] : [])) };
  },
});
