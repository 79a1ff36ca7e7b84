import { relative } from "node:path";
import type { AuditMeasurements, MeasuredPrecision } from "../../pipeline/schemas/audit.ts";
import type { GateDescription } from "./gate.ts";
import { precisionText } from "./measured.ts";
import { gateText, RULES } from "./rules/registry.ts";

/**
 * The parts of the auditors' page that are not tasks: what excludes a task in this run (the
 * reasons in force), how the figures on the page were measured, and the rules' page (each rule's
 * gate and measured precision).
 */

export function esc(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

export function htmlTable(columns: string[], rows: string[][], cls = ""): string {
  const head = columns.map((c) => `<th>${esc(c)}</th>`).join("");
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join("")}</tr>`).join("");
  return `<table${cls ? ` class="${cls}"` : ""}><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

export const STYLE = `
:root{--ink:#1d2330;--muted:#5f6b7a;--line:#e3e7ee;--bg:#f6f7fa;--accent:#2f5fd0;--warn:#b5470b;--ok:#2e7d4f}
*{box-sizing:border-box}body{margin:0;font:15px/1.5 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--ink);background:var(--bg)}
header{position:sticky;top:0;z-index:1;background:#fff;border-bottom:1px solid var(--line);padding:14px 28px}
h1{font-size:20px;margin:0 0 6px}.summary{color:var(--muted);font-size:14px}
.filters{display:flex;gap:12px;margin-top:10px;flex-wrap:wrap}.filters label{font-size:13px;color:var(--muted)}
select,input{font:inherit;padding:4px 8px;border:1px solid var(--line);border-radius:6px;background:#fff}
main{max-width:1100px;margin:20px auto;padding:0 20px}
h2.part{font-size:17px;margin:26px 0 10px}
article{background:#fff;border:1px solid var(--line);border-radius:10px;margin-bottom:14px;padding:14px 18px}
article h3{font-size:16px;margin:0;display:flex;gap:10px;align-items:center;flex-wrap:wrap}
.repo{color:var(--muted);font-weight:400;font-size:13px}
.sev{font-size:12px;padding:1px 8px;border-radius:10px;background:#eef2fb;color:var(--muted)}.sev2,.sev3{background:#fdebd9;color:var(--warn);font-weight:600}
.line{font-size:12px;margin:2px 0 0 4px;color:var(--ink)}.line .where{color:var(--muted)}.line code{background:var(--bg);padding:0 4px;border-radius:4px;white-space:pre-wrap}
.box{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 18px;margin-bottom:14px}.box td,.box th{text-align:left}
.flag{font-size:12px;padding:1px 8px;border-radius:10px;background:#fdebd9;color:var(--warn)}
.clean{font-size:12px;padding:1px 8px;border-radius:10px;background:#e3f3e9;color:var(--ok)}
.decision,.measured,.gate{font-size:12px;color:var(--muted)}.excluded{font-size:13px;color:var(--warn);margin-top:6px}
.risk{font-size:12px;padding:1px 8px;border-radius:10px;background:#eef2fb;color:var(--ink);font-weight:600}.shares{font-size:12px;color:var(--muted);margin-top:4px}.shares .up{color:var(--warn)}.shares .down{color:var(--ok)}
.legend td:first-child{font-family:ui-monospace,Menlo,monospace;white-space:nowrap}
ol.stages{padding-left:22px}ol.stages li{margin:8px 0}
.text{white-space:pre-wrap;background:var(--bg);border-radius:6px;padding:8px 10px;font-size:14px}
.prov{font-size:12px;color:var(--muted);margin-top:4px}.prov a{color:var(--accent);text-decoration:none;margin-right:8px}
table{border-collapse:collapse;width:100%;font-size:13px;margin-top:8px}th,td{border-top:1px solid var(--line);padding:5px 6px;text-align:left;vertical-align:top}
td.test{font-family:ui-monospace,Menlo,monospace;word-break:break-all}.token{font-family:ui-monospace,Menlo,monospace;background:#eef2fb;border-radius:4px;padding:0 4px;margin-right:4px}
tr.unjustified td{background:#fff6ef}.stage{font-size:11px;color:var(--muted);margin-right:4px}ul.flags{margin:8px 0 0;padding-left:18px;color:var(--warn);font-size:13px}
details>summary{cursor:pointer;color:var(--muted);font-size:13px;margin-top:8px}code.cmd{display:block;background:var(--bg);padding:6px 8px;border-radius:6px;white-space:pre-wrap;font-size:12px}
`;

export const SCRIPT = `
const flag=document.getElementById('flag'),repo=document.getElementById('repo'),q=document.getElementById('q'),shown=document.getElementById('shown');
function apply(){let n=0;for(const a of document.querySelectorAll('article')){const ok=(!flag.value||a.dataset.flags.split(' ').includes(flag.value)||(flag.value==='none'&&!a.dataset.flags))&&(!repo.value||a.dataset.repo===repo.value)&&(!q.value||a.textContent.toLowerCase().includes(q.value.toLowerCase()));a.hidden=!ok;if(ok)n++}shown.textContent=n}
for(const el of [flag,repo,q])el.addEventListener('input',apply);apply();
`;

/** A measured precision against its base rate, in words. */
const against = (m: MeasuredPrecision, base: number) => `${precisionText(m)}; base rate ${base.toFixed(2)}`;

/** What excludes a task in this run, said before any task: the page states the reasons in force and nothing else excludes. */
export function gateSection(gate: GateDescription, counts: { imported: number; local: number }): string {
  const link = (file: string) => {
    const path = relative(gate.decisions.reportDir, file) || file;
    return `<a href="${esc(path)}"><code>${esc(file)}</code></a>`;
  };
  const list = (flags: string[]) => (flags.length ? flags.map((f) => `<code>${esc(f)}</code>`).join(", ") : "none");
  const inForce = gate.inForce.length
    ? gate.inForce
        .map(
          (f) =>
            `<li><code>${esc(f.name)}</code> (${esc(f.gate)}${f.gate === "at severity" ? ` ${gate.excludeAtSeverity}` : ""}): precision ${esc(against(f.precision, f.base_rate))}, on ${f.measured.records.length} records of ${esc(f.measured.records_file)} nobody here read</li>`,
        )
        .join("")
    : "<li>none: no rule, and no model judge, is shown to be right on records its author did not read</li>";
  return `<section class="box" id="gate"><h2 class="part">What excludes a task here</h2><ol>
<li>A human decision: an auditor's, in ${link(gate.decisions.local)} (${counts.local} here; it covers the whole task), or one imported from annotations${gate.decisions.imported.length ? ` (${gate.decisions.imported.map(link).join(", ")}; ${counts.imported} here)` : " (none imported)"}, which covers the upstream stage.</li>
<li>A hard finding anyone can check in the files: on an upstream stage ${list(gate.hard.upstream)}; on a benchmark-authored stage ${list(gate.hard.authored)}.</li>
<li>A rule or judge a config put in force on a measurement out of sample:<ul>${inForce}</ul></li>
</ol><p class="summary">The risk only ranks the tasks nobody has decided, for an auditor to read: it never excludes a task.</p>
<p class="summary">To record a verdict: <code class="cmd">npx switch-swe audit decide -c CONFIG --task ID --verdict approve|exclude --auditor NAME --reason "…"</code> or edit ${link(gate.decisions.local)}.</p></section>`;
}

/** How the figures on the page were measured: the triage, the risk's agreement, the gate's exclusions, each with its method. */
export function figuresSection(m: AuditMeasurements | undefined): string {
  if (!m) return "";
  const triage = m.triage
    .map(
      (t) =>
        `<li>${esc(t.scheme)} (${esc(t.method)}): reading riskiest first, ${t.read} of ${t.of} tasks (${((100 * t.read) / t.of).toFixed(0)} %) find ${t.found} of the ${t.unfair} unfair ones; a random order needs ${t.random.toFixed(1)} (${((100 * t.random) / t.of).toFixed(0)} %)</li>`,
    )
    .join("");
  const rows = m.agreement.map((a) => [
    a.scope,
    a.method,
    String(a.records),
    a.kappa === null ? "—" : a.kappa.toFixed(2),
    a.auc === null ? "—" : a.auc.toFixed(2),
    a.flagged_of_score0,
    a.flagged_of_score3,
  ]);
  const base = m.scored_2_or_more / m.annotated;
  return `<section class="box" id="figures"><h2 class="part">How the figures here were measured</h2>
<p class="summary">Against the ${m.annotated} annotated records of ${esc(m.records_file)} (${m.scored_2_or_more} scored <code>false_negative</code> 2 or more: base rate ${base.toFixed(2)}). Every rule, the risk's features and the judge's prompt were written by people who read these records: figures "in sample" flatter the audit, "cross-validated on the given records" flatter it less, and only "unseen" records show what to expect; those are measured elsewhere (docs/AUDITING.md).</p>
<p><b>Tasks to read to find half of the unfair ones</b>, in the order of this page:</p><ul>${triage}</ul>
<p><b>The gate shipped</b>, with no decision: it excludes ${m.gate.fired} of the ${m.annotated} (${m.gate.zeros_excluded} of the ${m.gate.zeros} scored 0); precision ${esc(against(m.gate, base))}.</p>
<details><summary>The risk's bands against the annotators (flagged: severity 2 or more)</summary>${htmlTable(["scope", "measured", "records", "kappa", "AUC of risk", "flagged of scored 0", "flagged of scored 3"], rows)}</details></section>`;
}

/** The rules' page: what each asks, its gate, and its precision as measured. */
export function rulesSection(m: AuditMeasurements | undefined, inForce: GateDescription["inForce"]): string {
  const rows = RULES.map((r) => {
    const measured = m?.rules[r.flag];
    const force = inForce.find((f) => f.name === r.flag);
    return [
      r.flag,
      r.scope,
      force ? `${force.gate} (in force by the config)` : gateText(r.gate),
      measured ? precisionText(measured) : "never fired on the annotated records",
      force ? against(force.precision, force.base_rate) : "—",
      r.asks,
    ];
  });
  return `<details class="box" id="rules"><summary>The rules: what each asks, its gate, and its precision as measured</summary>${htmlTable(
    ["flag", "scope", "gate", "precision [95 % Wilson] on the annotated records, measured", "measurement in force (records nobody here read)", "asks"],
    rows,
    "legend",
  )}</details>`;
}
