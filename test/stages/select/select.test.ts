import { describe, expect, it } from "vitest";
import { selectSessions, type AnswerRuleView, type SelectOptions } from "../../../stages/select/select.ts";
import { validateSession } from "../../../stages/validate/validate.ts";
import { PATHS, pool, specFor } from "../../helpers/session-pool.ts";

describe("seeded draws", () => {
  it("gives the same sessions for the same seed and other, still valid ones for another seed", async () => {
    const tasks = pool(Array.from({ length: 30 }, (_, i) => ({ dir: ["pkg", "lib", "pkg/a"][i % 3]!, file: `f${i}.py`, stages: 2 + (i % 3), repo: "o/one" })));
    const byId = new Map(tasks.map((t) => [t.id, t]));
    const run = async (seed: string) =>
      (await selectSessions(tasks, { seed, sizes: { near: 4, far: 4 }, interruptions: 4, minFocusStages: 2 })).sessions.map((s) => specFor(s, byId));
    expect(JSON.stringify(await run("a"))).toBe(JSON.stringify(await run("a")));
    const other = await run("b");
    expect(JSON.stringify(other)).not.toBe(JSON.stringify(await run("a")));
    for (const spec of other) expect(validateSession(spec, new Map(tasks.map((t) => [t.id, t])), PATHS, 4).every((c) => c.passed)).toBe(true);
  });

  it("draws a focus's interruptions from its own case seed: another repository's tasks change none of them", async () => {
    const one = pool(Array.from({ length: 16 }, (_, i) => ({ dir: ["pkg", "lib"][i % 2]!, file: `f${i}.py`, stages: 3, repo: "o/one" })));
    const two = pool(Array.from({ length: 24 }, (_, i) => ({ dir: ["pkg", "lib"][i % 2]!, file: `f${i}.py`, stages: 3, repo: "o/two" })));
    const options: SelectOptions = { seed: "s", sizes: { near: 3, far: 3 }, interruptions: 4, minFocusStages: 2 };
    const alone = new Map((await selectSessions(one, options)).sessions.map((s) => [s.focus, s.interruptions]));
    const both = (await selectSessions([...one, ...two], options)).sessions.filter((s) => s.repo === "o/one");
    const shared = both.filter((s) => alone.has(s.focus));
    expect(shared.length).toBeGreaterThan(0);
    for (const s of shared) expect(s.interruptions, s.focus).toEqual(alone.get(s.focus));
  });
});

/**
 * The answer rule as select applies it (SPEC §2.7), over what the answers stage measured: a focus
 * `o__one-1` of three stages and seven candidate interruptions of two, each in a directory of its
 * own (all far from the focus).
 */
