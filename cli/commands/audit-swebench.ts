import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { writeFileAtomic } from "../../pipeline/atomic.ts";
import { describeGate } from "../../stages/audit/gate.ts";
import { loadMeasurements, precisionText } from "../../stages/audit/measured.ts";
import { htmlReport } from "../../stages/audit/page.ts";
import { alignmentCsv, fixed } from "../../stages/audit/report.ts";
import { agreementHtml, agreementMarkdown, auditJson } from "../../stages/audit/study/report.ts";
import { loadRiskModel, RiskModelError } from "../../stages/audit/risk/model.ts";
import { rulesInUse } from "../../stages/audit/rules/registry.ts";
import type { SwebenchAudit } from "../../stages/audit/study/swebench.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "../io.ts";
import { movedOption, stageCommand } from "../subcommands.ts";
import { runAudit, type SwebenchAuditFlags, swebenchInputs } from "../swebench-inputs.ts";

interface AuditSwebenchFlags extends SwebenchAuditFlags {
  out: string;
  riskModel?: string;
  judge?: string;
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

/** Audits the records, writes the report's files and prints what it found. */
async function auditRecords(records: string, opts: AuditSwebenchFlags, io: Io): Promise<number> {
  requirePath("<records>", records, "file");
  const { options, rejects } = swebenchInputs(records, opts, io);
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
}

/** `switch-swe audit swebench FILE`: audits a SWE-bench-family file's verifiers without building anything. */
export function registerAuditSwebench(program: Command, io: Io, exit: ExitCode): void {
  const audit = stageCommand(program, "audit");
  audit
    .command("swebench")
    .description("audit a SWE-bench-family file's verifiers without building anything: each record is a task of one request")
    .argument("<records>", "the SWE-bench-family file (JSON or JSONL)")
    .option("--mirrors <dir>", "OWNER__NAME.bundle, OWNER__NAME.git or OWNER__NAME clones to read test sources from")
    .option("--clone", "clone a repository no mirror holds from GitHub")
    .option("--annotations <csv>", "human annotations (SWE-bench Verified's columns) to measure agreement against")
    .option("--out <dir>", "where alignment.csv, index.html and audit.json go", "audit-report")
    .option("--work-dir <dir>", "where the audit keeps its mirrors and the judge's answers", ".switch-swe/audit")
    .option("--record <id...>", "audit only these instance ids")
    .option("--rules <yaml>", "rules turned off or weighed otherwise (`new_name: {severity: 2}`, `open_choice: {enabled: false}`)")
    .option("--risk-model <json>", "the risk model's weights (default: data/audit/risk-model.json; none: the rules' own severities)")
    .option("--judge <adapter>", "also ask a model for each record's severity (an adapter file, or a name under data/audit/judges/)")
    .option("--decisions <yaml>", "an auditor's decisions (audits/decisions.yaml's shape), which the gate follows first")
    .option("--imported <yaml...>", "decisions imported from annotations (`audit import-annotations`), which the gate follows")
    .addHelpText(
      "after",
      "\nExample:\n  switch-swe audit swebench ../shared/data/swebench-lite-test-half.jsonl --mirrors DIR \\\n    --annotations ../shared/data/swebench-lite-test-half.annotations.csv --out audit-report",
    )
    .action(exit.act((records: string, opts: AuditSwebenchFlags) => auditRecords(records, opts, io)));
  movedOption(audit, "--swebench", "switch-swe audit swebench FILE");
}
