import { readFileSync, rmSync } from "node:fs";
import { decodeStrict } from "../pipeline/decode.ts";
import { importSwebench } from "../stages/mine/swebench.ts";
import { join, resolve } from "node:path";
import type { Command } from "commander";

import { writeFileAtomic } from "../pipeline/atomic.ts";
import { createLogger } from "../pipeline/logger.ts";
import { readReviewed } from "../pipeline/validation.ts";
import { decisionBook, DecisionsError, readDecisions } from "../stages/audit/decisions.ts";
import { describeGate, GateConfigError } from "../stages/audit/gate.ts";
import { loadMeasurements } from "../stages/audit/measured.ts";
import { htmlReport } from "../stages/audit/page.ts";
import { alignmentCsv, fixed } from "../stages/audit/report.ts";
import { agreementHtml, agreementMarkdown, auditJson } from "../stages/audit/study/report.ts";
import { JudgeSetupError } from "../stages/audit/judge/client.ts";
import { loadRiskModel, RiskModelError } from "../stages/audit/risk/model.ts";
import { RuleSettings, rulesInUse } from "../stages/audit/rules/registry.ts";
import { AnnotationsError, importedFrom, readAnnotations } from "../stages/audit/annotations.ts";
import { auditSwebench, type SwebenchAudit, type SwebenchAuditOptions } from "../stages/audit/study/swebench.ts";
import { precisionText } from "../stages/audit/measured.ts";
import { type Io, requirePath, UsageError } from "./io.ts";

export interface SwebenchAuditFlags {
  swebench: string;
  mirrors?: string;
  clone?: boolean;
  annotations?: string;
  workDir: string;
  record?: string[];
  rules?: string;
  riskModel?: string;
  judge?: string;
  decisions?: string;
  imported?: string[];
}

/** The decisions the flags name: an auditor's file, and imported ones; a bad file is a usage error naming it. */
function decisionsFrom(opts: SwebenchAuditFlags) {
  requirePath("--decisions", opts.decisions, "file");
  for (const file of opts.imported ?? []) requirePath("--imported", file, "file");
  try {
    const local = opts.decisions ? { file: opts.decisions, decisions: readDecisions(opts.decisions, readFileSync(opts.decisions, "utf8")) } : undefined;
    return decisionBook(
      local,
      (opts.imported ?? []).map((file) => ({ file, decisions: importedFrom(file, readFileSync(file, "utf8")) })),
    );
  } catch (error) {
    if (error instanceof DecisionsError) throw new UsageError(error.message);
    throw error;
  }
}

/** Reads the records, the annotations and the rule settings a SWE-bench audit takes; bad input is a usage error naming the file. */
export function swebenchInputs(opts: SwebenchAuditFlags, io: Io): { options: SwebenchAuditOptions; rejects: string[] } {
  requirePath("--swebench", opts.swebench, "file");
  requirePath("--mirrors", opts.mirrors, "directory");
  requirePath("--annotations", opts.annotations, "file");
  requirePath("--rules", opts.rules, "file");
  let annotations;
  try {
    annotations = opts.annotations ? readAnnotations(opts.annotations, readFileSync(opts.annotations, "utf8")) : undefined;
  } catch (error) {
    if (error instanceof AnnotationsError) throw new UsageError(error.message);
    throw error;
  }
  let rules: RuleSettings = {};
  if (opts.rules) {
    rules = readReviewed(opts.rules, RuleSettings, { format: "yaml", empty: {}, error: (message) => new UsageError(message) });
  }
  const log = createLogger({ write: (line) => io.err(line + "\n") });
  // Read as mine reads it: a bad record is a reject naming file, line and field; the others are audited.
  const bytes = readFileSync(opts.swebench);
  const { text, invalid } = decodeStrict(bytes);
  const { candidates, rejects } = importSwebench(opts.swebench, text, invalid, bytes);
  const options: SwebenchAuditOptions = {
    candidates,
    mirrors: opts.mirrors,
    clone: opts.clone,
    workDir: resolve(opts.workDir),
    only: opts.record,
    ...(annotations ? { annotations } : {}),
    rules,
    decisions: decisionsFrom(opts),
    ...(opts.decisions ? { decisionsFile: opts.decisions } : {}),
    log,
  };
  return { options, rejects: rejects.map((r) => r.message) };
}

/** Audits the records; a judge that cannot be set up (its adapter, its key), or a rule put in force on a bad measurement, is a usage error. */
export async function runAudit(options: SwebenchAuditOptions): Promise<SwebenchAudit> {
  try {
    return await auditSwebench(options);
  } catch (error) {
    if (error instanceof JudgeSetupError || error instanceof GateConfigError) throw new UsageError(error.message);
    throw error;
  }
}

/** The shipped risk model, or the one --risk-model names; `none` uses the rules' own severities. */
function riskModelFrom(path: string | undefined) {
  if (path === "none") return undefined;
  if (path !== undefined) requirePath("--risk-model", path, "file");
  try {
    return loadRiskModel(path);
  } catch (error) {
    if (error instanceof RiskModelError) throw new UsageError(error.message);
    throw error;
  }
}

