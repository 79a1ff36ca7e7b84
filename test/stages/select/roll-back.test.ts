import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { formatSummary } from "../../../pipeline/engine/engine.ts";
import { git } from "../../../pipeline/git.ts";
import type { RevertRecord, SelectedSession } from "../../../pipeline/schemas/selection.ts";
import { selectStage } from "../../../stages/select/index.ts";
import { answerHistory, FOCUS, heldoutOf, splitOf, type AnswerHistory } from "../../helpers/answer-history.ts";
import { runStageOver } from "../../helpers/given-artifacts.ts";
import { taskRecord } from "../../helpers/task-records.ts";
import { fileTempDir } from "../../helpers/tmp.ts";

/**
 * The select stage with the revert strategy and `roll_back: files` (select's config), on a real repository and real
 * pytest runs (test/helpers/answer-history.ts): the one candidate interruption, o__r-14, comes
 * after the focus o__r-7's merge and rewrote the fix's lines since, so the fix alone does not
 * reverse out of it. Setting pkg/shapes.py back to its version before the fix does, and o__r-14
 * still qualifies there.
 */
const CHECKOUTS = ["/workspace/w00", "/workspace/w01"];
const CANDIDATE = "o__r-14";
const SHAPES = "tests/test_shapes.py";
let history: AnswerHistory;
let dir: string;

beforeAll(async () => {
  dir = fileTempDir("switch-swe-roll-back-");
  mkdirSync(join(dir, "repo"));
  mkdirSync(join(dir, "repos"));
  history = await answerHistory(join(dir, "repo"));
  writeFileSync(join(dir, "repos", "o__r.json"), JSON.stringify({ repo: "o/r", clone_url: history.dir, environment: { python: "3.11" } }));
});

function given() {
  const candidate = history.candidates.rewritten;
  const tasks = [
    taskRecord({ id: FOCUS, repo: "o/r", files: history.focus.split.sourceFiles, stages: 2, base: history.focus.base }),
    taskRecord({ id: CANDIDATE, repo: "o/r", files: candidate.split.sourceFiles, stages: 1, base: candidate.base }),
  ];
  const heldout = [
    heldoutOf(
      history.focus,
      { fail_to_pass: [`${SHAPES}::test_trim_span_basic`], pass_to_pass: [`${SHAPES}::test_area`] },
      { pull: 7, commit: history.commits.merge },
    ),
    heldoutOf(candidate, {
      fail_to_pass: [`${SHAPES}::test_double`],
      pass_to_pass: [`${SHAPES}::test_area`, `${SHAPES}::test_area_zero`, `${SHAPES}::test_trim_span_basic`],
    }),
  ];
  return {
    oracle: { tasks, heldout },
    split: { splits: [splitOf(history.focus), splitOf(candidate)] },
    answers: {
      exposures: [
        { task_id: FOCUS, checkout_task: CANDIDATE, held: true, evidence: [{ by: "history" as const, commit: history.commits.merge }] },
        { task_id: CANDIDATE, checkout_task: FOCUS, held: false, evidence: [] },
      ],
    },
  };
}

const select = (rollBack: "never" | "files") =>
  runStageOver(selectStage, given(), {
    dir,
    config: { near: 1, far: 0, min_focus_stages: 2, requalify_runs: 1, roll_back: rollBack },
    seed: "7",
    settings: {
      profiles_dir: "repos",
      execution: { executor: "local" },
      session: { interruptions: 1, checkouts: CHECKOUTS, answer_rule: { strategy: "revert" } },
    },
  });

describe("select with roll_back: files", () => {
  it("leaves the candidate out without it, and with it takes the candidate with the fix's file set back, recorded in the session and the reverts", async () => {
    const never = await select("never");
    expect(never.read("select", "sessions"), formatSummary(never.summary)).toEqual([]);
    expect(never.read("select", "reverts")).toEqual([
      {
        focus: FOCUS,
        task_id: CANDIDATE,
        viable: false,
        reason: `${FOCUS}'s fix does not reverse out of ${CANDIDATE}'s base: the reverse conflicts with later changes to pkg/shapes.py`,
      },
    ]);

    const files = await select("files");
    const before = (await git([`--git-dir=${history.gitDir}`, "rev-parse", `${history.commits.merge}^1`])).trim();
    const [revert] = files.read("select", "reverts") as RevertRecord[];
    expect(revert, formatSummary(files.summary)).toEqual({
      focus: FOCUS,
      task_id: CANDIDATE,
      viable: true,
      commit: expect.stringMatching(/^[0-9a-f]{40}$/),
      rolled_back: { to: before, paths: ["pkg/shapes.py"] },
    });
    const [session] = files.read("select", "sessions") as SelectedSession[];
    expect(session).toMatchObject({
      focus: FOCUS,
      interruptions: [CANDIDATE],
      derived_checkouts: [
        { task_id: CANDIDATE, without: [FOCUS], commit: revert!.commit, rolled_back: [{ task_id: FOCUS, to: before, paths: ["pkg/shapes.py"] }] },
      ],
    });
    // The verdict without rolling back was the first run's, from the cache: only the checkout with the file set back was made and qualified.
    expect(files.summary.stages.find((s) => s.stage === "select")!.reused).toBe(1);
  });
});
