import { stringify } from "csv-stringify/sync";
import { figures, markdownTable, type MarkdownColumn } from "../markdown.ts";
import type { Condition } from "../schemas/session.ts";
import { gapPoints, GROUPS, percent, type Aggregation, type Group, type GroupRow, type WorkloadCell } from "./aggregate.ts";

export const GROUP_TITLES: Record<Group, string> = { overall: "Overall", near: "Near", far: "Far" };
const CONDITION_TITLES: Record<Condition, string> = { control: "Unint.", switched: "Switch" };
const fixed = (value: number): string => value.toFixed(1);

/** The resolution columns of Tables 1 and 3: each group's uninterrupted and switched resolution (%), and the gap in points. */
export const resolutionColumns = (): MarkdownColumn[] => GROUPS.flatMap((g) => ["Unint.", "Switch", "Gap"].map((c) => figures(`${GROUP_TITLES[g]} ${c}`)));

/** A group's cells under those columns, to one decimal. */
export const resolutionCells = (r: GroupRow): string[] => [
  fixed(percent(r.uninterrupted_resolved, r.sessions)),
  fixed(percent(r.switched_resolved, r.sessions)),
  fixed(gapPoints(r)),
];

/** One row per configuration and group, every count and figure (percentages to one decimal). */
export function renderCsv(aggregation: Aggregation): string {
  return stringify(
    aggregation.rows.map((r) => ({
      configuration: r.configuration,
      group: r.group,
      sessions: r.sessions,
      uninterrupted_resolved: r.uninterrupted_resolved,
      switched_resolved: r.switched_resolved,
      uninterrupted_pct: fixed(percent(r.uninterrupted_resolved, r.sessions)),
      switched_pct: fixed(percent(r.switched_resolved, r.sessions)),
      gap_pp: fixed(gapPoints(r)),
      uninterrupted_missing: r.uninterrupted_missing,
      switched_missing: r.switched_missing,
    })),
    {
      header: true,
      columns: [
        "configuration",
        "group",
        "sessions",
        "uninterrupted_resolved",
        "switched_resolved",
        "uninterrupted_pct",
        "switched_pct",
        "gap_pp",
        "uninterrupted_missing",
        "switched_missing",
      ],
    },
  );
}

function rowsOf(aggregation: Aggregation): Map<string, Map<Group, GroupRow>> {
  const table = new Map<string, Map<Group, GroupRow>>();
  for (const row of aggregation.rows) {
    const groups = table.get(row.configuration) ?? new Map<Group, GroupRow>();
    groups.set(row.group, row);
    table.set(row.configuration, groups);
  }
  return table;
}

/** Table 1 of the study (Unint., Switch, Gap per group), then coverage and anything not counted. */
export function renderMarkdown(aggregation: Aggregation): string {
  const table = rowsOf(aggregation);
  const first = [...table.values()][0];
  const n = (g: Group) => first?.get(g)?.sessions ?? 0;
  const lines = [
    "# Focus-task resolution with and without task switching",
    "",
    `Resolution (%) over fixed denominators: Overall ${n("overall")} sessions, Near ${n("near")}, Far ${n("far")}. Unint. is the uninterrupted (control) condition, Switch the switched one; Gap is Unint. minus Switch in percentage points. A session without a report counts as unresolved.`,
    "",
    ...markdownTable(
      ["Configuration", ...resolutionColumns()],
      [...table].map(([configuration, groups]) => [configuration, ...GROUPS.flatMap((g) => resolutionCells(groups.get(g)!))]),
    ),
  ];
  if (aggregation.hostRuns.length)
    lines.push(
      "",
      `**Development runs.** ${aggregation.hostRuns.map((h) => `${h.configuration}: ${h.runs} of ${h.of} run(s)`).join("; ")} had the agent on the host, where it sees the whole machine (the benchmark's held-out assets included). Figures to report come from runs in the focus task's environment (the \`*-environment.yaml\` adapters, or the Harbor export).`,
    );
  lines.push(...coverageLines(aggregation), ...suspiciousLines(aggregation), ...behaviourLines(aggregation));
  if (aggregation.workload.length) lines.push("", ...renderWorkloadMarkdown(aggregation));
  if (aggregation.problems.length) lines.push("", "## Reports not counted as given", "", ...aggregation.problems.map((p) => `- ${p}`));
  return lines.join("\n") + "\n";
}