/** What the audit prints: records by severity, the gate's exclusions, agreement with every figure's method, the judge's usage. */
function summary(audit: SwebenchAudit, rejects: number): string {
  const bySeverity = [0, 1, 2, 3].map((s) => `${audit.records.filter((r) => r.severity === s).length} at ${s}`).join(", ");
  const excluded = audit.records.filter((r) => r.exclusion);
  const by = [...new Set(excluded.map((r) => r.exclusion!.by))].map((b) => `${b} ${excluded.filter((r) => r.exclusion!.by === b).length}`);
  const lines = [
    `${audit.records.length} records audited (${bySeverity}); ${rejects + audit.unaudited.length} rejected`,
    `the gate excludes ${excluded.length}${by.length ? ` (${by.join(", ")})` : ""}`,
  ];
  const measured = audit.measured;
  if (measured) {
    const g = measured.gate;
    lines.push(
      `the gate against ${g.records} annotated records: excludes ${g.zeros_excluded} of ${g.zeros} scored 0; precision ${precisionText(g.excluded)}; base rate ${fixed(g.base_rate)}`,
    );
    for (const a of [...measured.shipped.filter((x) => x.scope === "all"), ...measured.cross_validated])
      lines.push(
        `the risk against ${a.records} annotated records (${a.scope === "all" ? "as shipped" : a.scope}; ${a.method}): kappa ${fixed(a.kappa)}, AUC ${fixed(a.auc)}; flagged ${a.flagged_of_score0} scored 0, ${a.flagged_of_score3} scored 3`,
      );
    for (const t of measured.triage)
      lines.push(
        `triage (${t.scheme}; ${t.method}): ${t.read} of ${t.of} tasks read riskiest first find ${t.found} of ${t.unfair} unfair; a random order ${fixed(t.random, 1)}`,
      );
  }
  const usage = audit.judgeUsage;
  if (usage)
    lines.push(
      `judge ${usage.model}: ${usage.calls} calls (${usage.cached} records from the cache), ${usage.input_tokens} input and ${usage.output_tokens} output tokens, about $${usage.cost_usd.toFixed(2)} this run; the ${audit.judgeCost!.records} verdicts cost $${audit.judgeCost!.cost_usd.toFixed(2)} when asked`,
    );
  return lines.join("\n") + "\n";
}

/** `switch-swe audit --swebench FILE`: audits a SWE-bench-family file's verifiers without building anything. */
export const swebenchAudit = {
  stage: "audit",
  trigger: "swebench",
  usage: "--swebench FILE",
  addOptions(command: Command): void {
    command
      .option("--swebench <file>", "audit a SWE-bench-family file (JSON or JSONL) instead of running the stage: each record is a task of one request")
      .option("--mirrors <dir>", "with --swebench: OWNER__NAME.bundle, OWNER__NAME.git or OWNER__NAME clones to read test sources from")
      .option("--clone", "with --swebench: clone a repository no mirror holds from GitHub")
      .option("--annotations <csv>", "with --swebench: human annotations (SWE-bench Verified's columns) to measure agreement against")
      .option("--out <dir>", "with --swebench: where alignment.csv, index.html and audit.json go", "audit-report")
      .option("--work-dir <dir>", "with --swebench: where the audit keeps its mirrors and the judge's answers", ".switch-swe/audit")
      .option("--record <id...>", "with --swebench: audit only these instance ids")
      .option("--rules <yaml>", "with --swebench: rules turned off or weighed otherwise (`new_name: {severity: 2}`, `open_choice: {enabled: false}`)")
      .option("--risk-model <json>", "with --swebench: the risk model's weights (default: data/audit/risk-model.json; none: the rules' own severities)")
      .option("--judge <adapter>", "with --swebench: also ask a model for each record's severity (an adapter file, or a name under data/audit/judges/)")
      .option("--decisions <yaml>", "with --swebench: an auditor's decisions (audits/decisions.yaml's shape), which the gate follows first")
      .option("--imported <yaml...>", "with --swebench: decisions imported from annotations (`audit import-annotations`), which the gate follows");
  },
  async run(io: Io, opts: SwebenchAuditFlags & { out: string }): Promise<number> {
    const { options, rejects } = swebenchInputs(opts, io);
    const riskModel = riskModelFrom(opts.riskModel);
    const audit = await runAudit({ ...options, ...(riskModel ? { riskModel } : {}), ...(opts.judge ? { judge: opts.judge } : {}) });
    for (const reject of [...rejects, ...audit.unaudited]) io.err(`${reject}\n`);
    const out = resolve(opts.out);
    const gate = describeGate(
      rulesInUse(options.rules),
      audit.inForce,
      { excludeAtSeverity: 2, judgeGate: "only with a decision", inForce: new Set(audit.inForce.map((f) => f.name)), decisionsFile: opts.decisions ?? "" },
      { local: resolve(opts.decisions ?? join(out, "decisions.yaml")), imported: (opts.imported ?? []).map((f) => resolve(f)), reportDir: out },
    );
    const page = {
      records: audit.records,
      tasks: audit.tasks,
      gate,
      measurements: loadMeasurements(),
      ...(audit.measured ? { extra: agreementHtml(audit.measured) } : {}),
    };
    const files = new Map([
      ["alignment.csv", alignmentCsv(audit.records, audit.tasks)],
      ["index.html", htmlReport({ ...page, ...(riskModel ? { model: riskModel } : {}) })],
      ["audit.json", auditJson(audit.records, audit.measured, audit.judgeCost)],
      ...(audit.measured ? [["agreement.md", agreementMarkdown(audit.measured)] as [string, string]] : []),
    ]);
    for (const [name, text] of files) await writeFileAtomic(join(out, name), text);
    // An agreement an earlier run wrote here would sit beside a report it does not describe.
    if (!audit.measured) rmSync(join(out, "agreement.md"), { force: true });
    io.out(summary(audit, rejects.length));
    io.out(`wrote ${[...files.keys()].map((f) => join(out, f)).join(", ")}\n`);
    if (audit.judgeFailures?.length) io.err(`the judge failed on ${audit.judgeFailures.length} record(s); they are audited without its verdict\n`);
    return (rejects.length && !audit.records.length) || audit.judgeFailures?.length ? 1 : 0;
  },
};
