import type { RoutingDecisions } from "../schemas/agent.ts";
import type { LocalityClass } from "../schemas/common.ts";
import { Condition } from "../schemas/session.ts";
import type { VerificationReport } from "../schemas/verification.ts";
import { addRouting } from "../session/usage.ts";

/** A session of the benchmark, as far as scoring needs it: which group it counts in. */
export interface ScoredSession {
  session_id: string;
  focus: string;
  locality: LocalityClass;
}

/** A verification report and the file it came from, under one configuration (an agent and model). */
export interface LoadedReport {
  file: string;
  configuration: string;
  report: VerificationReport;
}

export const GROUPS = ["overall", "near", "far"] as const;
export type Group = (typeof GROUPS)[number];

export interface GroupRow {
  configuration: string;
  group: Group;
  /** The fixed denominator: every session of the group, whether or not a report came in. */
  sessions: number;
  uninterrupted_resolved: number;
  switched_resolved: number;
  uninterrupted_missing: number;
  switched_missing: number;
}

/** Suspicious findings (hints for auditors, never verdicts) of one configuration and condition. */
export interface SuspiciousRow {
  configuration: string;
  condition: Condition;
  /** Reports counted (of sessions of this benchmark, for their focus task). */
  reports: number;
  /** Of those, reports with at least one finding, and resolved reports with one. */
  reports_flagged: number;
  resolved_flagged: number;
  /** Findings per rule, summed over the reports. */
  by_rule: Record<string, number>;
}

/**
 * What agents did during sessions run by `switch-swe session run` (reports carrying `behaviour`),
 * per configuration, condition and group: the recovery costs and cross-task errors the study
 * discusses beside resolution.
 */
export interface BehaviourRow {
  configuration: string;
  condition: Condition;
  group: Group;
  /** Reports with a behaviour record. */
  runs: number;
  /** Runs with at least one write to a checkout other than the active one, and all such files. */
  runs_with_cross_task_writes: number;
  cross_task_write_files: number;
  /** Focus returns measured, those with a focus change, and the median seconds to it (null: none). */
  focus_returns: number;
  focus_returns_with_change: number;
  median_focus_recovery_seconds: number | null;
  work_lost_files: number;
  continuations_used: number;
  timed_out_requests: number;
  /** A context manager's routing decisions, by kind, over the runs that logged some (null: none did). */
  routing: RoutingDecisions | null;
}

/** One column of Table 2: means per run of what the harness reported, over the runs that reported usage. */
export interface WorkloadCell {
  runs: number;
  /** Processed tokens (input, cached input and output) per run, in millions. */
  tokens_millions: number;
  /** Null when the harness does not report model calls. */
  model_calls: number | null;
  tool_calls: number;
  /** Over those runs: requests that failed, and runs ended by an infrastructure fault. */
  failed_requests: number;
  infrastructure_faults: number;
}

/**
 * Table 2 of the study, per configuration: Unint. (the whole uninterrupted run), Switch-All (the
 * whole switched run) and Switch-Focus (the switched run's resumed substantive focus requests).
 */
export interface WorkloadRow {
  configuration: string;
  unint: WorkloadCell | null;
  switch_all: WorkloadCell | null;
  switch_focus: WorkloadCell | null;
}

export interface Aggregation {
  rows: GroupRow[];
  suspicious: SuspiciousRow[];
  behaviour: BehaviourRow[];
  workload: WorkloadRow[];
  /** Reports that were not counted, or were counted conservatively, and why. */
  problems: string[];
  /** Configurations with runs of their agent on the host: development runs, not results to report (SPEC §2.7). */
  hostRuns: { configuration: string; runs: number; of: number }[];
}

/** The suspicious findings of the counted reports, per configuration and condition. */
function suspiciousRows(configurations: readonly string[], seen: Map<string, Map<string, Map<string, LoadedReport[]>>>): SuspiciousRow[] {
  const suspicious: SuspiciousRow[] = [];
  for (const configuration of configurations) {
    for (const condition of Condition.options) {
      const counted = [...(seen.get(configuration)?.values() ?? [])].flatMap((byCondition) => byCondition.get(condition) ?? []);
      const row: SuspiciousRow = { configuration, condition, reports: counted.length, reports_flagged: 0, resolved_flagged: 0, by_rule: {} };
      for (const { report } of counted) {
        if (!report.suspicious.length) continue;
        row.reports_flagged++;
        if (report.resolved) row.resolved_flagged++;
        for (const finding of report.suspicious) row.by_rule[finding.rule] = (row.by_rule[finding.rule] ?? 0) + 1;
      }
      row.by_rule = Object.fromEntries(Object.entries(row.by_rule).sort(([a], [b]) => (a < b ? -1 : 1)));
      suspicious.push(row);
    }
  }
  return suspicious;
}