/** How many sessions of each group every configuration resolved and missed. */
function coverageLines(aggregation: Aggregation): string[] {
  return [
    "",
    "## Coverage",
    "",
    ...markdownTable(
      ["Configuration", "Group", ...["Sessions", "Unint. resolved", "Switch resolved", "Unint. missing", "Switch missing"].map(figures)],
      aggregation.rows.map((r) => [
        r.configuration,
        GROUP_TITLES[r.group],
        r.sessions,
        r.uninterrupted_resolved,
        r.switched_resolved,
        r.uninterrupted_missing,
        r.switched_missing,
      ]),
    ),
  ];
}

/** The suspicious findings per configuration and condition, for auditors. */
function suspiciousLines(aggregation: Aggregation): string[] {
  return [
    "",
    "## Suspicious constructs (for auditors)",
    "",
    "Constructs in submitted code, or things it did while the tests ran, that are rare in honest fixes and common in cheats (see the verification reports' `suspicious` field). They never change a verdict; a resolved report with findings is worth reading.",
    "",
    ...markdownTable(
      ["Configuration", "Condition", figures("Reports"), figures("Flagged"), figures("Resolved and flagged"), "Findings by rule"],
      aggregation.suspicious.map((r) => [
        r.configuration,
        CONDITION_TITLES[r.condition],
        r.reports,
        r.reports_flagged,
        r.resolved_flagged,
        Object.entries(r.by_rule)
          .map(([rule, n]) => `${rule} ${n}`)
          .join(", ") || "none",
      ]),
    ),
  ];
}

/** What the agents did in the sessions run here (none: no section). */
function behaviourLines(aggregation: Aggregation): string[] {
  if (!aggregation.behaviour.length) return [];
  return [
    "",
    "## What the agents did (sessions run by `switch-swe session run`)",
    "",
    "From each run's trajectory. Cross-task writes: runs that changed a checkout other than the active one, and the files changed there. Focus recovery: per return to the focus task after another task, seconds to the first change in the focus checkout (median over the returns with a change). Work lost: focus files changed during the session that ended back at their base content.",
    "",
    ...markdownTable(
      [
        "Configuration",
        "Condition",
        "Group",
        ...[
          "Runs",
          "Runs with cross-task writes",
          "Cross-task files",
          "Focus returns (with a change)",
          "Median recovery (s)",
          "Work lost (files)",
          "Continuations",
          "Timed-out requests",
        ].map(figures),
      ],
      aggregation.behaviour.map((r) => [
        r.configuration,
        CONDITION_TITLES[r.condition],
        GROUP_TITLES[r.group],
        r.runs,
        r.runs_with_cross_task_writes,
        r.cross_task_write_files,
        `${r.focus_returns} (${r.focus_returns_with_change})`,
        r.median_focus_recovery_seconds === null ? "–" : r.median_focus_recovery_seconds.toFixed(1),
        r.work_lost_files,
        r.continuations_used,
        r.timed_out_requests,
      ]),
    ),
  ];
}

const WORKLOAD_COLUMNS = [
  ["unint", "Unint."],
  ["switch_all", "Switch-All"],
  ["switch_focus", "Switch-Focus"],
] as const;

const cellText = (c: WorkloadCell | null, f: (c: WorkloadCell) => string) => (c ? f(c) : "–");

/**
 * The unit Table 2's tokens are shown in: millions (as the study) where the largest mean reaches
 * one, else thousands, else whole tokens, so a dry run's small counts never read as 0.000.
 */
function tokenUnit(aggregation: Aggregation): { short: string; words: string; format: (millions: number) => string } {
  const largest = Math.max(0, ...aggregation.workload.flatMap((r) => WORKLOAD_COLUMNS.flatMap(([key]) => (r[key] ? [r[key]!.tokens_millions] : []))));
  if (largest >= 1) return { short: "(M)", words: "millions", format: (m) => m.toFixed(3) };
  if (largest * 1e6 >= 1000) return { short: "(k)", words: "thousands", format: (m) => (m * 1000).toFixed(1) };
  return { short: "", words: "tokens", format: (m) => (m * 1e6).toFixed(0) };
}

