import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildSchedules } from "../../../stages/schedule/schedule.ts";
import { selectSessions } from "../../../stages/select/select.ts";
import { validateSession } from "../../../stages/validate/validate.ts";
import { PATHS, pool, specFor, taskArb } from "../../helpers/session-pool.ts";

describe("schedules", () => {
  it("never break an invariant, whatever the pool, focus shape and seed", async () => {
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(taskArb, { minLength: 6, maxLength: 40 }), fc.string({ minLength: 1, maxLength: 8 }), async (entries, seed) => {
        const tasks = pool(entries);
        const byId = new Map(tasks.map((t) => [t.id, t]));
        const { sessions } = await selectSessions(tasks, { seed, sizes: { near: 5, far: 5 }, interruptions: 4, minFocusStages: 2 });
        for (const session of sessions) {
          checked++;
          const spec = specFor(session, byId);
          const failed = validateSession(spec, new Map(tasks.map((t) => [t.id, t])), PATHS, 4).filter((c) => !c.passed);
          expect(failed, JSON.stringify(spec.conditions.switched.map((r) => `${r.task_id}:${r.stage ?? "F"}`))).toEqual([]);
          // every interruption with two or more requests in a schedule with two or more gaps is resumed
          // (validate checks it too: this says it without validate's own code)
          const gaps = byId.get(session.focus)!.stages - 1;
          for (const id of session.interruptions) {
            const positions = spec.conditions.switched.map((r, i) => (r.task_id === id ? i : -1)).filter((i) => i >= 0);
            const focusBetween =
              positions.length >= 2 && spec.conditions.switched.slice(positions[0], positions.at(-1)).some((r) => r.task_id === session.focus);
            if (gaps >= 2 && byId.get(id)!.stages >= 2) expect(focusBetween, `${id} in ${session.focus}`).toBe(true);
          }
          // interruptions of two requests or more are taken first
          const singles = session.interruptions.filter((id) => byId.get(id)!.stages < 2).length;
          expect(session.single_request_interruptions).toBe(singles);
        }
        expect(new Set(sessions.map((s) => s.focus)).size).toBe(sessions.length);
      }),
      { numRuns: 150 },
    );
    // the property must have had sessions to check, not only pools too small for any
    expect(checked).toBeGreaterThan(150);
  });

  it("follows SPEC's example shape for a three-stage focus", () => {
    const r = buildSchedules({ focus: { id: "A", stages: 3 }, interruptions: ["B", "C", "D", "E"].map((id) => ({ id, stages: 2 })), caseSeed: "spec" });
    const labels = r.switched.map((s) => (s.finalization ? "A_submit" : `${s.task}${s.stage}`));
    expect(labels[0]).toBe("A1");
    expect(labels.at(-2)).toBe("A3");
    expect(labels.at(-1)).toBe("A_submit");
    expect(r.control.map((s) => (s.finalization ? "A_submit" : `${s.task}${s.stage}`))).toEqual(["A1", "A2", "A3", "A_submit"]);
  });
});
