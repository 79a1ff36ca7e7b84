// How often the revert strategy of the answer rule (SPEC §2.7) can make a derived checkout, on a
// built benchmark's real history: for every pair the answers stage found exposed (a task's base
// holds another's answer), the other's upstream fix is reversed out of that base as select would
// (git alone: no environment, no re-qualification), and the pair is counted as reversed whole,
// reversed with the focus's tests taken out of a test file whose reverse conflicts, or refused,
// per repository. A reverse is only the first of select's three conditions: the evidence check
// and the re-qualification (select's `reverts.jsonl`) decide after it.
//
//   npm run bench:reverts -- --work-dir DIR
//
// DIR is the built benchmark's work directory: its artifacts/answers and artifacts/oracle, and the
// repositories' copies under git/ where select makes its derived commits.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { derivedCommit } from "../pipeline/checkouts/derived.ts";
import { localCopyOf } from "../pipeline/git.ts";
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

type Tally = { whole: number; takenOut: number; refused: number; testsTakenOut: number };
const tallies = new Map<string, Tally>();
const started = performance.now();
for (const pair of exposed) {
  const focus = heldout.get(pair.task_id);
  const candidate = heldout.get(pair.checkout_task);
  if (!focus || !candidate) continue; // a task the oracle did not keep is in no session
  const gitDir = localCopyOf(work.mirrors, focus.repo);
  if (!gitDir) throw new Error(`${focus.repo}: no copy in ${work.mirrors}`);
  const tally = tallies.get(focus.repo) ?? { whole: 0, takenOut: 0, refused: 0, testsTakenOut: 0 };
  tallies.set(focus.repo, tally);
  const made = await derivedCommit(gitDir, candidate.base_commit, [{ taskId: focus.task_id, patch: focus.upstream.patch }]);
  if (!made.ok) tally.refused++;
  else if (made.removedTests.length) {
    tally.takenOut++;
    tally.testsTakenOut += made.removedTests.length;
  } else tally.whole++;
}
const total = [...tallies.values()].reduce(
  (a, t) => ({ whole: a.whole + t.whole, takenOut: a.takenOut + t.takenOut, refused: a.refused + t.refused, testsTakenOut: a.testsTakenOut + t.testsTakenOut }),
  {
    whole: 0,
    takenOut: 0,
    refused: 0,
    testsTakenOut: 0,
  },
);
console.log("repository | exposed pairs | reversed whole | tests taken out | refused | tests taken out (count)");
for (const [repo, t] of [...tallies].sort(([a], [b]) => (a < b ? -1 : 1)))
  console.log(`${repo} | ${t.whole + t.takenOut + t.refused} | ${t.whole} | ${t.takenOut} | ${t.refused} | ${t.testsTakenOut}`);
console.log(`all | ${total.whole + total.takenOut + total.refused} | ${total.whole} | ${total.takenOut} | ${total.refused} | ${total.testsTakenOut}`);
console.log(`${((performance.now() - started) / 1000).toFixed(1)} s`);
