import { describe, expect, it } from "vitest";
import type { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { benchmarkProfile, profileBesideStudy, switchedFigures } from "../../../stages/emit/profile.ts";
import { selectSessions } from "../../../stages/select/select.ts";
import { pool, specFor } from "../../helpers/session-pool.ts";

const tasks = pool(Array.from({ length: 30 }, (_, i) => ({ dir: ["pkg", "lib", "pkg/a"][i % 3]!, file: `f${i}.py`, stages: 2 + (i % 3), repo: "o/one" })));
const byId = new Map(tasks.map((t) => [t.id, t]));
const specs = (await selectSessions(tasks, { seed: "b", sizes: { near: 4, far: 4 }, interruptions: 4, minFocusStages: 2 })).sessions.map((s) =>
  specFor(s, byId),
);

/** `spec` with its switched schedule replaced by the one `labels` spell (`F1`: the focus's stage 1, `A2`: the first interruption's stage 2, `F`: finalization). */
function reordered(spec: SessionSpec, labels: string[]): SessionSpec {
  const taskOf = (letter: string) => (letter === "F" ? spec.focus : spec.interruptions[letter.charCodeAt(0) - "A".charCodeAt(0)]!);
  const checkout = (task: string) => spec.checkouts.find((c) => c.task_id === task)!.path;
  const switched = labels.map((label) => {
    const task = taskOf(label[0]!);
    const stage = label.length > 1 ? Number(label.slice(1)) : undefined;
    return {
      task_id: task,
      ...(stage ? { stage } : {}),
      finalization: stage === undefined,
      message: { repository: spec.repo, checkout: checkout(task), text: label },
    };
  });
  return { ...spec, conditions: { ...spec.conditions, switched } };
}

describe("the benchmark profile (SPEC §2.10)", () => {
  it("counts a switched session's requests, workspace switches and focus returns", () => {
    // F1 → A1 → F2 → B1 → A2 → F3 → finalization: five moves between checkouts, two returns to the focus.
    const spec = reordered(specs[0]!, ["F1", "A1", "F2", "B1", "A2", "F3", "F"]);
    expect(switchedFigures(spec)).toEqual({ requests: 7, workspace_switches: 5, focus_returns: 2 });
    // Two requests of one task in a row are no switch; the finalization is no return.
    expect(switchedFigures(reordered(spec, ["F1", "A1", "A2", "F2", "F"]))).toEqual({ requests: 5, workspace_switches: 2, focus_returns: 1 });
  });

  it("takes the medians over the sessions, the middle two's mean for an even count", () => {
    const three = [
      reordered(specs[0]!, ["F1", "A1", "F2", "F"]),
      reordered(specs[1]!, ["F1", "A1", "B1", "F2", "C1", "F3", "F"]),
      reordered(specs[2]!, ["F1", "A1", "F2", "B1", "F3", "C1", "F4", "F"]),
    ];
    expect(benchmarkProfile(three)).toMatchObject({ median_requests: 7, median_workspace_switches: 5, median_focus_returns: 2 });
    expect(benchmarkProfile(three.slice(0, 2))).toMatchObject({ median_requests: 5.5, median_workspace_switches: 3.5, median_focus_returns: 1.5 });
  });

  it("counts the focus tasks, repositories and sessions of each locality of what select and schedule made", () => {
    const profile = benchmarkProfile(specs);
    expect(profile).toMatchObject({ repositories: 1, interruptions_per_session: 4, focus_tasks: specs.length });
    expect(profile.sessions).toEqual({ near: specs.filter((s) => s.locality === "near").length, far: specs.filter((s) => s.locality === "far").length });
    expect(profile.sessions.near + profile.sessions.far).toBe(specs.length);
    expect(profile.median_requests).toBeGreaterThan(profile.median_focus_returns);
    // Beside the study's Table 6, one row a figure.
    const lines = profileBesideStudy(profile);
    expect(lines[0]).toMatch(/^benchmark profile\s+this\s+the study \(Table 6\)$/);
    expect(lines.find((l) => l.startsWith("repositories"))).toMatch(/^repositories\s+1\s+19$/);
  });
});
