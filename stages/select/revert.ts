import { answerEvidence, describeEvidence, type RepositoryAnswers } from "../../pipeline/answers/index.ts";
import { readTestPatch } from "../../pipeline/changes/added-tests.ts";
import { derivedSettingBack } from "../../pipeline/checkouts/roll-back.ts";
import { takenAwayUse } from "./taken-away.ts";
import { RecordError } from "../../pipeline/engine/stage.ts";
import { environmentSpec } from "../../pipeline/executors/environment.ts";
import type { Executor } from "../../pipeline/executors/types.ts";
import type { Logger } from "../../pipeline/logger.ts";
import { designatedTestFiles, qualifyTask, qualifyTaskInput } from "../../pipeline/qualification/qualify-task.ts";
import type { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import type { SplitChange } from "../../pipeline/schemas/split.ts";

export type RevertVerdict = { ok: true; commit: string; removedTests: string[]; rolledBack?: { to: string; paths: string[] } } | { ok: false; reason: string };

export interface RevertInput {
  focus: HeldoutTask;
  candidate: HeldoutTask;
  /** The candidate's split record: what qualifying it again needs (its patches, its stages). */
  split: SplitChange;
  repository: RepositoryAnswers;
  mirror: string;
  testModules: readonly string[] | undefined;
  runs: number;
  /**
   * Set to roll back (`stages.select.roll_back: files`): the commit before the focus's fix.
   * A source file whose reverse conflicts is then set back whole to its version there.
   */
  rollBackTo?: string;
}

/** What `revertFocusOutOf` says when asked to roll back where no file needs it: the verdict without rolling back stands. */
export const NOTHING_TO_ROLL_BACK = "no file of the fix needs setting back";

export interface RevertRun {
  executor: Executor;
  checkout: (mirror: string, commit: string, patches: { name: string; text: string }[]) => ReturnType<Parameters<typeof qualifyTaskInput>[1]["checkout"]>;
  saveLog: (name: string, text: string) => Promise<string>;
  log: Logger;
}

/**
 * The revert strategy of the answer rule (SPEC §2.7) for one candidate interruption whose base
 * holds the focus's answer: its base with the focus's upstream fix and tests reversed out, kept
 * only when (1) they reverse cleanly (a test file whose reverse conflicts may instead have the
 * focus's tests taken out of it: \`derivedCommit\`), (2) nothing of the focus's answer is left (no hunk, no name
 * only the focus defines: later code may build on it), and (3) the candidate still qualifies there
 * as it did on its own base: each of its fail-to-pass tests still fails before and passes after,
 * and each of its pass-to-pass tests, but those the focus's reversed tests took away, still passes.
 *
 * Given `rollBackTo`, a source file whose reverse conflicts (later work built on the fix) is set
 * back whole to its version there instead, kept only if (4) no other file of the checkout uses a
 * definition that takes away (`takenAwayUse`); the checks above then hold as well. Asked so and no
 * file needs it, the answer is NOTHING_TO_ROLL_BACK (the verdict without rolling back stands).
 */
export async function revertFocusOutOf(input: RevertInput, run: RevertRun): Promise<RevertVerdict> {
  const { focus, candidate } = input;
  const { made: derived, rolled } = await derivedSettingBack(
    input.mirror,
    candidate.base_commit,
    { taskId: focus.task_id, patch: focus.upstream.patch, implementationPatch: focus.implementation_patch },
    input.rollBackTo,
  );
  if (input.rollBackTo && !rolled.length) return { ok: false, reason: NOTHING_TO_ROLL_BACK };
  const setBack = rolled.length ? ` with ${rolled.join(", ")} set back to ${input.rollBackTo!.slice(0, 12)}` : "";
  if (!derived.ok) return { ok: false, reason: `${focus.task_id}'s fix does not reverse out of ${candidate.task_id}'s base${setBack}: ${derived.error}` };
  if (rolled.length) {
    const use = await takenAwayUse(input.repository.reader, candidate.base_commit, derived.commit, rolled);
    if (use)
      return {
        ok: false,
        reason: `${focus.task_id}'s fix reverses out of ${candidate.task_id}'s base only${setBack}, which takes away ${use.name} (${use.definedIn}), still used in ${use.usedIn}`,
      };
  }
  const { facts } = await input.repository.of(focus);
  const left = await answerEvidence(input.repository.reader, facts, { commit: derived.commit, reversed: true });
  if (left.length)
    return {
      ok: false,
      reason: `with ${focus.task_id}'s fix reversed out${setBack}, ${candidate.task_id}'s checkout still holds its answer: ${describeEvidence(left[0]!)}`,
    };
  const env = environmentSpec(candidate.repo, candidate.environment, candidate.environment_as_of);
  const qualifyInput = qualifyTaskInput(
    { ...input.split, base_commit: derived.commit },
    {
      env,
      testArgs: designatedTestFiles(input.split.files, input.testModules),
      runs: input.runs,
      checkout: (patches) => run.checkout(input.mirror, derived.commit, patches),
      mirror: input.mirror,
      saveLog: run.saveLog,
    },
  );
  let result;
  try {
    result = await qualifyTask(run.executor, qualifyInput, run.log);
  } catch (error) {
    // The candidate cannot even be qualified there (a patch no longer applies, the build fails): not viable, for a reason of the input.
    if (error instanceof RecordError && error.cacheable)
      return { ok: false, reason: `${candidate.task_id} does not qualify with ${focus.task_id}'s fix reversed out${setBack}: ${error.message}` };
    throw error;
  }
  if (!result.decision.kept)
    return {
      ok: false,
      reason: `${candidate.task_id} does not qualify with ${focus.task_id}'s fix reversed out${setBack}: ${result.decision.reason}: ${result.decision.detail}`,
    };
  // Tests the focus's reference added, or that were taken out with its tests, are gone by design.
  const reversedTests = new Set(readTestPatch(focus.upstream.patch).added);
  const takenOut = (test: string) => derived.removedTests.some((prefix) => test === prefix || test.startsWith(`${prefix}::`) || test.startsWith(`${prefix}[`));
  const f2p = new Set(result.sets.failToPass);
  const p2p = new Set(result.sets.passToPass);
  const lostF2p = candidate.fail_to_pass.filter((t) => !f2p.has(t));
  const lostP2p = candidate.pass_to_pass.filter((t) => !reversedTests.has(t) && !takenOut(t) && !p2p.has(t));
  if (lostF2p.length || lostP2p.length)
    return {
      ok: false,
      reason: `with ${focus.task_id}'s fix reversed out${setBack}, ${candidate.task_id}'s tests no longer hold: ${[
        lostF2p.length ? `fail-to-pass no more: ${lostF2p.slice(0, 3).join(", ")}${lostF2p.length > 3 ? ` and ${lostF2p.length - 3} more` : ""}` : "",
        lostP2p.length ? `pass-to-pass no more: ${lostP2p.slice(0, 3).join(", ")}${lostP2p.length > 3 ? ` and ${lostP2p.length - 3} more` : ""}` : "",
      ]
        .filter(Boolean)
        .join("; ")}`,
    };
  return {
    ok: true,
    commit: derived.commit,
    removedTests: derived.removedTests,
    ...(rolled.length ? { rolledBack: { to: input.rollBackTo!, paths: rolled } } : {}),
  };
}
