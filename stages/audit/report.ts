import { stringify } from "csv-stringify/sync";
import type { AuditRecord } from "../../pipeline/schemas/audit.ts";
import type { Request } from "../../pipeline/schemas/task.ts";
import type { Agreement, RuleAgreement } from "./agreement.ts";
import type { Measured } from "./measure.ts";
import { RULE_COLUMNS, ruleRows } from "./rules/registry.ts";

/** What the report shows of a task besides its audit record: where it is and what it asks. */
export interface AuditedTask {
  repo: string;
  base_commit: string;
  requests: Request[];
}

/** One row per F2P test: which stages justify it and with what evidence, and the task's flags. */
export function alignmentCsv(records: AuditRecord[], tasks: Map<string, AuditedTask>): string {
  const rows = records.flatMap((r) =>
    r.links.map((l) => ({
      task: r.task_id,
      repo: tasks.get(r.task_id)?.repo ?? "",
      severity: r.severity,
      test: l.test,
      stages: l.stages.join(" "),
      evidence: l.evidence.map((e) => `${e.stage}:${e.token}`).join(" "),
      public_contract: l.public_contract ?? "",
      flags: r.flags
        .filter((f) => f.subject === l.test)
        .map((f) => f.flag)
        .join(" "),
      decision: r.decision ? `${r.decision.verdict} (${r.decision.auditor})` : "",
    })),
  );
  return stringify(rows, { header: true, columns: ["task", "repo", "severity", "test", "stages", "evidence", "public_contract", "flags", "decision"] });
}

export const fixed = (x: number | null | undefined, digits = 2) => (x === null || x === undefined ? "—" : x.toFixed(digits));

/** Agreement with human annotations as rows (per repository, then overall). */
export function agreementRows(agreements: Agreement[]): string[][] {
  return agreements.map((a) => [
    a.scope,
    String(a.records),
    String(a.both),
    String(a.audit_only),
    String(a.annotators_only),
    String(a.neither),
    fixed(a.precision),
    fixed(a.recall),
    fixed(a.kappa),
    fixed(a.weighted_kappa),
    fixed(a.auc),
    a.flagged_of_score0,
    a.flagged_of_score3,
  ]);
}

export const AGREEMENT_COLUMNS = [
  "scope",
  "records",
  "both flag",
  "audit only",
  "annotators only",
  "neither",
  "precision",
  "recall",
  "kappa",
  "weighted kappa",
  "AUC of risk",
  "flagged of scored 0",
  "flagged of scored 3",
];

export const RULE_AGREEMENT_COLUMNS = [
  "rule",
  "scored 0",
  "scored 1",
  "scored 2",
  "scored 3",
  "share scored 2+",
  "written from",
  "elsewhere",
  "share 2+ elsewhere",
];

/** Per rule: records carrying its flag by score, the annotated records it was written from, and how it does on the others. */
export function ruleAgreementRows(rules: RuleAgreement[]): string[][] {
  return rules.map((k) => [k.kind, ...k.by_score.map(String), fixed(k.precision), String(k.written_from), String(k.elsewhere), fixed(k.elsewhere_precision)]);
}

/** The three tables of a measurement, with their titles: in the sample, cross-validated, per rule. */
export function measuredTables(measured: Measured): { title: string; columns: string[]; rows: string[][] }[] {
  return [
    {
      title: "In the sample: the shipped risk model on the records the rules were written looking at (these figures flatter the audit)",
      columns: AGREEMENT_COLUMNS,
      rows: agreementRows(measured.in_sample),
    },
    ...(measured.cross_validated.length
      ? [
          {
            title:
              "Cross-validated, what to expect of records nobody has looked at: every weight and threshold fitted without the scored record, no rule credited on a record it was written from",
            columns: AGREEMENT_COLUMNS,
            rows: agreementRows(measured.cross_validated),
          },
        ]
      : []),
    {
      title: "Per rule: annotated records carrying its flag by score; the records it was written from; the others it fires on, and their share scored 2+",
      columns: RULE_AGREEMENT_COLUMNS,
      rows: ruleAgreementRows(measured.rules),
    },
  ];
}

export const markdownTable = (columns: string[], rows: string[][]) =>
  [`| ${columns.join(" | ")} |`, `| ${columns.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n") + "\n";

/** The agreement as Markdown (the report's agreement.md, docs/AUDITING.md). */
export function agreementMarkdown(measured: Measured): string {
  return measuredTables(measured)
    .map((t) => `${t.title}:\n\n${markdownTable(t.columns, t.rows)}`)
    .join("\n");
}

/** The rules as a Markdown table (`audit rules --markdown`, docs/AUDITING.md). */
export function rulesMarkdown(): string {
  return markdownTable(
    RULE_COLUMNS,
    ruleRows().map((r) => r.map((c, i) => (i === 0 ? `\`${c}\`` : c.replaceAll("|", "\\|")))),
  );
}

/** Per record its risk, severity, flags with their evidence and signals: the machine-readable verdict. */
export function auditJson(records: AuditRecord[], measured?: Measured, usage?: unknown): string {
  return (
    JSON.stringify(
      {
        records: records.map((r) => ({
          instance_id: r.task_id,
          severity: r.severity,
          ...(r.risk === undefined ? {} : { risk: r.risk }),
          source: r.source,
          flags: r.flags.map((f) => ({ kind: f.flag, test: f.subject, severity: f.severity, detail: f.detail, evidence: f.evidence })),
          signals: r.signals,
          ...(r.judge ? { judge: r.judge } : {}),
        })),
        ...(measured ? { agreement: measured.in_sample, cross_validated: measured.cross_validated, rules: measured.rules } : {}),
        ...(usage ? { judge_usage: usage } : {}),
      },
      null,
      2,
    ) + "\n"
  );
}