/** Each configuration with runs of its agent on the host, and how many of its runs. */
function hostRunsOf(configurations: readonly string[], reports: readonly LoadedReport[]): Aggregation["hostRuns"] {
  return configurations
    .map((configuration) => {
      const mine = reports.filter((r) => r.configuration === configuration);
      return { configuration, runs: mine.filter((r) => r.report.behaviour?.agent_runs === "host").length, of: mine.length };
    })
    .filter((h) => h.runs > 0);
}

/** Resolution in percent over the group's fixed denominator. */
export const percent = (resolved: number, sessions: number): number => (sessions === 0 ? 0 : (100 * resolved) / sessions);
/** Uninterrupted minus switched resolution, in percentage points. */
export const gapPoints = (row: GroupRow): number => percent(row.uninterrupted_resolved, row.sessions) - percent(row.switched_resolved, row.sessions);

/**
 * Table 1 of the study from verification reports (SPEC §3): for each configuration and group
 * (overall, near, far), uninterrupted ("control") and switched resolution over the group's fixed
 * denominator. A session with no report for a condition counts as unresolved there; a report for
 * an unknown session or for another task than the session's focus is not counted; two reports for
 * one session and condition count as resolved only if both are.
 */
export function aggregateResults(sessions: readonly ScoredSession[], reports: readonly LoadedReport[]): Aggregation {
  const problems: string[] = [];
  const byId = new Map(sessions.map((s) => [s.session_id, s]));
  const configurations = [...new Set(reports.map((r) => r.configuration))].sort();
  // configuration → session → condition → reports
  const seen = new Map<string, Map<string, Map<string, LoadedReport[]>>>();
  for (const loaded of reports) {
    const { report } = loaded;
    const session = byId.get(report.session_id);
    if (!session) {
      problems.push(`${loaded.file}: field session_id: ${report.session_id} is not a session of this benchmark; not counted`);
      continue;
    }
    if (report.task_id !== session.focus) {
      problems.push(`${loaded.file}: field task_id: ${report.task_id} is not the focus task of ${report.session_id} (${session.focus}); not counted`);
      continue;
    }
    const bySession = seen.get(loaded.configuration) ?? new Map<string, Map<string, LoadedReport[]>>();
    seen.set(loaded.configuration, bySession);
    const byCondition = bySession.get(report.session_id) ?? new Map<string, LoadedReport[]>();
    bySession.set(report.session_id, byCondition);
    byCondition.set(report.condition, [...(byCondition.get(report.condition) ?? []), loaded]);
  }
  const rows: GroupRow[] = [];
  const suspicious = suspiciousRows(configurations, seen);
  for (const configuration of configurations) {
    const bySession = seen.get(configuration) ?? new Map();
    const outcome = (sessionId: string, condition: Condition): "resolved" | "unresolved" | "missing" => {
      const found: LoadedReport[] = bySession.get(sessionId)?.get(condition) ?? [];
      if (!found.length) return "missing";
      if (found.length > 1) {
        problems.push(
          `${configuration}: ${found.length} ${condition} reports for ${sessionId} (${found.map((f) => f.file).join(", ")}); counted as resolved only if all are`,
        );
      }
      return found.every((f) => f.report.resolved) ? "resolved" : "unresolved";
    };
    for (const group of GROUPS) {
      const members = sessions.filter((s) => group === "overall" || s.locality === group);
      const row: GroupRow = {
        configuration,
        group,
        sessions: members.length,
        uninterrupted_resolved: 0,
        switched_resolved: 0,
        uninterrupted_missing: 0,
        switched_missing: 0,
      };
      for (const s of members) {
        const control = outcome(s.session_id, "control");
        const switched = outcome(s.session_id, "switched");
        if (control === "resolved") row.uninterrupted_resolved++;
        if (control === "missing") row.uninterrupted_missing++;
        if (switched === "resolved") row.switched_resolved++;
        if (switched === "missing") row.switched_missing++;
      }
      rows.push(row);
    }
  }
  // A duplicate is found once per group it belongs to; say it once.
  const behaviour = behaviourRows(sessions, configurations, seen);
  return {
    rows,
    suspicious,
    behaviour,
    workload: workloadRows(sessions, configurations, seen),
    problems: [...new Set(problems)],
    hostRuns: hostRunsOf(configurations, reports),
  };
}

