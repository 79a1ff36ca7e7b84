import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { derivedCommit } from "../../../pipeline/checkouts/derived.ts";
import { git } from "../../../pipeline/git.ts";
import type { SessionSpec } from "../../../pipeline/schemas/session.ts";
import type { ValidationReport } from "../../../pipeline/schemas/validation.ts";
import { validateStage } from "../../../stages/validate/index.ts";
import { answerHistory, FOCUS, heldoutOf, type AnswerHistory } from "../../helpers/answer-history.ts";
import { runStageOver } from "../../helpers/given-artifacts.ts";
import { sessionOver, taskRecord } from "../../helpers/task-records.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";

/**
 * The validate stage checks the answer rule (SPEC §2.7) again from the repository, taking no
 * stage's word for it: a session of the focus `o__r-7` and one interruption, `o__r-11`, whose base
 * comes after the focus's merge (test/helpers/answer-history.ts).
 */
const CHECKOUTS = ["/workspace/w00", "/workspace/w01"];
const INTERRUPTION = "o__r-11";
let history: AnswerHistory;
let derived: string;

beforeAll(async () => {
  const dir = fileTempDir("switch-swe-validate-");
  mkdirSync(join(dir, "repo"));
  history = await answerHistory(join(dir, "repo"));
  const made = await derivedCommit(history.gitDir, history.candidates.independent.base, [{ taskId: FOCUS, patch: history.focus.diff }]);
  if (!made.ok) throw new Error(made.error);
  derived = made.commit;
});

const tasks = () => [
  taskRecord({ id: FOCUS, repo: "o/r", files: history.focus.split.sourceFiles, stages: 2, base: history.focus.base }),
  taskRecord({ id: INTERRUPTION, repo: "o/r", files: history.candidates.independent.split.sourceFiles, stages: 1, base: history.candidates.independent.base }),
];

const spec = (derivedCheckout?: string, rolledBack?: { to: string; paths: string[] }): SessionSpec =>
  sessionOver(
    tasks(),
    {
      focus: FOCUS,
      interruptions: [INTERRUPTION],
      locality: "near",
      ...(derivedCheckout
        ? {
            derived_checkouts: [
              { task_id: INTERRUPTION, without: [FOCUS], commit: derivedCheckout, ...(rolledBack ? { rolled_back: [{ task_id: FOCUS, ...rolledBack }] } : {}) },
            ],
          }
        : {}),
    },
    CHECKOUTS,
  );

/** The stage over one session, the repository's profile naming the history's clone. */
async function validate(session: SessionSpec) {
  const dir = tempDir();
  mkdirSync(join(dir, "repos"));
  writeFileSync(join(dir, "repos", "o__r.json"), JSON.stringify({ repo: "o/r", clone_url: history.dir, environment: { python: "3.11" } }));
  const heldout = [
    heldoutOf(history.focus, { fail_to_pass: ["tests/test_shapes.py::test_trim_span_basic"], pass_to_pass: [] }, { pull: 7, commit: history.commits.merge }),
    heldoutOf(history.candidates.independent, { fail_to_pass: ["tests/test_shapes.py::test_double"], pass_to_pass: [] }),
  ];
  const { summary, read } = await runStageOver(
    validateStage,
    { schedule: { sessions: [session] }, oracle: { tasks: tasks(), heldout } },
    { dir, settings: { profiles_dir: "repos", session: { interruptions: 1, checkouts: CHECKOUTS } } },
  );
  const [report] = read("validate", "reports") as ValidationReport[];
  return {
    summary,
    report: report!,
    passed: read("validate", "sessions") as SessionSpec[],
    rejects: read("validate", "rejects") as { reason: string; message: string }[],
  };
}

const failed = (report: ValidationReport) => report.checks.filter((c) => !c.passed);

describe("validate and the answer rule", () => {
  it("refuses a session whose interruption's checkout holds the focus's answer, naming the checkout and the fix", async () => {
    const session = spec();
    const { report, passed, rejects } = await validate(session);
    const path = session.checkouts.find((c) => c.task_id === INTERRUPTION)!.path;
    const base = history.candidates.independent.base;
    expect(failed(report)).toEqual([
      {
        check: "focus_answer_kept_out",
        passed: false,
        detail: `${path} (${INTERRUPTION}, base ${base.slice(0, 12)}) holds the focus ${FOCUS}'s answer: its base descends from the fix ${history.commits.merge.slice(0, 12)}`,
      },
    ]);
    expect(passed).toEqual([]);
    expect(rejects).toEqual([expect.objectContaining({ reason: "validation_failed", message: expect.stringContaining("focus_answer_kept_out") })]);
  });

  it("passes the same session with the focus's fix reversed out of that checkout, made again from the repository", async () => {
    const session = spec(derived);
    const { report, passed } = await validate(session);
    expect(failed(report)).toEqual([]);
    expect(report.checks.map((c) => c.check)).toEqual(expect.arrayContaining(["derived_checkouts", "focus_answer_kept_out", "no_reference_quotes"]));
    expect(passed).toEqual([session]);
  });

  it("refuses a derived checkout whose commit is not what its base and the reversed fix make", async () => {
    const session = spec(history.commits.later);
    const { report } = await validate(session);
    const path = session.checkouts.find((c) => c.task_id === INTERRUPTION)!.path;
    expect(failed(report).map((c) => c.check)).toEqual(["derived_checkouts"]);
    expect(failed(report)[0]!.detail).toBe(`${path} (${INTERRUPTION}): made again it is ${derived}, not ${history.commits.later}`);
  });

  it("makes a checkout with a file set back whole as the session records it, and refuses one whose record leaves the setting back out", async () => {
    const rolledBack = { to: (await git([`--git-dir=${history.gitDir}`, "rev-parse", `${history.commits.merge}^1`])).trim(), paths: ["pkg/shapes.py"] };
    const made = await derivedCommit(history.gitDir, history.candidates.independent.base, [{ taskId: FOCUS, patch: history.focus.diff, rolledBack }]);
    if (!made.ok) throw new Error(made.error);
    const session = spec(made.commit, rolledBack);
    const { report, passed } = await validate(session);
    expect(failed(report)).toEqual([]);
    expect(passed).toEqual([session]);
    const path = session.checkouts.find((c) => c.task_id === INTERRUPTION)!.path;
    const { report: without } = await validate(spec(made.commit));
    expect(failed(without)[0]!.detail).toBe(`${path} (${INTERRUPTION}): made again it is ${derived}, not ${made.commit}`);
  });
});
