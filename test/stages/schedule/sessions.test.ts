import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { parentDir } from "../../../stages/split/split.ts";
import { buildSchedules, sessionSpec } from "../../../stages/schedule/schedule.ts";
import { selectSessions, type SelectableTask } from "../../../stages/select/select.ts";
import { benchmarkProfile } from "../../../stages/emit/profile.ts";
import { validateSession } from "../../../stages/validate/validate.ts";
import { quoteCheck } from "../../../stages/validate/answers.ts";
import type { HeldoutTask } from "../../../pipeline/schemas/heldout.ts";

const PATHS = ["/workspace/w00", "/workspace/w01", "/workspace/w02", "/workspace/w03", "/workspace/w04"];

/** A session spec as the schedule stage builds it, from synthetic tasks. */
function specFor(session: Awaited<ReturnType<typeof selectSessions>>["sessions"][number], tasks: Map<string, SelectableTask>): SessionSpec {
  return sessionSpec({
    session,
    benchmark: "t",
    seed: "s",
    task: (id) => ({ stages: tasks.get(id)!.stages, baseCommit: "0".repeat(40) }),
    text: (s) => (s.finalization ? "Finish." : `${s.task} stage ${s.stage}`),
    checkoutPaths: PATHS,
    budget: { per_request_seconds: 900, timeout_continuations: 3 },
  });
}

const taskArb = fc.record({
  dir: fc.constantFrom("pkg", "pkg/a", "pkg/b", "lib", "."),
  file: fc.constantFrom("x.py", "y.py", "z.py", "w.py"),
  extra: fc.option(fc.constantFrom("pkg/c/q.py", "lib/r.py", "s.py"), { nil: undefined }),
  stages: fc.integer({ min: 1, max: 5 }),
  repo: fc.constantFrom("o/one", "o/two"),
});

function pool(entries: { dir: string; file: string; extra?: string; stages: number; repo: string }[]): SelectableTask[] {
  return entries.map((e, i) => {
    const files = [...new Set([e.dir === "." ? e.file : `${e.dir}/${e.file}`, ...(e.extra ? [e.extra] : [])])].sort();
    return {
      id: `${e.repo.replace("/", "__")}-${i + 1}`,
      repo: e.repo,
      sourceFiles: files,
      sourceDirs: [...new Set(files.map(parentDir))].sort(),
      stages: e.stages,
    };
  });
}

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

  it("gives the same sessions for the same seed and other, still valid ones for another seed", async () => {
    const tasks = pool(Array.from({ length: 30 }, (_, i) => ({ dir: ["pkg", "lib", "pkg/a"][i % 3]!, file: `f${i}.py`, stages: 2 + (i % 3), repo: "o/one" })));
    const byId = new Map(tasks.map((t) => [t.id, t]));
    const run = async (seed: string) =>
      (await selectSessions(tasks, { seed, sizes: { near: 4, far: 4 }, interruptions: 4, minFocusStages: 2 })).sessions.map((s) => specFor(s, byId));
    expect(JSON.stringify(await run("a"))).toBe(JSON.stringify(await run("a")));
    const other = await run("b");
    expect(JSON.stringify(other)).not.toBe(JSON.stringify(await run("a")));
    for (const spec of other) expect(validateSession(spec, new Map(tasks.map((t) => [t.id, t])), PATHS, 4).every((c) => c.passed)).toBe(true);
    expect(benchmarkProfile(other)).toMatchObject({ repositories: 1, interruptions_per_session: 4 });
  });
});

const validationPool = pool(Array.from({ length: 12 }, (_, i) => ({ dir: ["pkg", "lib"][i % 2]!, file: `f${i}.py`, stages: 3, repo: "o/one" })));
const validationSession = (await selectSessions(validationPool, { seed: "v", sizes: { near: 1, far: 0 }, interruptions: 4, minFocusStages: 2 })).sessions[0]!;

