import type { AuditRecord, RiskModel } from "../../pipeline/schemas/audit.ts";
import type { Measured } from "./measure.ts";
import type { AuditedTask } from "./report.ts";
import { measuredTables } from "./report.ts";
import { modelFor, shares } from "./risk/model.ts";
import { RULES } from "./rules/registry.ts";

/**
 * The auditors' page: a static file that needs no server. Tasks riskiest first, each with its
 * risk and what each signal adds to it, its stages with provenance, its F2P tests with their
 * evidence and every flag with the line that shows it; the rules' legend; the agreement with
 * annotations where there were some.
 */

function esc(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

const STYLE = `
:root{--ink:#1d2330;--muted:#5f6b7a;--line:#e3e7ee;--bg:#f6f7fa;--accent:#2f5fd0;--warn:#b5470b;--ok:#2e7d4f}
*{box-sizing:border-box}body{margin:0;font:15px/1.5 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--ink);background:var(--bg)}
header{position:sticky;top:0;z-index:1;background:#fff;border-bottom:1px solid var(--line);padding:14px 28px}
h1{font-size:20px;margin:0 0 6px}.summary{color:var(--muted);font-size:14px}
.filters{display:flex;gap:12px;margin-top:10px;flex-wrap:wrap}.filters label{font-size:13px;color:var(--muted)}
select,input{font:inherit;padding:4px 8px;border:1px solid var(--line);border-radius:6px;background:#fff}
main{max-width:1100px;margin:20px auto;padding:0 20px}
article{background:#fff;border:1px solid var(--line);border-radius:10px;margin-bottom:14px;padding:14px 18px}
article h2{font-size:16px;margin:0;display:flex;gap:10px;align-items:center;flex-wrap:wrap}
.repo{color:var(--muted);font-weight:400;font-size:13px}
.sev{font-size:12px;padding:1px 8px;border-radius:10px;background:#eef2fb;color:var(--muted)}.sev2,.sev3{background:#fdebd9;color:var(--warn);font-weight:600}
.line{font-size:12px;margin:2px 0 0 4px;color:var(--ink)}.line .where{color:var(--muted)}.line code{background:var(--bg);padding:0 4px;border-radius:4px;white-space:pre-wrap}
.agreement{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 18px;margin-bottom:14px}.agreement td,.agreement th{text-align:right}.agreement td:first-child,.agreement th:first-child{text-align:left}
.flag{font-size:12px;padding:1px 8px;border-radius:10px;background:#fdebd9;color:var(--warn)}
.clean{font-size:12px;padding:1px 8px;border-radius:10px;background:#e3f3e9;color:var(--ok)}
.decision{font-size:12px;color:var(--muted)}
.risk{font-size:12px;padding:1px 8px;border-radius:10px;background:#eef2fb;color:var(--ink);font-weight:600}.shares{font-size:12px;color:var(--muted);margin-top:4px}.shares .up{color:var(--warn)}.shares .down{color:var(--ok)}
.legend td:first-child{font-family:ui-monospace,Menlo,monospace;white-space:nowrap}
ol.stages{padding-left:22px}ol.stages li{margin:8px 0}
.text{white-space:pre-wrap;background:var(--bg);border-radius:6px;padding:8px 10px;font-size:14px}
.prov{font-size:12px;color:var(--muted);margin-top:4px}.prov a{color:var(--accent);text-decoration:none;margin-right:8px}
table{border-collapse:collapse;width:100%;font-size:13px;margin-top:8px}th,td{border-top:1px solid var(--line);padding:5px 6px;text-align:left;vertical-align:top}
td.test{font-family:ui-monospace,Menlo,monospace;word-break:break-all}.token{font-family:ui-monospace,Menlo,monospace;background:#eef2fb;border-radius:4px;padding:0 4px;margin-right:4px}
tr.unjustified td{background:#fff6ef}.stage{font-size:11px;color:var(--muted);margin-right:4px}ul.flags{margin:8px 0 0;padding-left:18px;color:var(--warn);font-size:13px}
details>summary{cursor:pointer;color:var(--muted);font-size:13px;margin-top:8px}
`;

const SCRIPT = `
const flag=document.getElementById('flag'),repo=document.getElementById('repo'),q=document.getElementById('q'),shown=document.getElementById('shown');
function apply(){let n=0;for(const a of document.querySelectorAll('article')){const ok=(!flag.value||a.dataset.flags.split(' ').includes(flag.value)||(flag.value==='none'&&!a.dataset.flags))&&(!repo.value||a.dataset.repo===repo.value)&&(!q.value||a.textContent.toLowerCase().includes(q.value.toLowerCase()));a.hidden=!ok;if(ok)n++}shown.textContent=n}
for(const el of [flag,repo,q])el.addEventListener('input',apply);apply();
`;

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

function flagList(record: AuditRecord): string {
  if (!record.flags.length) return "";
  const item = (f: AuditRecord["flags"][number]) =>
    `<li><b>${esc(f.flag.replaceAll("_", " "))}</b> (${f.severity}) — ${esc(f.subject)}: ${esc(f.detail)}${f.evidence
      .map((e) => `<div class="line"><span class="where">${esc(e.file)}:${e.line}</span> <code>${esc(e.text)}</code></div>`)
      .join("")}</li>`;
  return `<ul class="flags">${record.flags.map(item).join("")}</ul>`;
}

function card(record: AuditRecord, task: AuditedTask, model?: RiskModel): string {
  const flags = [...new Set(record.flags.map((f) => f.flag))];
  const decision = record.decision
    ? `<span class="decision">${esc(record.decision.verdict)} by ${esc(record.decision.auditor)}: ${esc(record.decision.reason)}</span>`
    : "";
  const risk = record.risk === undefined ? "" : `<span class="risk">risk ${record.risk.toFixed(2)}</span>`;
  const judge = record.judge ? `<span class="decision">judge: ${record.judge.severity} (${esc(record.judge.model)})</span>` : "";
  const tags = flags.length ? flags.map((f) => `<span class="flag">${esc(f.replaceAll("_", " "))}</span>`).join("") : `<span class="clean">aligned</span>`;
  return `<article id="${esc(record.task_id)}" data-repo="${esc(task.repo)}" data-severity="${record.severity}" data-flags="${esc(flags.join(" "))}">
<h2>${esc(record.task_id)} <span class="repo">${esc(task.repo)} @ ${esc(task.base_commit.slice(0, 12))}</span>${risk}<span class="sev sev${record.severity}">severity ${record.severity}</span>${tags}${judge}${decision}</h2>${shareLine(record, model)}${flagList(record)}
<ol class="stages">${task.requests.map(stageItem).join("")}</ol>
<details${record.flags.length ? " open" : ""}><summary>${record.links.length} fail-to-pass test(s) and their evidence</summary><table><thead><tr><th>test</th><th>justified by stage</th><th>evidence</th></tr></thead><tbody>${record.links.map((l) => linkRow(record, l)).join("")}</tbody></table></details>
</article>`;
}

function htmlTable(columns: string[], rows: string[][], cls = ""): string {
  const head = columns.map((c) => `<th>${esc(c)}</th>`).join("");
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join("")}</tr>`).join("");
  return `<table${cls ? ` class="${cls}"` : ""}><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

/** The rules' legend, from the registry. */
function legend(): string {
  const rows = RULES.map((r) => [r.flag, r.scope, r.severityNote ? `${r.severity} (${r.severityNote})` : String(r.severity), r.asks]);
  return `<details class="agreement"><summary>The rules: what each flag asks</summary>${htmlTable(["flag", "scope", "severity", "asks"], rows, "legend")}</details>`;
}

function agreementSection(measured?: Measured): string {
  if (!measured) return "";
  const tables = measuredTables(measured)
    .map((t) => `<p class="summary">${esc(t.title)}:</p>${htmlTable(t.columns, t.rows)}`)
    .join("");
  return `<section class="agreement"><h2>Agreement with human annotations</h2><p class="summary">Flagged: severity ≥ 2 against <code>false_negative</code> ≥ 2; weighted kappa: severity against the 0–3 score (quadratic weights); AUC: the risk against scores of 2 or more.</p>${tables}</section>`;
}

/** Riskiest first; without risks, in the records' order. */
const byRisk = (records: AuditRecord[]) =>
  [...records].sort((a, b) => (b.risk ?? 0) - (a.risk ?? 0) || (a.task_id < b.task_id ? -1 : a.task_id > b.task_id ? 1 : 0));

/** A static page an auditor can read and filter: tasks riskiest first, with their stages, provenance, F2P tests, evidence and flags. */
export function htmlReport(records: AuditRecord[], tasks: Map<string, AuditedTask>, measured?: Measured, model?: RiskModel): string {
  const flagNames = [...new Set(records.flatMap((r) => r.flags.map((f) => f.flag)))].sort();
  const repos = [...new Set(records.map((r) => tasks.get(r.task_id)?.repo ?? ""))].sort();
  const counts = flagNames.map((f) => `${records.filter((r) => r.flags.some((x) => x.flag === f)).length} ${f.replaceAll("_", " ")}`);
  const cards = byRisk(records).map((record) => card(record, tasks.get(record.task_id)!, model));
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>switch-swe alignment audit</title><style>${STYLE}</style></head>
<body><header><h1>Requirement ↔ verifier alignment</h1>
<div class="summary">${records.length} tasks${records.some((r) => r.risk !== undefined) ? ", riskiest first" : ""} · ${records.reduce((n, r) => n + r.links.length, 0)} fail-to-pass tests · ${counts.join(" · ") || "no flags"} · showing <b id="shown">${records.length}</b></div>
<div class="filters"><label>flag <select id="flag"><option value="">all</option><option value="none">no flag</option>${flagNames.map((f) => `<option value="${f}">${f.replaceAll("_", " ")}</option>`).join("")}</select></label>
<label>repository <select id="repo"><option value="">all</option>${repos.map((r) => `<option>${esc(r)}</option>`).join("")}</select></label>
<label>search <input id="q" type="search" placeholder="task, test or text"></label></div></header>
<main>${agreementSection(measured)}${legend()}${cards.join("\n")}</main><script>${SCRIPT}</script></body></html>
`;
}
