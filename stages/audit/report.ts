import { stringify } from "csv-stringify/sync";
import type { AuditRecord } from "../../pipeline/schemas/audit.ts";
import type { Request } from "../../pipeline/schemas/task.ts";
import type { Agreement, KindAgreement } from "./agreement.ts";

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

/** A static page an auditor can read and filter: per task its stages, provenance, F2P tests, evidence and flags. */
export function htmlReport(records: AuditRecord[], tasks: Map<string, AuditedTask>, agreements: Agreement[] = [], kinds: KindAgreement[] = []): string {
  const flagNames = [...new Set(records.flatMap((r) => r.flags.map((f) => f.flag)))].sort();
  const repos = [...new Set(records.map((r) => tasks.get(r.task_id)?.repo ?? ""))].sort();
  const counts = flagNames.map((f) => `${records.filter((r) => r.flags.some((x) => x.flag === f)).length} ${f.replaceAll("_", " ")}`);
  const cards = records.map((record) => {
    const task = tasks.get(record.task_id)!;
    const flags = [...new Set(record.flags.map((f) => f.flag))];
    const stages = task.requests
      .map((r) => {
        const links = r.provenance.sources
          .map((s) =>
            s.url
              ? `<a href="${esc(s.url)}" data-record="${esc(s.record_id)}">${esc(s.kind)} ${esc(s.record_id)}</a>`
              : `<span>${esc(s.kind)} ${esc(s.record_id)}</span>`,
          )
          .join("");
        const curated = r.provenance.curation
          ? ` · curated (${esc(r.provenance.curation.action)} by ${esc(r.provenance.curation.reviewer)}: ${esc(r.provenance.curation.reason)})`
          : "";
        return `<li><div class="text">${esc(r.text)}</div><div class="prov">${links}${curated}</div></li>`;
      })
      .join("");
    const rows = record.links
      .map((l) => {
        const unjustified = record.flags.some((f) => f.flag === "unjustified_test" && f.subject === l.test);
        const byStage = new Map<number, string[]>();
        for (const e of l.evidence) byStage.set(e.stage, [...(byStage.get(e.stage) ?? []), e.token]);
        const evidence = [...byStage]
          .map(
            ([stage, tokens]) => `<div><span class="stage">stage ${stage}</span> ${tokens.map((t) => `<span class="token">${esc(t)}</span>`).join("")}</div>`,
          )
          .join("");
        return `<tr class="${unjustified ? "unjustified" : ""}"><td class="test">${esc(l.test)}</td><td>${l.stages.join(", ") || "—"}</td><td>${evidence || (l.public_contract ? `contract: ${esc(l.public_contract)}` : "—")}</td></tr>`;
      })
      .join("");
    const flagList = record.flags.length
      ? `<ul class="flags">${record.flags
          .map(
            (f) =>
              `<li><b>${esc(f.flag.replaceAll("_", " "))}</b> (${f.severity}) — ${esc(f.subject)}: ${esc(f.detail)}${f.evidence
                .map((e) => `<div class="line"><span class="where">${esc(e.file)}:${e.line}</span> <code>${esc(e.text)}</code></div>`)
                .join("")}</li>`,
          )
          .join("")}</ul>`
      : "";
    const decision = record.decision
      ? `<span class="decision">${esc(record.decision.verdict)} by ${esc(record.decision.auditor)}: ${esc(record.decision.reason)}</span>`
      : "";
    return `<article id="${esc(record.task_id)}" data-repo="${esc(task.repo)}" data-severity="${record.severity}" data-flags="${esc(flags.join(" "))}">
<h2>${esc(record.task_id)} <span class="repo">${esc(task.repo)} @ ${esc(task.base_commit.slice(0, 12))}</span><span class="sev sev${record.severity}">severity ${record.severity}</span>${flags.length ? flags.map((f) => `<span class="flag">${esc(f.replaceAll("_", " "))}</span>`).join("") : `<span class="clean">aligned</span>`}${decision}</h2>${flagList}
<ol class="stages">${stages}</ol>
<details${record.flags.length ? " open" : ""}><summary>${record.links.length} fail-to-pass test(s) and their evidence</summary><table><thead><tr><th>test</th><th>justified by stage</th><th>evidence</th></tr></thead><tbody>${rows}</tbody></table></details>
</article>`;
  });
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>switch-swe alignment audit</title><style>${STYLE}</style></head>
<body><header><h1>Requirement ↔ verifier alignment</h1>
<div class="summary">${records.length} tasks · ${records.reduce((n, r) => n + r.links.length, 0)} fail-to-pass tests · ${counts.join(" · ") || "no flags"} · showing <b id="shown">${records.length}</b></div>
<div class="filters"><label>flag <select id="flag"><option value="">all</option><option value="none">no flag</option>${flagNames.map((f) => `<option value="${f}">${f.replaceAll("_", " ")}</option>`).join("")}</select></label>
<label>repository <select id="repo"><option value="">all</option>${repos.map((r) => `<option>${esc(r)}</option>`).join("")}</select></label>
<label>search <input id="q" type="search" placeholder="task, test or text"></label></div></header>
<main>${agreementTable(agreements, kinds)}${cards.join("\n")}</main><script>${SCRIPT}</script></body></html>
`;
}

const fixed = (x: number | null, digits = 2) => (x === null ? "—" : x.toFixed(digits));

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
  "flagged of scored 0",
  "flagged of scored 3",
];

function htmlTable(columns: string[], rows: string[][]): string {
  const head = columns.map((c) => `<th>${esc(c)}</th>`).join("");
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join("")}</tr>`).join("");
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function agreementTable(agreements: Agreement[], kinds: KindAgreement[]): string {
  if (!agreements.length) return "";
  return `<section class="agreement"><h2>Agreement with human annotations</h2><p class="summary">Flagged: severity ≥ 2 against <code>false_negative</code> ≥ 2; weighted kappa: severity against the 0–3 score (quadratic weights).</p>${htmlTable(
    AGREEMENT_COLUMNS,
    agreementRows(agreements),
  )}${kinds.length ? `<p class="summary">Records carrying each flag kind, by the annotators' score:</p>${htmlTable(KIND_COLUMNS, kindRows(kinds))}` : ""}</section>`;
}

