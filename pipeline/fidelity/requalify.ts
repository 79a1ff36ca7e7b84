import { figures, markdownTable } from "../markdown.ts";
import { join } from "node:path";
import { stringify } from "csv-stringify/sync";
import { writeFileAtomic } from "../atomic.ts";
import { auditRecord, DEFECT_MEANINGS } from "./defects.ts";
import { compareSet, explained, type SetComparison } from "./compare.ts";
import { DefectKind, type EraSummary, type RecordAudit, RequalifyReport } from "../schemas/requalify.ts";
import { type FidelityOptions, qualifyRecords } from "./measure.ts";

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
  const audited: RecordAudit[] = candidates.map((c) => {
    const q = qualifications.get(c.id);
    const audit = auditRecord({ id: c.id, repo: c.repo, failToPass: c.upstream_fail_to_pass, passToPass: c.upstream_pass_to_pass }, q, rejects.get(c.id));
    const version = c.version ? { version: c.version } : {};
    if (!q) return { ...audit, ...version };
    // The sets compared as `switch-swe fidelity` compares them, every difference classed.
    const f2p = compareSet(q.fail_to_pass, c.upstream_fail_to_pass, q, { theirOther: c.upstream_pass_to_pass, failToPass: true });
    const p2p = compareSet(q.pass_to_pass, c.upstream_pass_to_pass, q, { theirOther: c.upstream_fail_to_pass });
    const differences = (set: "f2p" | "p2p", comparison: SetComparison) => [
      ...comparison.missing.map((d) => ({ set, side: "missing" as const, ...d })),
      ...comparison.extra.map((d) => ({ set, side: "extra" as const, ...d })),
    ];
    return {
      ...audit,
      ...version,
      f2p_agreement: f2p.agreement,
      p2p_agreement: p2p.agreement,
      differences: [...differences("f2p", f2p), ...differences("p2p", p2p)],
    };
  });
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
    eras: summariseEras(audited),
    records: audited,
    by_kind: byKind,
  });
}

/** Per repository and era: how many records built, and how their sets agree with the records'. */
export function summariseEras(records: RecordAudit[]): EraSummary[] {
  const eras = new Map<string, EraSummary>();
  for (const record of records) {
    if (!record.repo) continue; // a line mine could not read has no repository
    const version = record.version ?? "-";
    const key = `${record.repo}\u0000${version}`;
    const era = eras.get(key) ?? {
      repo: record.repo,
      version,
      records: 0,
      requalified: 0,
      f2p_exact: 0,
      f2p_explained: 0,
      p2p_exact: 0,
      f2p_classes: {},
      p2p_classes: {},
      not_requalified: {},
    };
    eras.set(key, era);
    era.records++;
    if (!record.requalified) {
      const reason = record.defects[0]?.detail.split(":")[0] ?? "not qualified";
      era.not_requalified[reason] = (era.not_requalified[reason] ?? 0) + 1;
      continue;
    }
    era.requalified++;
    const f2p = record.differences.filter((d) => d.set === "f2p");
    if (record.f2p_agreement === "exact") era.f2p_exact++;
    if (explained({ task: record.instance_id, environment: { built: true }, failToPass: { agreement: record.f2p_agreement!, missing: f2p, extra: [] } }))
      era.f2p_explained++;
    if (record.p2p_agreement === "exact") era.p2p_exact++;
    for (const d of record.differences) {
      const classes = d.set === "f2p" ? era.f2p_classes : era.p2p_classes;
      classes[d.class] = (classes[d.class] ?? 0) + 1;
    }
  }
  return [...eras.values()].sort((a, b) => (a.repo !== b.repo ? (a.repo < b.repo ? -1 : 1) : compareVersions(a.version, b.version)));
}

/** Versions in numeric order (1.10 after 1.9; "v5.3" as 5.3). */
function compareVersions(a: string, b: string): number {
  const parts = (v: string) =>
    v
      .replace(/^v/, "")
      .split(".")
      .map((p) => (/^\d+$/.test(p) ? Number(p) : Number.NaN));
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const [p, q] = [x[i] ?? -1, y[i] ?? -1];
    if (Number.isNaN(p) || Number.isNaN(q)) return a < b ? -1 : a > b ? 1 : 0;
    if (p !== q) return p - q;
  }
  return 0;
}

const classCounts = (classes: Record<string, number>) =>
  Object.entries(classes)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([c, n]) => `${c} ${n}`)
    .join(", ") || "none";

/** The per-era table, with a total line. */
function renderEras(eras: EraSummary[]): string[] {
  const sum = (f: (e: EraSummary) => number) => eras.reduce((n, e) => n + f(e), 0);
  return markdownTable(
    [
      "Repository",
      "Era",
      ...["Records", "Built", "F2P exact", "F2P exact or explained", "P2P exact"].map(figures),
      "F2P differences by class",
      "P2P differences by class",
      "Not built",
    ],
    [
      ...eras.map((e) => [
        e.repo,
        e.version,
        e.records,
        e.requalified,
        e.f2p_exact,
        e.f2p_explained,
        e.p2p_exact,
        classCounts(e.f2p_classes),
        classCounts(e.p2p_classes),
        Object.keys(e.not_requalified).length ? classCounts(e.not_requalified) : "",
      ]),
      [
        "**all**",
        "",
        sum((e) => e.records),
        sum((e) => e.requalified),
        sum((e) => e.f2p_exact),
        sum((e) => e.f2p_explained),
        sum((e) => e.p2p_exact),
        "",
        "",
        "",
      ],
    ],
  );
}

/** The defects report as Markdown: what each kind means and how many records have it, then record by record. */
export function renderRequalifyMarkdown(report: RequalifyReport): string {
  const lines = [
    `# Defects of ${report.source}`,
    "",
    `${report.records.length} records, each re-run ${report.runs_per_state} time(s) before and after its gold patch, offline (executor: ${report.executor}). Requalified: ${report.records.filter((r) => r.requalified).length}; with no defect: ${report.records.filter((r) => r.requalified && !r.defects.length).length}.`,
    "",
    ...markdownTable(
      ["Defect", figures("Records"), "Meaning"],
      DefectKind.options.map((kind) => [kind, report.by_kind[kind] ?? 0, DEFECT_MEANINGS[kind]]),
    ),
    "",
    "## By repository and era",
    "",
    "Built: the environment built and every run reported outcomes. A difference between our set and the record's is classed as `switch-swe fidelity` classes it (needs_network, unstable, id_format, environment, unlisted, passes_before; other: none of these, to look at).",
    "",
    ...renderEras(report.eras),
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