describe("the answer rule in the draw", () => {
  const FOCUS = "o__one-1";
  const tasks = pool(Array.from({ length: 8 }, (_, i) => ({ dir: `d${i}`, file: "x.py", stages: i === 0 ? 3 : 2, repo: "o/one" })));
  const options: SelectOptions = { seed: "rule", sizes: { near: 0, far: 1 }, interruptions: 4, minFocusStages: 3 };
  /** `held` lists [task, checkout task]: the checkout task's base holds the task's answer. */
  const view = (held: [string, string][], more: Partial<AnswerRuleView> = {}): AnswerRuleView => {
    const pairs = new Set(held.map(([task, checkout]) => `${task}>${checkout}`));
    return { holds: (task, checkout) => pairs.has(`${task}>${checkout}`), why: (task, checkout) => `${checkout} holds ${task}`, exclusive: false, ...more };
  };
  const ids = (n: number[]) => n.map((i) => `o__one-${i}`);
  const sorted = (list: readonly string[]) => [...list].sort();

  it("keeps out every interruption whose checkout holds the focus's answer, saying why", async () => {
    const holding = ids([2, 3, 4]);
    const result = await selectSessions(tasks, options, view(holding.map((c) => [FOCUS, c])));
    expect(result.sessions).toHaveLength(1);
    expect(sorted(result.sessions[0]!.interruptions)).toEqual(ids([5, 6, 7, 8]));
    expect(result.sessions[0]!.derived_checkouts).toEqual([]);
    expect(sorted(result.exclusions.map((e) => e.task))).toEqual(holding);
    for (const e of result.exclusions)
      expect(e).toEqual({ focus: FOCUS, group: "far", task: e.task, reason: "holds_focus_answer", detail: `${e.task} holds ${FOCUS}` });
  });

  it("skips a focus the rule leaves too few interruptions, naming what it kept out", async () => {
    const result = await selectSessions(tasks, options, view(ids([2, 3, 4, 5]).map((c) => [FOCUS, c])));
    expect(result.sessions).toEqual([]);
    expect(result.skipped).toEqual([
      {
        focus: FOCUS,
        group: "far",
        reason: expect.stringMatching(
          /^only 3 eligible far interruption\(s\) of 1 request\(s\) or more can be used; 4 needed; the answer rule kept out 4: o__one-\d \(o__one-\d holds o__one-1\)/,
        ),
      },
    ]);
  });

  it("with the revert strategy, reverts only as many as the clean ones lack, and takes none whose revert is not viable", async () => {
    const holding = ids([2, 3, 4, 5, 6]);
    const asked: string[] = [];
    const revert: AnswerRuleView["revert"] = async (focus, candidate) => {
      asked.push(candidate);
      // The first revert asked for fails: the draw must go on to the next.
      return asked.length === 1 ? { ok: false, reason: `${focus}'s fix conflicts in ${candidate}` } : { ok: true, commit: candidate.slice(-1).repeat(40) };
    };
    const result = await selectSessions(
      tasks,
      options,
      view(
        holding.map((c) => [FOCUS, c]),
        { revert },
      ),
    );
    const session = result.sessions[0]!;
    // The two clean candidates, then two reverted ones: three reverts asked, one of them refused.
    expect(sorted(session.interruptions)).toEqual(sorted([...ids([7, 8]), ...asked.slice(1)]));
    expect(asked).toHaveLength(3);
    expect(session.derived_checkouts).toEqual(asked.slice(1).map((task) => ({ task_id: task, without: [FOCUS], commit: task.slice(-1).repeat(40) })));
    expect(result.exclusions.find((e) => e.task === asked[0])).toMatchObject({
      reason: "revert_not_viable",
      detail: `${FOCUS}'s fix conflicts in ${asked[0]}`,
    });
    const untried = holding.filter((t) => !asked.includes(t));
    expect(sorted(result.exclusions.filter((e) => e.reason === "holds_focus_answer").map((e) => e.task))).toEqual(untried);
    // Enough clean candidates: nothing is reverted.
    asked.length = 0;
    await selectSessions(
      tasks,
      options,
      view(
        ids([2, 3]).map((c) => [FOCUS, c]),
        { revert },
      ),
    );
    expect(asked).toEqual([]);
  });

  it("prefers interruptions open at the same time as the focus, reports the others' answers in its checkout, and keeps them out when told to", async () => {
    // The focus's base holds the answers of five candidates (finished before it): two remain open with it.
    const finished = ids([2, 3, 4, 5, 6]);
    const held = finished.map((t): [string, string] => [t, FOCUS]);
    const reported = (await selectSessions(tasks, options, view(held))).sessions[0]!;
    expect(reported.interruptions.filter((t) => !finished.includes(t)).sort()).toEqual(ids([7, 8]));
    expect(reported.interruption_answers).toEqual(
      reported.interruptions.filter((t) => finished.includes(t)).map((t) => ({ task_id: t, checkout_task: FOCUS })),
    );
    expect(reported.interruption_answers).toHaveLength(2);
    const excluded = await selectSessions(tasks, options, view(held, { exclusive: true }));
    expect(excluded.sessions).toEqual([]);
    expect(sorted(excluded.exclusions.map((e) => e.task))).toEqual(finished);
    expect(
      excluded.exclusions.every((e) => e.reason === "answers_cross" && e.detail === `${FOCUS}'s checkout holds its answer: ${FOCUS} holds ${e.task}`),
    ).toBe(true);
  });
});
