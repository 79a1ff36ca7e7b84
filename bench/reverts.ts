// How often the revert strategy of the answer rule (SPEC §2.7) can make a derived checkout, on a
// built benchmark's real history: for every pair the answers stage found exposed (a task's base
// holds another's answer), the other's upstream fix is reversed out of that base as select would
// (git alone: no environment, no re-qualification), and the pair is counted as reversed whole,
// reversed with the focus's tests taken out of a test file whose reverse conflicts, or refused,
// per repository. A reverse is only the first of select's three conditions: the evidence check
// and the re-qualification (select's `reverts.jsonl`) decide after it.
//
// A refused pair is tried again as `stages.select.roll_back: files` would: each Python source
// file whose reverse conflicts set back whole to its version before the fix. It is counted as set
// back (and the files it took), or as set back but taking away a definition another file of the
// checkout still uses (select refuses those), or as still refused.
//
//   npm run bench:reverts -- --work-dir DIR
//
// DIR is the built benchmark's work directory: its artifacts/answers and artifacts/oracle, and the
// repositories' copies under git/ where select makes its derived commits.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { RepositoryAnswers } from "../pipeline/answers/index.ts";
import { derivedCommit } from "../pipeline/checkouts/derived.ts";
import { derivedSettingBack } from "../pipeline/checkouts/roll-back.ts";
import { takenAwayUse } from "../stages/select/taken-away.ts";
import { git, localCopyOf } from "../pipeline/git.ts";
import { AnswerExposure } from "../pipeline/schemas/answers.ts";
import { HeldoutTask } from "../pipeline/schemas/heldout.ts";
import { WorkLayout } from "../pipeline/work-layout.ts";

const { values } = parseArgs({ options: { "work-dir": { type: "string" } } });
if (!values["work-dir"]) throw new Error("--work-dir DIR: a built benchmark's work directory");
const work = new WorkLayout(values["work-dir"]);
const jsonl = <T>(path: string, parse: (v: unknown) => T): T[] =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => parse(JSON.parse(line)));
const heldout = new Map(jsonl(work.artifact("oracle", "heldout"), (v) => HeldoutTask.parse(v)).map((h) => [h.task_id, h]));
const exposed = jsonl(work.artifact("answers", "exposures"), (v) => AnswerExposure.parse(v)).filter((e) => e.held);

type Tally = { whole: number; takenOut: number; refused: number; testsTakenOut: number; setBack: number; filesSetBack: number; takesAway: number };
const tallies = new Map<string, Tally>();
const repositories = new Map<string, RepositoryAnswers>();
const started = performance.now();
for (const pair of exposed) {
  const focus = heldout.get(pair.task_id);
  const candidate = heldout.get(pair.checkout_task);
  if (!focus || !candidate) continue; // a task the oracle did not keep is in no session
  const gitDir = localCopyOf(work.mirrors, focus.repo);
  if (!gitDir) throw new Error(`${focus.repo}: no copy in ${work.mirrors}`);
  const tally = tallies.get(focus.repo) ?? { whole: 0, takenOut: 0, refused: 0, testsTakenOut: 0, setBack: 0, filesSetBack: 0, takesAway: 0 };
  tallies.set(focus.repo, tally);
  const made = await derivedCommit(gitDir, candidate.base_commit, [{ taskId: focus.task_id, patch: focus.upstream.patch }]);
  if (!made.ok) {
    tally.refused++;
    const answers = repositories.get(gitDir) ?? new RepositoryAnswers((args) => git([`--git-dir=${gitDir}`, ...args]));
    repositories.set(gitDir, answers);
    const before = await answers.beforeFix(focus);
    if (!before) continue;
    const again = await derivedSettingBack(
      gitDir,
      candidate.base_commit,
      { taskId: focus.task_id, patch: focus.upstream.patch, implementationPatch: focus.implementation_patch },
      before,
    );
    if (!again.made.ok || !again.rolled.length) continue;
    if (await takenAwayUse(answers.reader, candidate.base_commit, again.made.commit, again.rolled)) tally.takesAway++;
    else {
      tally.setBack++;
      tally.filesSetBack += again.rolled.length;
    }
  } else if (made.removedTests.length) {
    tally.takenOut++;
    tally.testsTakenOut += made.removedTests.length;
  } else tally.whole++;
}
const total: Tally = { whole: 0, takenOut: 0, refused: 0, testsTakenOut: 0, setBack: 0, filesSetBack: 0, takesAway: 0 };
for (const t of tallies.values()) for (const key of Object.keys(total) as (keyof Tally)[]) total[key] += t[key];
console.log(
  "repository | exposed pairs | reversed whole | tests taken out | refused | tests taken out (count) | of the refused: set back (files) | set back, takes away a used name",
);
const row = (name: string, t: Tally) =>
  `${name} | ${t.whole + t.takenOut + t.refused} | ${t.whole} | ${t.takenOut} | ${t.refused} | ${t.testsTakenOut} | ${t.setBack} (${t.filesSetBack}) | ${t.takesAway}`;
for (const [repo, t] of [...tallies].sort(([a], [b]) => (a < b ? -1 : 1))) console.log(row(repo, t));
console.log(row("all", total));
console.log(`${((performance.now() - started) / 1000).toFixed(1)} s`);
