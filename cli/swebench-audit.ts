import { readFileSync, rmSync } from "node:fs";
import { decodeStrict } from "../pipeline/decode.ts";
import { importSwebench } from "../stages/mine/swebench.ts";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { parse } from "yaml";
import { writeFileAtomic } from "../pipeline/atomic.ts";
import { createLogger } from "../pipeline/logger.ts";
import { describeFirstIssue } from "../pipeline/validation.ts";
import { AnnotationsError, readAnnotations } from "../stages/audit/agreement.ts";
import { htmlReport } from "../stages/audit/page.ts";
import { agreementMarkdown, alignmentCsv, auditJson, fixed } from "../stages/audit/report.ts";
import { JudgeSetupError } from "../stages/audit/judge/client.ts";
import { loadRiskModel, RiskModelError } from "../stages/audit/risk/model.ts";
import { RuleSettings } from "../stages/audit/rules/registry.ts";
import { auditSwebench, type SwebenchAudit, type SwebenchAuditOptions } from "../stages/audit/swebench.ts";
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
    const raw: unknown = parse(readFileSync(opts.rules, "utf8")) ?? {};
    const parsed = RuleSettings.safeParse(raw);
    if (!parsed.success) throw new UsageError(`${opts.rules}: ${describeFirstIssue(parsed.error, raw)}`);
    rules = parsed.data;
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
    log,
  };
  return { options, rejects: rejects.map((r) => r.message) };
}

/** Audits the records; a judge that cannot be set up (its adapter, its key) is a usage error. */
export async function runAudit(options: SwebenchAuditOptions): Promise<SwebenchAudit> {
  try {
    return await auditSwebench(options);
  } catch (error) {
    if (error instanceof JudgeSetupError) throw new UsageError(error.message);
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

/** What the audit prints: records by severity, agreement in the sample and cross-validated, the judge's usage. */
function summary(audit: SwebenchAudit, rejects: number): string {
  const bySeverity = [0, 1, 2, 3].map((s) => `${audit.records.filter((r) => r.severity === s).length} at ${s}`).join(", ");
  const lines = [`${audit.records.length} records audited (${bySeverity}); ${rejects} rejected`];
  const measured = audit.measured;
  for (const a of [...(measured?.in_sample.filter((x) => x.scope === "all") ?? []), ...(measured?.cross_validated ?? [])])
    lines.push(
      `agreement with ${a.records} annotated records (${a.scope === "all" ? "in the sample" : a.scope}): kappa ${fixed(a.kappa)}, AUC of risk ${fixed(a.auc)}; flagged ${a.flagged_of_score0} scored 0, ${a.flagged_of_score3} scored 3`,
    );
  const usage = audit.judgeUsage;
  if (usage)
    lines.push(
      `judge ${usage.model}: ${usage.calls} calls (${usage.cached} records from the cache), ${usage.input_tokens} input and ${usage.output_tokens} output tokens, about $${usage.cost_usd.toFixed(2)} this run; the ${audit.judgeCost!.records} verdicts cost $${audit.judgeCost!.cost_usd.toFixed(2)} when asked`,
    );
  return lines.join("\n") + "\n";
}

/** `switch-swe audit --swebench FILE`: audits a SWE-bench-family file's verifiers without building anything. */
export const swebenchAudit = {
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
      .option("--judge <adapter>", "with --swebench: also ask a model for each record's severity (an adapter file, or a name under data/audit/judges/)");
  },
  async run(io: Io, opts: SwebenchAuditFlags & { out: string }): Promise<number> {
    const { options, rejects } = swebenchInputs(opts, io);
    const riskModel = riskModelFrom(opts.riskModel);
    const audit = await runAudit({ ...options, ...(riskModel ? { riskModel } : {}), ...(opts.judge ? { judge: opts.judge } : {}) });
    for (const reject of rejects) io.err(`${reject}\n`);
    const out = resolve(opts.out);
    const files = new Map([
      ["alignment.csv", alignmentCsv(audit.records, audit.tasks)],
      ["index.html", htmlReport(audit.records, audit.tasks, audit.measured, riskModel)],
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
