import type { SessionSpec } from "../../pipeline/schemas/session.ts";
import { sessionFigures } from "../../pipeline/session/figures.ts";

function median(values: number[]): number {
  if (!values.length) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Per-session figures of the switched condition (SPEC §2.10). */
export function switchedFigures(spec: SessionSpec) {
  const checkoutOf = new Map(spec.checkouts.map((c) => [c.task_id, c.path]));
  return sessionFigures(
    spec.conditions.switched.map((r) => ({ task: r.task_id, stage: r.stage, finalization: r.finalization })),
    (t) => checkoutOf.get(t)!,
    spec.focus,
  );
}

/**
 * The benchmark profile: focus tasks, repositories, interruptions per session, and the medians
 * over switched sessions of requests (finalization included), workspace switches and focus returns.
 */
export function benchmarkProfile(specs: SessionSpec[]) {
  const figures = specs.map(switchedFigures);
  return {
    focus_tasks: new Set(specs.map((s) => s.focus)).size,
    repositories: new Set(specs.map((s) => s.repo)).size,
    interruptions_per_session: median(specs.map((s) => s.interruptions.length)),
    median_requests: median(figures.map((f) => f.requests)),
    median_workspace_switches: median(figures.map((f) => f.workspace_switches)),
    median_focus_returns: median(figures.map((f) => f.focus_returns)),
    sessions: { near: specs.filter((s) => s.locality === "near").length, far: specs.filter((s) => s.locality === "far").length },
  };
}

/** The study's own profile (its Table 6): 200 focus tasks, 19 repositories, 4 interruptions, and the switched sessions' medians. */
export const STUDY_PROFILE = {
  focus_tasks: 200,
  repositories: 19,
  interruptions_per_session: 4,
  median_requests: 22,
  median_workspace_switches: 15,
  median_focus_returns: 3,
};

/** The profile beside the study's Table 6, as lines a maintainer reads after a run. */
export function profileBesideStudy(profile: ReturnType<typeof benchmarkProfile>): string[] {
  const rows: [string, keyof typeof STUDY_PROFILE][] = [
    ["focus tasks", "focus_tasks"],
    ["repositories", "repositories"],
    ["interruption tasks per session", "interruptions_per_session"],
    ["requests (median, switched)", "median_requests"],
    ["workspace switches (median, switched)", "median_workspace_switches"],
    ["focus returns (median, switched)", "median_focus_returns"],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return [
    `${"benchmark profile".padEnd(width)}  this  the study (Table 6)`,
    ...rows.map(([label, key]) => `${label.padEnd(width)}  ${String(profile[key]).padStart(4)}  ${String(STUDY_PROFILE[key]).padStart(4)}`),
  ];
}
