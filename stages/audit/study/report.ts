import type { AuditRecord } from "../../../pipeline/schemas/audit.ts";
import { precisionText } from "../measured.ts";
import { esc, htmlTable } from "../page-sections.ts";
import { markdownTable } from "../../../pipeline/markdown.ts";
import { fixed } from "../report.ts";
import type { Agreement, RuleAgreement } from "./agreement.ts";
import type { Measured, Triage } from "./measure.ts";

/**
 * A study's measurement as tables (the report's agreement.md, its page's agreement section,
 * docs/AUDITING.md) and as JSON (audit.json), every figure with how it was measured.
 */

/** Agreement with human annotations as rows (per repository, then overall). */
export function agreementRows(agreements: Agreement[]): string[][] {
  return agreements.map((a) => [
    a.scope,
    a.method,
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
  "measured",
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
  "precision (share scored 2+) [95 % Wilson], measured",
  "written from",
  "elsewhere",
  "share 2+ elsewhere",
];

/** Per rule: records carrying its flag by score, its precision with how it was measured, the annotated records it was written from, and how it does on the others. */
export function ruleAgreementRows(rules: RuleAgreement[]): string[][] {
  return rules.map((k) => [
    k.kind,
    ...k.by_score.map(String),
    precisionText(k.measured),
    String(k.written_from),
    String(k.elsewhere),
    fixed(k.elsewhere_precision),
  ]);
}

/** Tasks read in the risk's order to find half of the unfair ones. */
export function triageRows(triage: Triage[]): string[][] {
  return triage.map((t) => [
    t.scheme,
    t.method,
    `${t.read} of ${t.of} (${((100 * t.read) / Math.max(1, t.of)).toFixed(0)} %)`,
    `${t.found} of ${t.unfair}`,
    `${t.random.toFixed(1)} (${((100 * t.random) / Math.max(1, t.of)).toFixed(0)} %)`,
  ]);
}

export const TRIAGE_COLUMNS = ["order", "measured", "tasks read, riskiest first", "unfair found", "a random order reads, on average"];

/** The tables of a measurement, with their titles: the gate, the risk as shipped and cross-validated, the triage, per rule. */
export function measuredTables(measured: Measured): { title: string; columns: string[]; rows: string[][] }[] {
  const g = measured.gate;
  return [
    {
      title: "The gate: what it excluded of the annotated records, against the annotators' scores (precision: the share of exclusions scored 2 or more)",
      columns: ["records", "scored 2+ (base rate)", "excluded", "precision [95 % Wilson], measured", "scored 0 excluded", "excluded by"],
      rows: [
        [
          String(g.records),
          `${g.scored_2_or_more} (${fixed(g.base_rate)})`,
          String(g.excluded.fired),
          precisionText(g.excluded),
          `${g.zeros_excluded} of ${g.zeros}`,
          Object.entries(g.by)
            .map(([by, n]) => `${by} ${n}`)
            .join(", ") || "—",
        ],
      ],
    },
    {
      title:
        "The risk as shipped: its bands (flagged: severity 2 or more) on these records; in sample where the audit's authors read any of them, and then they flatter it",
      columns: AGREEMENT_COLUMNS,
      rows: agreementRows(measured.shipped),
    },
    ...(measured.cross_validated.length
      ? [
          {
            title:
              "Cross-validated on the given records: every weight and threshold fitted without the scored record, no rule credited on a record it was written from; the records are still those the rules and features were chosen on, so these overstate unseen records",
            columns: AGREEMENT_COLUMNS,
            rows: agreementRows(measured.cross_validated),
          },
        ]
      : []),
    ...(measured.triage.length
      ? [
          {
            title: "Triage: tasks an auditor reads in the risk's order to find half of the unfair ones",
            columns: TRIAGE_COLUMNS,
            rows: triageRows(measured.triage),
          },
        ]
      : []),
    {
      title:
        "Per rule: annotated records carrying its flag by score; its precision; the records it was written from; the others it fires on, and their share scored 2+",
      columns: RULE_AGREEMENT_COLUMNS,
      rows: ruleAgreementRows(measured.rules),
    },
  ];
}

/** The agreement as Markdown (the report's agreement.md, docs/AUDITING.md). */
export function agreementMarkdown(measured: Measured): string {
  return measuredTables(measured)
    .map((t) => `${t.title}:\n\n${markdownTable(t.columns, t.rows).join("\n")}\n`)
    .join("\n");
}

/** The agreement as a section of the auditors' page. */
export function agreementHtml(measured: Measured): string {
  const tables = measuredTables(measured)
    .map((t) => `<p class="summary">${esc(t.title)}:</p>${htmlTable(t.columns, t.rows)}`)
    .join("");
  return `<section class="box" id="agreement"><h2 class="part">Agreement of this audit with the annotations given</h2><p class="summary">Flagged: severity ≥ 2 against <code>false_negative</code> ≥ 2; weighted kappa: severity against the 0–3 score (quadratic weights); AUC: the risk against scores of 2 or more. Each row says how it was measured.</p>${tables}</section>`;
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
          flags: r.flags.map((f) => ({
            kind: f.flag,
            test: f.subject,
            severity: f.severity,
            gate: f.gate,
            ...(f.authored ? { authored: true } : {}),
            detail: f.detail,
            evidence: f.evidence,
          })),
          signals: r.signals,
          ...(r.judge ? { judge: r.judge } : {}),
          ...(r.decision ? { decision: r.decision } : {}),
          ...(r.imported ? { imported: r.imported } : {}),
          ...(r.exclusion ? { excluded: r.exclusion } : {}),
        })),
        ...(measured
          ? { gate: measured.gate, agreement: measured.shipped, cross_validated: measured.cross_validated, triage: measured.triage, rules: measured.rules }
          : {}),
        ...(usage ? { judge_usage: usage } : {}),
      },
      null,
      2,
    ) + "\n"
  );
}
