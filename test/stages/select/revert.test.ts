import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { RepositoryAnswers } from "../../../pipeline/answers/index.ts";
import { freshCheckout } from "../../../pipeline/checkouts/checkout.ts";
import { derivedCommit } from "../../../pipeline/checkouts/derived.ts";
import { LocalExecutor } from "../../../pipeline/executors/local.ts";
import { git } from "../../../pipeline/git.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import type { HeldoutTask } from "../../../pipeline/schemas/heldout.ts";
import { NOTHING_TO_ROLL_BACK, revertFocusOutOf, type RevertRun } from "../../../stages/select/revert.ts";
import { answerHistory, heldoutOf, splitOf, type AnswerHistory, type HistoryTask } from "../../helpers/answer-history.ts";
import { fileTempDir } from "../../helpers/tmp.ts";

/**
 * The revert strategy of the answer rule (SPEC §2.7) on a real repository and real pytest runs: a
 * candidate interruption whose base holds the focus's fix is taken with that fix reversed out of
 * its checkout only when the reverse is clean, nothing of the answer is left, and the candidate
 * still qualifies there as it did on its own base.
 */
let history: AnswerHistory;
let focus: HeldoutTask;
let run: RevertRun;
const SHAPES = "tests/test_shapes.py";

beforeAll(async () => {
  const dir = fileTempDir("switch-swe-revert-");
  mkdirSync(join(dir, "repo"));
  mkdirSync(join(dir, "scratch"));
  mkdirSync(join(dir, "logs"));
  history = await answerHistory(join(dir, "repo"));
  focus = heldoutOf(
    history.focus,
    { fail_to_pass: [`${SHAPES}::test_trim_span_basic`], pass_to_pass: [`${SHAPES}::test_area`] },
    { pull: 7, commit: history.commits.merge },
  );
  run = {
    executor: new LocalExecutor(join(dir, "envs"), silentLogger),
    checkout: (mirror, commit, patches) => freshCheckout(mirror, commit, patches, join(dir, "scratch")),
    saveLog: async (name, text) => {
      const path = join(dir, "logs", `${name.replace(/[^\w.-]/g, "_")}.log`);
      writeFileSync(path, text);
      return path;
    },
    log: silentLogger,
  };
});

/** The verdict for one candidate, with the sets its own qualification found on its own base (rolling back to `rollBackTo` where given). */
function revert(candidate: HistoryTask, sets: { fail_to_pass: string[]; pass_to_pass: string[] }, rollBackTo?: string) {
  return revertFocusOutOf(
    {
      focus,
      candidate: heldoutOf(candidate, sets),
      split: splitOf(candidate),
      repository: new RepositoryAnswers((args) => git([`--git-dir=${history.gitDir}`, ...args])),
      mirror: history.gitDir,
      testModules: undefined,
      runs: 1,
      ...(rollBackTo ? { rollBackTo } : {}),
    },
    run,
  );
}

/** `double`'s test, with the tests its base had: the focus's own test among them. */
const DOUBLE_SETS = {
  fail_to_pass: [`${SHAPES}::test_double`],
  pass_to_pass: [`${SHAPES}::test_area`, `${SHAPES}::test_area_zero`, `${SHAPES}::test_trim_span_basic`],
};