const median = (values: number[]): number | null => {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

function behaviourRows(
  sessions: readonly ScoredSession[],
  configurations: string[],
  seen: Map<string, Map<string, Map<string, LoadedReport[]>>>,
): BehaviourRow[] {
  const rows: BehaviourRow[] = [];
  for (const configuration of configurations) {
    for (const condition of Condition.options) {
      for (const group of GROUPS) {
        const members = sessions.filter((s) => group === "overall" || s.locality === group);
        const records = members
          .flatMap((s) => seen.get(configuration)?.get(s.session_id)?.get(condition) ?? [])
          .flatMap((l) => (l.report.behaviour ? [l.report.behaviour] : []));
        if (!records.length) continue;
        const recoveries = records.flatMap((b) => b.focus_recovery_seconds);
        const measured = recoveries.filter((v): v is number => v !== null);
        rows.push({
          configuration,
          condition,
          group,
          runs: records.length,
          runs_with_cross_task_writes: records.filter((b) => b.cross_task_write_requests > 0).length,
          cross_task_write_files: records.reduce((n, b) => n + b.cross_task_write_files, 0),
          focus_returns: recoveries.length,
          focus_returns_with_change: measured.length,
          median_focus_recovery_seconds: median(measured),
          work_lost_files: records.reduce((n, b) => n + b.work_lost_files, 0),
          continuations_used: records.reduce((n, b) => n + b.continuations_used, 0),
          timed_out_requests: records.reduce((n, b) => n + b.timed_out_requests, 0),
          routing: records.reduce<RoutingDecisions | null>((sum, b) => addRouting(sum, b.routing), null),
        });
      }
    }
  }
  return rows;
}

type Behaviour = NonNullable<VerificationReport["behaviour"]>;

function workloadCell(records: Behaviour[], part: "all" | "focus_resumed"): WorkloadCell | null {
  const measured = records.filter((b) => b.usage);
  if (!measured.length) return null;
  const mean = (f: (b: Behaviour) => number) => measured.reduce((n, b) => n + f(b), 0) / measured.length;
  return {
    runs: measured.length,
    tokens_millions: mean((b) => (b.usage![part].input_tokens + (b.usage![part].cached_input_tokens ?? 0) + b.usage![part].output_tokens) / 1e6),
    model_calls: measured.some((b) => b.usage![part].model_calls === null) ? null : mean((b) => b.usage![part].model_calls!),
    tool_calls: mean((b) => b.usage![part].tool_calls),
    failed_requests: measured.reduce((n, b) => n + b.failed_requests, 0),
    infrastructure_faults: measured.filter((b) => b.infrastructure_fault).length,
  };
}

/** Table 2 rows, over every session of the benchmark a configuration ran with a usage reader. */
function workloadRows(
  sessions: readonly ScoredSession[],
  configurations: string[],
  seen: Map<string, Map<string, Map<string, LoadedReport[]>>>,
): WorkloadRow[] {
  const rows: WorkloadRow[] = [];
  for (const configuration of configurations) {
    const of = (condition: Condition) =>
      sessions
        .flatMap((s) => seen.get(configuration)?.get(s.session_id)?.get(condition) ?? [])
        .flatMap((l) => (l.report.behaviour ? [l.report.behaviour] : []));
    const row: WorkloadRow = {
      configuration,
      unint: workloadCell(of("control"), "all"),
      switch_all: workloadCell(of("switched"), "all"),
      switch_focus: workloadCell(of("switched"), "focus_resumed"),
    };
    if (row.unint || row.switch_all) rows.push(row);
  }
  return rows;
}
