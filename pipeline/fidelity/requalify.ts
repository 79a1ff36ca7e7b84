import { join } from "node:path";
import { stringify } from "csv-stringify/sync";
import { writeFileAtomic } from "../atomic.ts";
import { auditRecord, DEFECT_MEANINGS } from "./defects.ts";
import { DefectKind, RequalifyReport } from "../schemas/requalify.ts";
import { type FidelityOptions, qualifyRecords } from "./run.ts";

/** What requalify takes: what fidelity does, with the file named `swebench`. */
export type RequalifyOptions = Omit<FidelityOptions, "records"> & { swebench: string };

/**
 * Audits a SWE-bench-family file: re-runs each record's tests before and after its gold patch
 * (`runs` times each, offline, in environments built from the profiles) and lists, per record, what
 * does not hold of what it claims (see DEFECT_MEANINGS). Records that cannot be re-run are listed
 * as such; the rest of the file goes on.
 */
export async function requalify(options: RequalifyOptions): Promise<RequalifyReport> {
  const { swebench, ...rest } = options;
  const { candidates, qualifications, rejects } = await qualifyRecords({ ...rest, records: swebench });
  const audited = candidates.map((c) =>
    auditRecord(
      { id: c.id, repo: c.repo, failToPass: c.upstream_fail_to_pass, passToPass: c.upstream_pass_to_pass },
      qualifications.get(c.id),
      rejects.get(c.id),
    ),
  );
  // Records mine could not read are in the report too, with why.
  const seen = new Set(audited.map((a) => a.instance_id));
  for (const [id, reject] of rejects) {
    if (!seen.has(id) && (!options.tasks?.length || options.tasks.includes(id)))
      audited.push(auditRecord({ id, repo: "", failToPass: [], passToPass: [] }, undefined, reject));
  }
  audited.sort((a, b) => (a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : 0));
  const byKind = Object.fromEntries(DefectKind.options.map((kind) => [kind, audited.filter((a) => a.defects.some((d) => d.kind === kind)).length]));
  // The report names what ran the tests: through the queue, its workers' Docker executor.
  return RequalifyReport.parse({
    source: options.swebench,
    runs_per_state: options.runs,
    executor: options.executor === "queue" ? "docker" : options.executor,
    records: audited,
    by_kind: byKind,
  });
}

/** The defects report as Markdown: what each kind means and how many records have it, then record by record. */
export function renderRequalifyMarkdown(report: RequalifyReport): string {
  const lines = [
    `# Defects of ${report.source}`,
    "",
    `${report.records.length} records, each re-run ${report.runs_per_state} time(s) before and after its gold patch, offline (executor: ${report.executor}). Requalified: ${report.records.filter((r) => r.requalified).length}; with no defect: ${report.records.filter((r) => r.requalified && !r.defects.length).length}.`,
    "",
    "| Defect | Records | Meaning |",
    "|---|---:|---|",
    ...DefectKind.options.map((kind) => `| ${kind} | ${report.by_kind[kind] ?? 0} | ${DEFECT_MEANINGS[kind]} |`),
    "",
    "## Records",
  ];
  for (const record of report.records) {
    lines.push("", `### ${record.instance_id}`, "");
    if (!record.defects.length) lines.push("No defect found.");
    for (const defect of record.defects)
      lines.push(`- **${defect.kind}** (${defect.tests.length} test${defect.tests.length === 1 ? "" : "s"}): ${defect.detail.replaceAll("|", "\\|")}`);
  }
  return lines.join("\n") + "\n";
}

/** One row per record and defect (a record without any has one row, kind empty). */
export function renderRequalifyCsv(report: RequalifyReport): string {
  const rows = report.records.flatMap((r) =>
    r.defects.length
      ? r.defects.map((d) => ({
          instance_id: r.instance_id,
          repo: r.repo,
          requalified: String(r.requalified),
          kind: d.kind,
          tests: d.tests.length,
          test_ids: d.tests.join(" ; "),
          detail: d.detail,
        }))
      : [{ instance_id: r.instance_id, repo: r.repo, requalified: String(r.requalified), kind: "", tests: 0, test_ids: "", detail: "" }],
  );
  return stringify(rows, { header: true, columns: ["instance_id", "repo", "requalified", "kind", "tests", "test_ids", "detail"] });
}

/** Writes requalify-report.{md,csv,json} into `outDir`, each atomically. */
export async function writeRequalifyReport(report: RequalifyReport, outDir: string): Promise<string[]> {
  const files = ["md", "csv", "json"].map((ext) => join(outDir, `requalify-report.${ext}`));
  await writeFileAtomic(files[0]!, renderRequalifyMarkdown(report));
  await writeFileAtomic(files[1]!, renderRequalifyCsv(report));
  await writeFileAtomic(files[2]!, JSON.stringify(report, null, 2) + "\n");
  return files;
}