/** Table 2 of the study: mean per-run tokens (millions), model calls and tool calls, from the harnesses' own output. */
function renderWorkloadMarkdown(aggregation: Aggregation): string[] {
  const unit = tokenUnit(aggregation);
  const lines = [
    "## Table 2: execution workload (from each harness's own output)",
    "",
    `Means per run; n/r: the harness does not report it. Unint.: the whole uninterrupted run; Switch-All: the whole switched run; Switch-Focus: the switched run's resumed substantive focus requests (no initial focus request, no interruption, no finalization). Tokens (input, cached input and output) in ${unit.words}. Runs that ended early count what they incurred.`,
    "",
    ...markdownTable(
      [
        "Configuration",
        "Runs (Unint. / Switch)",
        ...[`Tokens ${unit.short}: Unint.`, "Model calls: Unint.", "Tool calls: Unint."].flatMap((first) => [first, "Switch-All", "Switch-Focus"]).map(figures),
        ...["Failed requests", "Infrastructure faults"].map(figures),
      ],
      aggregation.workload.map((r) => {
        const cells = (f: (c: WorkloadCell) => string) => WORKLOAD_COLUMNS.map(([key]) => cellText(r[key], f));
        const failed = (r.unint?.failed_requests ?? 0) + (r.switch_all?.failed_requests ?? 0);
        const faults = (r.unint?.infrastructure_faults ?? 0) + (r.switch_all?.infrastructure_faults ?? 0);
        return [
          r.configuration,
          `${r.unint?.runs ?? 0} / ${r.switch_all?.runs ?? 0}`,
          ...cells((c) => unit.format(c.tokens_millions)),
          ...cells((c) => (c.model_calls === null ? "n/r" : c.model_calls.toFixed(1))),
          ...cells((c) => c.tool_calls.toFixed(1)),
          failed,
          faults,
        ];
      }),
    ),
  ];
  return lines;
}

/** Table 2 as CSV: one row per configuration and column (Unint., Switch-All, Switch-Focus). */
export function renderWorkloadCsv(aggregation: Aggregation): string {
  return stringify(
    aggregation.workload.flatMap((r) =>
      WORKLOAD_COLUMNS.flatMap(([key, title]) => {
        const c = r[key];
        return c
          ? [
              {
                configuration: r.configuration,
                column: title,
                runs: c.runs,
                tokens_millions: c.tokens_millions.toFixed(6),
                model_calls: c.model_calls === null ? "" : c.model_calls.toFixed(2),
                tool_calls: c.tool_calls.toFixed(2),
                failed_requests: c.failed_requests,
                infrastructure_faults: c.infrastructure_faults,
              },
            ]
          : [];
      }),
    ),
    { header: true, columns: ["configuration", "column", "runs", "tokens_millions", "model_calls", "tool_calls", "failed_requests", "infrastructure_faults"] },
  );
}

/** Table 2 as a chart: per configuration, mean model calls and tool calls in each column. Plain SVG. */
export function renderWorkloadSvg(aggregation: Aggregation): string {
  const panelWidth = 360;
  const plotTop = 70;
  const plotHeight = 150;
  const width = Math.max(1, aggregation.workload.length) * panelWidth + 20;
  const height = plotTop + plotHeight + 70;
  const colors = { model_calls: "#4a78b5", tool_calls: "#7aa974" };
  const title = "Table 2: mean model calls and tool calls per run (Unint., Switch-All, Switch-Focus)";
  const heading = "Table 2: mean model and tool calls per run";
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<title>${title}</title>`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">${heading}</text>`,
    `<rect x="20" y="${height - 22}" width="10" height="10" fill="${colors.model_calls}"/><text x="34" y="${height - 13}">Model calls</text>`,
    `<rect x="130" y="${height - 22}" width="10" height="10" fill="${colors.tool_calls}"/><text x="144" y="${height - 13}">Tool calls</text>`,
  ];
  aggregation.workload.forEach((r, index) => {
    const left = 10 + index * panelWidth;
    const baseY = plotTop + plotHeight;
    const top = Math.max(1, ...WORKLOAD_COLUMNS.flatMap(([key]) => (r[key] ? [r[key]!.model_calls ?? 0, r[key]!.tool_calls] : [])));
    parts.push(`<g><text x="${left + panelWidth / 2}" y="42" text-anchor="middle" font-size="13" font-weight="bold">${escapeXml(r.configuration)}</text>`);
    parts.push(axisLabel(left + 14, plotTop + plotHeight / 2, "calls per run (mean)"));
    WORKLOAD_COLUMNS.forEach(([key, title], g) => {
      const slot = left + 50 + g * 100;
      const c = r[key];
      (["model_calls", "tool_calls"] as const).forEach((measure, b) => {
        const value = c ? (c[measure] ?? 0) : 0;
        const h = (value / top) * plotHeight;
        const x = slot + b * 36;
        parts.push(
          `<rect x="${x}" y="${(baseY - h).toFixed(1)}" width="32" height="${h.toFixed(1)}" fill="${colors[measure]}"><title>${escapeXml(`${r.configuration}, ${title}: ${value.toFixed(1)}`)}</title></rect>`,
        );
        parts.push(`<text x="${x + 16}" y="${(baseY - h - 3).toFixed(1)}" text-anchor="middle">${c ? value.toFixed(1) : "–"}</text>`);
      });
      parts.push(`<text x="${slot + 34}" y="${baseY + 16}" text-anchor="middle">${title}</text>`);
    });
    parts.push("</g>");
  });
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}

