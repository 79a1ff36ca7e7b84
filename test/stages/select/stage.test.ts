import { describe, expect, it } from "vitest";
import { formatSummary } from "../../../pipeline/engine/engine.ts";
import type { AnswerExposure } from "../../../pipeline/schemas/answers.ts";
import type { SelectedSession } from "../../../pipeline/schemas/selection.ts";
import { selectStage } from "../../../stages/select/index.ts";
import { runStageOver, type GivenArtifacts } from "../../helpers/given-artifacts.ts";
import { heldoutRecord, taskRecord } from "../../helpers/task-records.ts";
import { tempDir } from "../../helpers/tmp.ts";

/**
 * The select stage over the answers stage's measurements (SPEC §2.7), with the chronology
 * strategy: eight tasks of o/r, each in a directory of its own (all far from each other); o__r-1
 * and o__r-2 have three requests (focus candidates), the others two.
 */
const id = (n: number) => `o__r-${n}`;
const tasks = Array.from({ length: 8 }, (_, i) => taskRecord({ id: id(i + 1), repo: "o/r", files: [`d${i + 1}/m.py`], stages: i < 2 ? 3 : 2 }));
const FIX = "f".repeat(40);

/** Every ordered pair measured, no checkout holding another's answer, but for `held` ([task, checkout task]) and the pairs `unmeasured`. */
function exposures(held: [number, number][], unmeasured: [number, number][]): AnswerExposure[] {
  const key = (a: number, b: number) => `${a}>${b}`;
  const heldKeys = new Set(held.map(([a, b]) => key(a, b)));
  const missing = new Set(unmeasured.map(([a, b]) => key(a, b)));
  return tasks.flatMap((_, a) =>
    tasks.flatMap((__, b) => {
      if (a === b || missing.has(key(a + 1, b + 1))) return [];
      const isHeld = heldKeys.has(key(a + 1, b + 1));
      return [{ task_id: id(a + 1), checkout_task: id(b + 1), held: isHeld, evidence: isHeld ? [{ by: "history" as const, commit: FIX }] : [] }];
    }),
  );
}

// o__r-1's answer is in o__r-3's base, and nobody measured o__r-4's; o__r-2's is in four bases, which leaves it three interruptions.
const GIVEN: GivenArtifacts = {
  oracle: { tasks, heldout: tasks.map(heldoutRecord) },
  split: { splits: [] },
  answers: {
    exposures: exposures(
      [
        [1, 3],
        [2, 1],
        [2, 3],
        [2, 4],
        [2, 5],
      ],
      [[1, 4]],
    ),
  },
};

const select = (dir: string, config: object) => runStageOver(selectStage, GIVEN, { dir, config: { near: 0, min_focus_stages: 3, ...config }, seed: "7" });

describe("the select stage", () => {
  it("keeps out an interruption whose base holds the focus's answer, and one nobody measured, and says so", async () => {
    const { summary, read } = await select(tempDir(), { far: 1 });
    const stage = summary.stages.find((s) => s.stage === "select")!;
    expect(stage.status, formatSummary(summary)).toBe("ran");
    const sessions = read("select", "sessions") as SelectedSession[];
    expect(sessions).toHaveLength(1);
    const [session] = sessions;
    expect(session!.focus).toBe(id(1));
    expect(session!.interruptions).toHaveLength(4);
    expect(session!.interruptions.filter((t) => t === id(3) || t === id(4))).toEqual([]);
    expect(session!.interruption_answers).toEqual([]);
    const exclusions = read("select", "exclusions") as { focus: string }[];
    expect(exclusions.filter((e) => e.focus === id(1))).toEqual([
      { focus: id(1), group: "far", task: id(3), reason: "holds_focus_answer", detail: `its base descends from the fix ${FIX.slice(0, 12)}` },
      { focus: id(1), group: "far", task: id(4), reason: "holds_focus_answer", detail: "the answers stage did not measure this pair" },
    ]);
    // Every exclusion is counted, o__r-2's too if it was tried as a focus first.
    const foci = new Set(exclusions.map((e) => e.focus)).size;
    expect(stage.notes).toContainEqual(
      expect.stringContaining(
        `answer rule (chronology): ${exclusions.length} candidate interruption(s) kept out over ${foci} focus task(s) (holds_focus_answer ${exclusions.length})`,
      ),
    );
  });

  it("rejects a focus the rule leaves short, warns of the shortfall in the summary, and fails it with strict", async () => {
    const dir = tempDir();
    const { summary, read } = await select(dir, { far: 2 });
    expect(summary.ok).toBe(true);
    expect(read("select", "rejects")).toEqual([
      {
        stage: "select",
        record_id: id(2),
        reason: "not_enough_interruptions",
        message: expect.stringMatching(/^o__r-2: skipped as a focus \(far: only 3 eligible far interruption\(s\) .* the answer rule kept out 4: /),
      },
    ]);
    const note = "shortfall: 1 far session(s) of the 2 configured: 1 focus candidate(s) of 8 task(s) lacked eligible interruptions";
    expect(summary.stages.find((s) => s.stage === "select")!.notes).toContainEqual(expect.stringContaining(note));
    const strict = await select(dir, { far: 2, strict: true });
    expect(strict.summary.ok).toBe(false);
    expect(strict.summary.stages.find((s) => s.stage === "select")).toMatchObject({
      status: "failed",
      error: expect.stringContaining("select (--strict): 1 far session(s) of the 2 configured"),
    });
  });
});
