import { stringify } from "csv-stringify/sync";
import type { AuditRecord } from "../../pipeline/schemas/audit.ts";
import type { Request } from "../../pipeline/schemas/task.ts";
import { markdownTable } from "../../pipeline/markdown.ts";
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
      imported: r.imported ? r.imported.verdict : "",
      excluded: r.exclusion ? `${r.exclusion.reason} (${r.exclusion.by})` : "",
    })),
  );
  return stringify(rows, {
    header: true,
    columns: ["task", "repo", "severity", "test", "stages", "evidence", "public_contract", "flags", "decision", "imported", "excluded"],
  });
}

export const fixed = (x: number | null | undefined, digits = 2) => (x === null || x === undefined ? "—" : x.toFixed(digits));

/** The rules as a Markdown table (`audit rules --markdown`, docs/AUDITING.md). */
export function rulesMarkdown(): string {
  return (
    markdownTable(
      RULE_COLUMNS,
      ruleRows().map((r) => r.map((c, i) => (i === 0 ? `\`${c}\`` : c))),
    ).join("\n") + "\n"
  );
}
