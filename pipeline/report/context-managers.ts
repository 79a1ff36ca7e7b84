/**
 * Table 3 of the study: native OpenCode, +Router and +RCM, each with uninterrupted and switched
 * resolution and the gap, overall, near and far, from one run per configuration; the workload
 * each adds (Table 2's means, the context manager's auxiliary calls included); and how each
 * method's requests were routed (by the checkout a request names, by the router model, or by
 * fallback), so that figures routed by reference are not read as the study's model-based router.
 */
import { stringify } from "csv-stringify/sync";
import type { RoutingDecisions } from "../schemas/agent.ts";
import { addRouting } from "../session/usage.ts";
import { figures, markdownTable } from "../markdown.ts";
import { gapPoints, GROUPS, percent, type Aggregation, type Group, type GroupRow, type WorkloadRow } from "./aggregate.ts";
import { GROUP_TITLES, resolutionCells, resolutionColumns } from "./render.ts";

export const METHODS = ["native", "router", "rcm"] as const;
export type Method = (typeof METHODS)[number];
const METHOD_TITLES: Record<Method, string> = { native: "Native", router: "+Router", rcm: "+RCM" };

/** Which configuration (results subdirectory) holds each method's run. */
export type ContextManagerRuns = Record<Method, string>;

/**
 * The configurations of Table 3: the ones named (native, router, rcm, in that order), else a
 * harness's three the shipped adapters make (HARNESS, HARNESS-router, HARNESS-rcm, or their
 * -environment variants) when all three are in the results: OpenCode's (the study's) first, then
 * the others by name (Claude Code's and Codex CLI's, through the relay); undefined when there are none.
 */
export function contextManagerRuns(configurations: string[], named?: string[]): ContextManagerRuns | undefined {
  if (named) return { native: named[0]!, router: named[1]!, rcm: named[2]! };
  const trios = configurations.flatMap((name) => {
    const match = /^(.+)-rcm(-environment)?$/.exec(name);
    if (!match) return [];
    const [, harness, environment = ""] = match;
    const runs = { native: `${harness}${environment}`, router: `${harness}-router${environment}`, rcm: name };
    return configurations.includes(runs.native) && configurations.includes(runs.router) ? [runs] : [];
  });
  const rank = (runs: ContextManagerRuns) => `${runs.native.startsWith("opencode") ? 0 : 1}${runs.native}`;
  return trios.sort((x, y) => (rank(x) < rank(y) ? -1 : 1))[0];
}

export interface ContextManagerTable {
  runs: ContextManagerRuns;
  rows: { method: Method; group: Group; row: GroupRow }[];
  workload: { method: Method; row: WorkloadRow | undefined }[];
  /** Each method's routing decisions over all its runs, both conditions (null: its runs logged none, as native runs do). */
  routing: { method: Method; decisions: RoutingDecisions | null }[];
}

/** Table 3 from an aggregation; an error naming the configuration when one of the three has no reports. */
export function contextManagerTable(aggregation: Aggregation, runs: ContextManagerRuns): ContextManagerTable {
  const rows = METHODS.flatMap((method) =>
    GROUPS.map((group) => {
      const row = aggregation.rows.find((r) => r.configuration === runs[method] && r.group === group);
      if (!row) throw new Error(`Table 3: no verification reports under the configuration ${runs[method]} (${METHOD_TITLES[method]})`);
      return { method, group, row };
    }),
  );
  const routing = METHODS.map((method) => ({
    method,
    decisions: aggregation.behaviour
      .filter((b) => b.configuration === runs[method] && b.group === "overall")
      .reduce<RoutingDecisions | null>((sum, b) => addRouting(sum, b.routing), null),
  }));
  return { runs, rows, workload: METHODS.map((method) => ({ method, row: aggregation.workload.find((w) => w.configuration === runs[method]) })), routing };
}

const ROUTING_KINDS = ["reference", "router", "fallback"] as const;