const markdownTable = (columns: string[], rows: string[][]) =>
  [`| ${columns.join(" | ")} |`, `| ${columns.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n") + "\n";

export const KIND_COLUMNS = ["flag kind", "scored 0", "scored 1", "scored 2", "scored 3", "share scored 2+"];

export function kindRows(kinds: KindAgreement[]): string[][] {
  return kinds.map((k) => [k.kind, ...k.by_score.map(String), fixed(k.precision)]);
}

/** The agreement as Markdown tables (the report's agreement.md, docs/AUDITING.md): per repository, then per flag kind. */
export function agreementMarkdown(agreements: Agreement[], kinds: KindAgreement[] = []): string {
  const parts = [markdownTable(AGREEMENT_COLUMNS, agreementRows(agreements))];
  if (kinds.length) parts.push(`Records carrying each flag kind, by the annotators' score:\n\n${markdownTable(KIND_COLUMNS, kindRows(kinds))}`);
  return parts.join("\n");
}

/** Per record its severity and flags with their evidence: the machine-readable verdict. */
export function auditJson(records: AuditRecord[], agreements: Agreement[], kinds: KindAgreement[] = []): string {
  return (
    JSON.stringify(
      {
        records: records.map((r) => ({
          instance_id: r.task_id,
          severity: r.severity,
          source: r.source,
          flags: r.flags.map((f) => ({ kind: f.flag, test: f.subject, severity: f.severity, detail: f.detail, evidence: f.evidence })),
        })),
        ...(agreements.length ? { agreement: agreements, flag_kinds: kinds } : {}),
      },
      null,
      2,
    ) + "\n"
  );
}