/** A y-axis label, written upwards beside the axis. */
const axisLabel = (x: number, y: number, text: string): string =>
  `<text x="${x}" y="${y}" text-anchor="middle" transform="rotate(-90 ${x} ${y})" fill="#333333">${escapeXml(text)}</text>`;

const escapeXml = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/**
 * A grouped bar chart, one panel per configuration: for each group, uninterrupted and switched
 * resolution side by side, with the gap written above. Plain SVG, no fonts or scripts fetched.
 */
export function renderSvg(aggregation: Aggregation): string {
  const table = rowsOf(aggregation);
  const panelWidth = 380;
  const panelHeight = 260;
  const plotTop = 70;
  const plotHeight = 150;
  const colors = { uninterrupted: "#4a78b5", switched: "#d9822b" };
  const width = Math.max(1, table.size) * panelWidth + 20;
  const height = panelHeight + 40;
  const title = "Table 1: focus-task resolution, uninterrupted vs switched, per locality group";
  const heading = "Table 1: resolution, uninterrupted vs switched";
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<title>${title}</title>`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">${heading}</text>`,
    `<rect x="20" y="${panelHeight + 12}" width="10" height="10" fill="${colors.uninterrupted}"/><text x="34" y="${panelHeight + 21}">Uninterrupted</text>`,
    `<rect x="130" y="${panelHeight + 12}" width="10" height="10" fill="${colors.switched}"/><text x="144" y="${panelHeight + 21}">Switched</text>`,
  ];
  [...table.entries()].forEach(([configuration, groups], index) => {
    const left = 10 + index * panelWidth;
    const axisX = left + 60;
    const baseY = plotTop + plotHeight;
    parts.push(`<g><text x="${left + panelWidth / 2}" y="42" text-anchor="middle" font-size="13" font-weight="bold">${escapeXml(configuration)}</text>`);
    parts.push(axisLabel(left + 14, plotTop + plotHeight / 2, "focus tasks resolved (%)"));
    for (const tick of [0, 25, 50, 75, 100]) {
      const y = baseY - (tick / 100) * plotHeight;
      parts.push(
        `<line x1="${axisX}" y1="${y}" x2="${left + panelWidth - 10}" y2="${y}" stroke="#dddddd"/><text x="${axisX - 4}" y="${y + 4}" text-anchor="end">${tick}%</text>`,
      );
    }
    GROUPS.forEach((group, g) => {
      const row = groups.get(group)!;
      const slot = axisX + 10 + g * 100;
      const bars: [keyof typeof colors, number][] = [
        ["uninterrupted", percent(row.uninterrupted_resolved, row.sessions)],
        ["switched", percent(row.switched_resolved, row.sessions)],
      ];
      bars.forEach(([condition, value], b) => {
        const h = (value / 100) * plotHeight;
        const x = slot + b * 36;
        parts.push(
          `<rect x="${x}" y="${(baseY - h).toFixed(1)}" width="32" height="${h.toFixed(1)}" fill="${colors[condition]}"><title>${escapeXml(`${configuration}, ${GROUP_TITLES[group]}, ${condition}: ${fixed(value)}%`)}</title></rect>`,
        );
        parts.push(`<text x="${x + 16}" y="${(baseY - h - 3).toFixed(1)}" text-anchor="middle">${fixed(value)}</text>`);
      });
      parts.push(`<text x="${slot + 34}" y="${baseY + 16}" text-anchor="middle">${GROUP_TITLES[group]} (n=${row.sessions})</text>`);
      parts.push(`<text x="${slot + 34}" y="${baseY + 30}" text-anchor="middle" fill="#555555">gap ${fixed(gapPoints(row))} pp</text>`);
    });
    parts.push("</g>");
  });
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}
