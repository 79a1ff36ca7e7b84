import type { AuditMeasurements, AuditRecord, RiskModel } from "../../pipeline/schemas/audit.ts";
import type { GateDescription } from "./gate.ts";
import { precisionText } from "./measured.ts";
import { esc, figuresSection, gateSection, rulesSection, SCRIPT, STYLE } from "./page-sections.ts";
import type { AuditedTask } from "./report.ts";
import { modelFor, shares } from "./risk/model.ts";

/**
 * The auditors' page: a static file that needs no server. It says first what excludes a task in
 * this run and how its figures were measured; then the tasks nobody has decided, riskiest first,
 * each with what each signal adds to its risk, every fired rule with the line that shows it and
 * its measured precision, its stages with provenance and its F2P tests with their evidence; then
 * the tasks the gate excluded, and the decided ones, imported and local apart; the rules' page;
 * a study's own figures where it gives some.
 */

/** A request's text and the links to where it came from. */
function stageItem(r: AuditedTask["requests"][number]): string {
  const links = r.provenance.sources
    .map((s) =>
      s.url
        ? `<a href="${esc(s.url)}" data-record="${esc(s.record_id)}">${esc(s.kind)} ${esc(s.record_id)}</a>`
        : `<span>${esc(s.kind)} ${esc(s.record_id)}${s.file ? ` (${esc(s.file)})` : ""}</span>`,
    )
    .join("");
  const curated = r.provenance.curation
    ? ` · curated (${esc(r.provenance.curation.action)} by ${esc(r.provenance.curation.reviewer)}: ${esc(r.provenance.curation.reason)})`
    : "";
  return `<li><div class="text">${esc(r.text)}</div><div class="prov">${links}${curated}</div></li>`;
}

/** One F2P test's row: the stages that justify it and their evidence. */
function linkRow(record: AuditRecord, l: AuditRecord["links"][number]): string {
  const unjustified = record.flags.some((f) => f.flag === "unjustified_test" && f.subject === l.test);
  const byStage = new Map<number, string[]>();
  for (const e of l.evidence) byStage.set(e.stage, [...(byStage.get(e.stage) ?? []), e.token]);
  const evidence = [...byStage]
    .map(([stage, tokens]) => `<div><span class="stage">stage ${stage}</span> ${tokens.map((t) => `<span class="token">${esc(t)}</span>`).join("")}</div>`)
    .join("");
  return `<tr class="${unjustified ? "unjustified" : ""}"><td class="test">${esc(l.test)}</td><td>${l.stages.join(", ") || "—"}</td><td>${evidence || (l.public_contract ? `contract: ${esc(l.public_contract)}` : "—")}</td></tr>`;
}

/** What each signal adds to the task's risk (log-odds against the records the model was fitted on), largest first. */
function shareLine(record: AuditRecord, file?: RiskModel): string {
  if (!file || record.risk === undefined) return "";
  const parts = shares(modelFor(file, record), record)
    .filter((s) => Math.abs(s.share) >= 0.005)
    .sort((a, b) => Math.abs(b.share) - Math.abs(a.share))
    .map(
      (s) =>
        `<span class="${s.share > 0 ? "up" : "down"}">${esc(s.feature.replaceAll("_", " "))} ${s.share > 0 ? "+" : "−"}${Math.abs(s.share).toFixed(2)}</span>`,
    );
  return parts.length ? `<div class="shares">what raises or lowers its risk: ${parts.join(" · ")}</div>` : "";
}

/** Every fired rule with the lines that show it, its gate, and its precision as measured. */
function flagList(record: AuditRecord, measurements?: AuditMeasurements): string {
  if (!record.flags.length) return "";
  const measured = (flag: string) => {
    const m = measurements?.rules[flag as keyof AuditMeasurements["rules"]];
    return m ? `precision ${precisionText(m)}` : "never fired on the annotated records";
  };
  const item = (f: AuditRecord["flags"][number]) =>
    `<li data-flag="${esc(f.flag)}"><b>${esc(f.flag.replaceAll("_", " "))}</b> (${f.severity}) — ${esc(f.subject)}: ${esc(f.detail)}${f.evidence
      .map((e) => `<div class="line"><span class="where">${esc(e.file)}:${e.line}</span> <code>${esc(e.text)}</code></div>`)
      .join("")}<div class="measured">${esc(measured(f.flag))}</div><div class="gate">${f.authored ? "authored stage; " : ""}${esc(f.gate)}</div></li>`;
  return `<ul class="flags">${record.flags.map(item).join("")}</ul>`;
}

/** Which part of the page a task belongs to. */
function sectionOf(record: AuditRecord): "local" | "imported" | "excluded" | "undecided" {
  if (record.decision) return "local";
  if (record.imported) return "imported";
  return record.exclusion ? "excluded" : "undecided";
}