/** A kind's share of a method's decisions, in percent ("" when it made none). */
function routingShare(decisions: RoutingDecisions | null, kind: (typeof ROUTING_KINDS)[number]): string {
  const all = decisions ? decisions.reference + decisions.router + decisions.fallback : 0;
  return decisions && all ? fixed(percent(decisions[kind], all)) : "";
}

function routingLines(table: ContextManagerTable): string[] {
  const lines = [
    "",
    "How requests were routed (each method's routing decisions over all its runs, both conditions, from the context manager's log): by reference (the checkout a request names decides, no model call), by the router model, or by fallback (no usable answer: the full history).",
    "",
    ...markdownTable(
      ["Method", ...["Decisions", "By reference (%)", "By router model (%)", "Fallback (%)"].map(figures)],
      table.routing.map(({ method, decisions }) => [
        METHOD_TITLES[method],
        decisions ? decisions.reference + decisions.router + decisions.fallback : "–",
        ...ROUTING_KINDS.map((k) => routingShare(decisions, k) || "–"),
      ]),
    ),
  ];
  const managed = table.routing.filter((r) => r.method !== "native");
  const unrouted = managed.filter((r) => r.decisions?.router === 0).map((r) => METHOD_TITLES[r.method]);
  const unlogged = managed.filter((r) => !r.decisions).map((r) => METHOD_TITLES[r.method]);
  if (unrouted.length)
    lines.push("", `No request of ${unrouted.join(" or ")} was routed by the router model: these figures do not measure a model-based router.`);
  if (unlogged.length) lines.push("", `The runs of ${unlogged.join(" and ")} logged no routing decision: how their requests were routed is not known.`);
  return lines;
}

const fixed = (value: number) => value.toFixed(1);

export function renderContextManagerMarkdown(table: ContextManagerTable): string[] {
  const cells = (method: Method, group: Group) => resolutionCells(table.rows.find((x) => x.method === method && x.group === group)!.row);
  const n = (group: Group) => table.rows.find((x) => x.group === group)!.row.sessions;
  const lines = [
    "## Table 3: context management (native, +Router, +RCM)",
    "",
    `Resolution (%) of one run per method: ${METHODS.map((m) => `${METHOD_TITLES[m]} = ${table.runs[m]}`).join(", ")}. Overall ${n("overall")} sessions, Near ${n("near")}, Far ${n("far")}; Gap is Unint. minus Switch in percentage points.`,
    "",
    ...markdownTable(
      ["Method", ...resolutionColumns()],
      METHODS.map((m) => [METHOD_TITLES[m], ...GROUPS.flatMap((g) => cells(m, g))]),
    ),
  ];
  if (table.workload.some((w) => w.row)) {
    lines.push(
      "",
      "Workload per run (means, auxiliary routing and memory calls included, from the harness's output and the context manager's usage log):",
      "",
      ...markdownTable(
        ["Method", ...["Model calls: Unint.", "Switch-All", "Tokens: Unint.", "Switch-All"].map(figures)],
        table.workload.map(({ method, row }) => {
          const calls = (c: WorkloadRow["unint"] | undefined) => (c?.model_calls == null ? "–" : c.model_calls.toFixed(1));
          const tokens = (c: WorkloadRow["unint"] | undefined) => (c ? String(Math.round(c.tokens_millions * 1e6)) : "–");
          return [METHOD_TITLES[method], calls(row?.unint), calls(row?.switch_all), tokens(row?.unint), tokens(row?.switch_all)];
        }),
      ),
    );
  }
  return [...lines, ...routingLines(table)];
}

/** A method's routing columns: its decisions over all its runs, and each kind's share. */
function routingColumns(decisions: RoutingDecisions | null) {
  return {
    routing_decisions: decisions ? String(decisions.reference + decisions.router + decisions.fallback) : "",
    routed_by_reference_pct: routingShare(decisions, "reference"),
    routed_by_router_pct: routingShare(decisions, "router"),
    routed_by_fallback_pct: routingShare(decisions, "fallback"),
  };
}