describe("reverting the focus's fix out of an interruption's checkout", () => {
  it("refuses, before any environment is built, a base where a name only the fix defines is still used, and one whose lines of the fix changed since", async () => {
    expect(await revert(history.candidates.nameLeft, DOUBLE_SETS)).toEqual({
      ok: false,
      reason: "with o__r-7's fix reversed out, o__r-13's checkout still holds its answer: trim_span, which only the reference defines, is in pkg/util.py",
    });
    expect(await revert(history.candidates.rewritten, DOUBLE_SETS)).toEqual({
      ok: false,
      reason: "o__r-7's fix does not reverse out of o__r-14's base: the reverse conflicts with later changes to pkg/shapes.py",
    });
    // Neither was worth an environment: the verdict came from git alone.
    expect((run.executor as LocalExecutor).built).toEqual([]);
  });

  it("keeps a candidate that does not need the fix: the derived commit, the same one every runner makes; the focus's own reversed test is not counted lost", async () => {
    const verdict = await revert(history.candidates.independent, DOUBLE_SETS);
    expect(verdict, JSON.stringify(verdict)).toMatchObject({ ok: true });
    const made = await derivedCommit(history.gitDir, history.candidates.independent.base, [{ taskId: focus.task_id, patch: focus.upstream.patch }]);
    expect(verdict).toEqual(made);
    // The candidate's checkout has its own work and none of the focus's fix.
    const commit = (verdict as { commit: string }).commit;
    expect(await git([`--git-dir=${history.gitDir}`, "show", `${commit}:pkg/shapes.py`])).not.toContain("trim_span");
    expect(await git([`--git-dir=${history.gitDir}`, "show", `${commit}:pkg/other.py`])).toBe("X = 3\n");
  });

  it("takes the focus's test out of a test file whose reverse conflicts with a later test beside it, and keeps the later test", async () => {
    const verdict = await revert(history.candidates.adjacentTest, {
      ...DOUBLE_SETS,
      pass_to_pass: [...DOUBLE_SETS.pass_to_pass, `${SHAPES}::test_area_one`],
    });
    expect(verdict, JSON.stringify(verdict)).toEqual({
      ok: true,
      commit: expect.stringMatching(/^[0-9a-f]{40}$/),
      removedTests: [`${SHAPES}::test_trim_span_basic`],
    });
    const show = (path: string) => git([`--git-dir=${history.gitDir}`, "show", `${(verdict as { commit: string }).commit}:${path}`]);
    expect(await show(SHAPES)).toBe(
      "from pkg.shapes import area\n\n\ndef test_area():\n    assert area(1) == 3\n\n\ndef test_area_zero():\n    assert area(0) == 0\n\n\ndef test_area_one():\n    assert area(1) == 3\n",
    );
    expect(await show("pkg/shapes.py")).toBe("def area(r):\n    return 3 * r * r\n");
    // The runners make the same commit from the same inputs.
    const made = await derivedCommit(history.gitDir, history.candidates.adjacentTest.base, [{ taskId: focus.task_id, patch: focus.upstream.patch }]);
    expect(made).toEqual(verdict);
  });

  it("refuses a candidate whose own tests need the focus's fix: it does not qualify there", async () => {
    const verdict = await revert(history.candidates.dependent, { fail_to_pass: ["tests/test_other.py::test_span"], pass_to_pass: [] });
    expect(verdict).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /^o__r-12 does not qualify with o__r-7's fix reversed out: no_fail_to_pass: no test fails before the fix and passes after it in every run/,
      ),
    });
  });

  it("refuses a candidate that qualifies but loses a pass-to-pass test of its own base that is not the focus's", async () => {
    const verdict = await revert(history.candidates.laterTest, {
      ...DOUBLE_SETS,
      pass_to_pass: [...DOUBLE_SETS.pass_to_pass, `${SHAPES}::test_area_negative`],
    });
    expect(verdict).toEqual({
      ok: false,
      reason: `with o__r-7's fix reversed out, o__r-15's tests no longer hold: pass-to-pass no more: ${SHAPES}::test_area_negative`,
    });
  });

  it("with roll_back: files, sets a source file whose reverse conflicts back to its version before the fix, and keeps the candidate that still qualifies there", async () => {
    const before = (await git([`--git-dir=${history.gitDir}`, "rev-parse", `${history.commits.merge}^1`])).trim();
    const verdict = await revert(history.candidates.rewritten, DOUBLE_SETS, before);
    expect(verdict, JSON.stringify(verdict)).toEqual({
      ok: true,
      commit: expect.stringMatching(/^[0-9a-f]{40}$/),
      removedTests: [],
      rolledBack: { to: before, paths: ["pkg/shapes.py"] },
    });
    const show = (path: string) => git([`--git-dir=${history.gitDir}`, "show", `${(verdict as { commit: string }).commit}:${path}`]);
    // The file as it was before the fix, later rewrite and all gone; the candidate's other work stays.
    expect(await show("pkg/shapes.py")).toBe(await git([`--git-dir=${history.gitDir}`, "show", `${before}:pkg/shapes.py`]));
    expect(await show("pkg/other.py")).toBe("X = 3\n");
    // A runner makes the same commit from what the session records.
    const made = await derivedCommit(history.gitDir, history.candidates.rewritten.base, [
      { taskId: focus.task_id, patch: focus.upstream.patch, rolledBack: { to: before, paths: ["pkg/shapes.py"] } },
    ]);
    expect(made).toEqual({ ok: true, commit: (verdict as { commit: string }).commit, removedTests: [] });
  });

  it("with roll_back: files, leaves a verdict that no file's setting back would change as it was", async () => {
    const before = (await git([`--git-dir=${history.gitDir}`, "rev-parse", `${history.commits.merge}^1`])).trim();
    // Its fix reverses; what keeps it out is a module that uses the fix's name.
    expect(await revert(history.candidates.nameLeft, DOUBLE_SETS, before)).toEqual({ ok: false, reason: NOTHING_TO_ROLL_BACK });
  });
});