describe("validation catches every kind of broken session", () => {
  const tasks = validationPool;
  const others = pool([{ dir: "pkg", file: "f0.py", stages: 3, repo: "o/two" }]).map((t) => ({ ...t, id: "o__two-99" }));
  const session = validationSession;
  // A task of the same repository that modifies the focus's own files: never eligible with it.
  const overlapping = { ...tasks.find((t) => t.id === session.focus)!, id: "o__one-98" };
  const all = new Map([...tasks, ...others, overlapping].map((t) => [t.id, t]));
  const good = specFor(session, all);
  const failing = (mutate: (s: SessionSpec) => void) => {
    const spec = structuredClone(good);
    mutate(spec);
    return validateSession(spec, all, PATHS, 4)
      .filter((c) => !c.passed)
      .map((c) => c.check);
  };
  it("accepts the unbroken session", () => expect(failing(() => {})).toEqual([]));
  it.each<[string, (s: SessionSpec) => void]>([
    ["projection", (s) => (s.conditions.switched.find((r) => r.task_id === s.focus)!.message.text = "changed")],
    [
      "switched_task_order",
      (s) => {
        const i = s.conditions.switched.findIndex((r) => r.task_id === s.interruptions[0] && r.stage === 1);
        s.conditions.switched[i]!.stage = 9;
      },
    ],
    ["switched_finalization_last", (s) => s.conditions.switched.push({ ...s.conditions.switched[1]! })],
    ["interruptions", (s) => s.interruptions.pop()],
    ["same_repository", (s) => (s.interruptions[0] = "o__two-99")],
    ["disjoint_files", (s) => (s.interruptions[0] = "o__one-98")],
    ["locality", (s) => (s.locality = s.locality === "near" ? "far" : "near")],
    ["switched_checkouts", (s) => (s.conditions.switched[1]!.message.checkout = "/workspace/elsewhere")],
    ["switched_messages", (s) => ((s.conditions.switched[1]!.message as Record<string, unknown>).label = "interruption")],
    // every request of one interruption moved into the first gap: it is never resumed
    [
      "interruptions_resumed",
      (s) => {
        const moved = s.conditions.switched.filter((r) => r.task_id === s.interruptions[0]);
        const rest = s.conditions.switched.filter((r) => r.task_id !== s.interruptions[0]);
        s.conditions.switched = [rest[0]!, ...moved, ...rest.slice(1)];
      },
    ],
    [
      "focus_returns",
      (s) => {
        const focus = s.conditions.switched.filter((r) => r.task_id === s.focus);
        s.conditions.switched = [...focus.slice(0, -1), ...s.conditions.switched.filter((r) => r.task_id !== s.focus), focus.at(-1)!];
      },
    ],
  ])("%s", (check, mutate) => {
    expect(failing(mutate)).toContain(check);
  });
});

describe("validation refuses a message that quotes its task's reference", () => {
  const reference =
    "diff --git a/pkg/f0.py b/pkg/f0.py\n--- a/pkg/f0.py\n+++ b/pkg/f0.py\n@@ -1 +1,3 @@\n-x = 1\n+total = sum(values) / len(values)\n+return round(total, precision)\n";
  const spec = (text: string) => {
    const s = specFor(validationSession, new Map(validationPool.map((t) => [t.id, t])));
    for (const r of s.conditions.switched) if (r.task_id === s.focus && r.stage === 1) r.message.text = text;
    return s;
  };
  const heldout = new Map([[validationSession.focus, { implementation_patch: reference } as HeldoutTask]]);
  const requests = (approved: boolean) =>
    new Map([
      [
        validationSession.focus,
        [
          {
            stage: 1,
            text: "",
            provenance: {
              sources: [{ kind: "issue" as const, record_id: "1", author: "a" }],
              ...(approved ? { quote_approved: { reviewer: "r", reason: "the user's API", file: "c.yaml" } } : {}),
            },
          },
        ],
      ],
    ]);
  it("two reference lines, with other spacing and a comment: refused naming the task and stage, unless a curation file approved it", () => {
    const quoting = spec("Please make mean() use:\n    total = sum(values)/len(values)  # this\n    return round(total,precision)\n");
    const refused = quoteCheck(quoting, heldout, requests(false));
    expect(refused).toMatchObject({ check: "no_reference_quotes", passed: false });
    expect(refused.detail).toContain(`${validationSession.focus} stage 1 quotes 2 lines of its reference implementation`);
    expect(quoteCheck(quoting, heldout, requests(true)).passed).toBe(true);
    // One line, in prose, is no quote.
    expect(quoteCheck(spec("It should divide by `len(values)` as in total = sum(values) / len(values)."), heldout, requests(false)).passed).toBe(true);
  });
});