export function renderContextManagerCsv(table: ContextManagerTable): string {
  return stringify(
    table.rows.map(({ method, group, row }) => ({
      method: METHOD_TITLES[method],
      configuration: row.configuration,
      group,
      sessions: row.sessions,
      uninterrupted_pct: fixed(percent(row.uninterrupted_resolved, row.sessions)),
      switched_pct: fixed(percent(row.switched_resolved, row.sessions)),
      gap_pp: fixed(gapPoints(row)),
      model_calls_unint: table.workload.find((w) => w.method === method)?.row?.unint?.model_calls?.toFixed(2) ?? "",
      model_calls_switch: table.workload.find((w) => w.method === method)?.row?.switch_all?.model_calls?.toFixed(2) ?? "",
      ...routingColumns(table.routing.find((r) => r.method === method)!.decisions),
    })),
    {
      header: true,
      columns: [
        "method",
        "configuration",
        "group",
        "sessions",
        "uninterrupted_pct",
        "switched_pct",
        "gap_pp",
        "model_calls_unint",
        "model_calls_switch",
        "routing_decisions",
        "routed_by_reference_pct",
        "routed_by_router_pct",
        "routed_by_fallback_pct",
      ],
    },
  );
}

const escapeXml = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** Table 3 as a chart: per group, each method's uninterrupted and switched resolution side by side. Plain SVG. */
export function renderContextManagerSvg(table: ContextManagerTable): string {
  const plotTop = 60;
  const plotHeight = 160;
  const groupWidth = 250;
  const width = 80 + GROUPS.length * groupWidth;
  const height = plotTop + plotHeight + 80;
  const baseY = plotTop + plotHeight;
  const colors: Record<Method, [string, string]> = { native: ["#9fb8d9", "#4a78b5"], router: ["#f2c89b", "#d9822b"], rcm: ["#b9dab2", "#4f9a45"] };
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    "<title>Table 3: resolution of native OpenCode, +Router and +RCM, uninterrupted (light) and switched (dark), per locality group</title>",
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">Table 3: context management, uninterrupted (light) vs switched (dark)</text>`,
  ];
  for (const tick of [0, 25, 50, 75, 100]) {
    const y = baseY - (tick / 100) * plotHeight;
    parts.push(`<line x1="60" y1="${y}" x2="${width - 10}" y2="${y}" stroke="#dddddd"/><text x="56" y="${y + 4}" text-anchor="end">${tick}%</text>`);
  }
  GROUPS.forEach((group, g) => {
    const left = 70 + g * groupWidth;
    METHODS.forEach((method, m) => {
      const row = table.rows.find((x) => x.method === method && x.group === group)!.row;
      [percent(row.uninterrupted_resolved, row.sessions), percent(row.switched_resolved, row.sessions)].forEach((value, b) => {
        const h = (value / 100) * plotHeight;
        const x = left + m * 76 + b * 34;
        parts.push(
          `<rect x="${x}" y="${(baseY - h).toFixed(1)}" width="30" height="${h.toFixed(1)}" fill="${colors[method][b]}"><title>${escapeXml(`${METHOD_TITLES[method]}, ${GROUP_TITLES[group]}, ${b ? "switched" : "uninterrupted"}: ${fixed(value)}%`)}</title></rect>`,
          `<text x="${x + 15}" y="${(baseY - h - 3).toFixed(1)}" text-anchor="middle">${fixed(value)}</text>`,
        );
      });
      parts.push(`<text x="${left + m * 76 + 32}" y="${baseY + 16}" text-anchor="middle">${METHOD_TITLES[method]}</text>`);
    });
    const n = table.rows.find((x) => x.group === group)!.row.sessions;
    parts.push(`<text x="${left + 110}" y="${baseY + 36}" text-anchor="middle" font-weight="bold">${GROUP_TITLES[group]} (n=${n})</text>`);
  });
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}