function card(record: AuditRecord, task: AuditedTask, options: PageOptions): string {
  const flags = [...new Set(record.flags.map((f) => f.flag))];
  const decided = [
    record.decision ? `<span class="decision">${esc(record.decision.verdict)} by ${esc(record.decision.auditor)}: ${esc(record.decision.reason)}</span>` : "",
    record.imported
      ? `<span class="decision">imported: ${esc(record.imported.verdict)} (false_negative ${record.imported.scores.false_negative}${record.imported.scores.filter_out ? ", filter_out" : ""})</span>`
      : "",
  ].join("");
  const risk = record.risk === undefined ? "" : `<span class="risk">risk ${record.risk.toFixed(2)}</span>`;
  const judge = record.judge ? `<span class="decision">judge: ${record.judge.severity} (${esc(record.judge.model)})</span>` : "";
  const tags = flags.length ? flags.map((f) => `<span class="flag">${esc(f.replaceAll("_", " "))}</span>`).join("") : `<span class="clean">aligned</span>`;
  const excluded = record.exclusion
    ? `<div class="excluded">excluded (${esc(record.exclusion.reason)}, ${esc(record.exclusion.by)}): ${esc(record.exclusion.message)}</div>`
    : "";
  const notes = record.imported ? `<div class="prov">the annotators (${esc(record.imported.annotators)}): ${esc(record.imported.reason)}</div>` : "";
  return `<article id="${esc(record.task_id)}" data-section="${sectionOf(record)}" data-risk="${record.risk ?? ""}" data-repo="${esc(task.repo)}" data-severity="${record.severity}" data-flags="${esc(flags.join(" "))}">
<h3>${esc(record.task_id)} <span class="repo">${esc(task.repo)} @ ${esc(task.base_commit.slice(0, 12))}</span>${risk}<span class="sev sev${record.severity}">severity ${record.severity}</span>${tags}${judge}${decided}</h3>${excluded}${notes}${shareLine(record, options.model)}${flagList(record, options.measurements)}
<ol class="stages">${task.requests.map(stageItem).join("")}</ol>
<details${record.flags.length ? " open" : ""}><summary>${record.links.length} fail-to-pass test(s) and their evidence</summary><table><thead><tr><th>test</th><th>justified by stage</th><th>evidence</th></tr></thead><tbody>${record.links.map((l) => linkRow(record, l)).join("")}</tbody></table></details>
</article>`;
}

/** Riskiest first; without risks, in the records' order. */
const byRisk = (records: AuditRecord[]) =>
  [...records].sort((a, b) => (b.risk ?? 0) - (a.risk ?? 0) || (a.task_id < b.task_id ? -1 : a.task_id > b.task_id ? 1 : 0));

export interface PageOptions {
  records: AuditRecord[];
  tasks: Map<string, AuditedTask>;
  gate: GateDescription;
  /** The shipped measurements: each rule's precision, the triage, how each was measured. */
  measurements?: AuditMeasurements;
  /** A section of this run's own figures (a study's agreement with the annotations it was given), already as HTML. */
  extra?: string;
  model?: RiskModel;
}

const PARTS: { section: ReturnType<typeof sectionOf>; title: string }[] = [
  { section: "undecided", title: "Undecided tasks, riskiest first: read these" },
  { section: "excluded", title: "Excluded by the gate, with no decision" },
  { section: "imported", title: "Decided by imported annotations" },
  { section: "local", title: "Decided by an auditor" },
];

/** A static page an auditor can read and filter. */
export function htmlReport(options: PageOptions): string {
  const { records, tasks } = options;
  const flagNames = [...new Set(records.flatMap((r) => r.flags.map((f) => f.flag)))].sort();
  const repos = [...new Set(records.map((r) => tasks.get(r.task_id)?.repo ?? ""))].sort();
  const count = (section: string) => records.filter((r) => sectionOf(r) === section).length;
  const parts = PARTS.map(({ section, title }) => {
    const cards = byRisk(records.filter((r) => sectionOf(r) === section)).map((r) => card(r, tasks.get(r.task_id)!, options));
    return `<section id="${section}"><h2 class="part">${esc(title)} (${cards.length})</h2>${cards.join("\n")}</section>`;
  });
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>switch-swe alignment audit</title><style>${STYLE}</style></head>
<body><header><h1>Requirement ↔ verifier alignment</h1>
<div class="summary">${records.length} tasks: ${count("undecided")} undecided${records.some((r) => r.risk !== undefined) ? ", riskiest first" : ""} · ${count("excluded")} excluded by the gate · ${count("imported")} decided by imported annotations · ${count("local")} by an auditor · ${records.reduce((n, r) => n + r.links.length, 0)} fail-to-pass tests · showing <b id="shown">${records.length}</b></div>
<div class="filters"><label>flag <select id="flag"><option value="">all</option><option value="none">no flag</option>${flagNames.map((f) => `<option value="${f}">${f.replaceAll("_", " ")}</option>`).join("")}</select></label>
<label>repository <select id="repo"><option value="">all</option>${repos.map((r) => `<option>${esc(r)}</option>`).join("")}</select></label>
<label>search <input id="q" type="search" placeholder="task, test or text"></label></div></header>
<main>${gateSection(options.gate, { imported: count("imported"), local: count("local") })}${figuresSection(options.measurements)}${options.extra ?? ""}${rulesSection(options.measurements, options.gate.inForce)}${parts.join("\n")}</main><script>${SCRIPT}</script></body></html>
`;
}
