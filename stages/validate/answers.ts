import { answerEvidence, describeEvidence, type RepositoryAnswers } from "../../pipeline/answers/index.ts";
import { derivedCommit, reversalsOf } from "../../pipeline/checkouts/derived.ts";
import type { AnswerRuleSettings } from "../../pipeline/engine/settings.ts";
import type { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import type { SessionSpec } from "../../pipeline/schemas/session.ts";
import type { ValidationReport } from "../../pipeline/schemas/validation.ts";
import type { Request } from "../../pipeline/schemas/task.ts";
import { quotedReferenceLines, referenceLines } from "../../pipeline/changes/reference-quotes.ts";
import { DiffParseError } from "../../pipeline/changes/diff.ts";
import type { Check } from "./validate.ts";

type InterruptionAnswer = ValidationReport["interruption_answers"][number];

/**
 * SPEC §2.7 checked again from the repository and the held-out assets, taking nobody's word for
 * it: each checkout's tree (a derived checkout made again from its base and the reversed
 * references, and its id compared), then whether it holds the focus's answer (refused) or an
 * interruption's (reported; refused when the rule excludes them), by history and by content.
 */
export async function answerChecks(
  spec: SessionSpec,
  heldout: ReadonlyMap<string, HeldoutTask>,
  repository: { answers: RepositoryAnswers; mirror: string } | undefined,
  rule: AnswerRuleSettings,
): Promise<{ checks: Check[]; interruptionAnswers: InterruptionAnswer[] }> {
  if (!repository)
    return {
      checks: [{ check: "focus_answer_kept_out", passed: false, detail: `${spec.repo} cannot be read: the answer rule cannot be checked` }],
      interruptionAnswers: [],
    };
  const checks: Check[] = [];
  const trees = new Map<string, string>();
  const rebuilt: string[] = [];
  for (const c of spec.checkouts) {
    if (!c.derived) {
      trees.set(c.path, c.base_commit);
      continue;
    }
    const reversed = reversalsOf(c.derived, (id) => heldout.get(id)?.upstream.patch ?? "", `${c.path} (${c.task_id})`);
    const made = await derivedCommit(repository.mirror, c.base_commit, reversed);
    if (!made.ok || made.commit !== c.derived.commit)
      rebuilt.push(
        `${c.path} (${c.task_id}): ${made.ok ? `made again it is ${made.commit}, not ${c.derived.commit}` : `${made.taskId}'s fix does not reverse out of its base: ${made.error}`}`,
      );
    trees.set(c.path, made.ok ? made.commit : c.base_commit);
  }
  checks.push(rebuilt.length ? { check: "derived_checkouts", passed: false, detail: rebuilt.join("; ") } : { check: "derived_checkouts", passed: true });
  const held: string[] = [];
  const interruptionAnswers: InterruptionAnswer[] = [];
  for (const task of [spec.focus, ...spec.interruptions]) {
    const assets = heldout.get(task);
    if (!assets) {
      held.push(`${task} has no held-out assets to check against`);
      continue;
    }
    const { facts } = await repository.answers.of(assets);
    for (const c of spec.checkouts) {
      if (c.task_id === task) continue;
      const evidence = await answerEvidence(repository.answers.reader, facts, {
        commit: trees.get(c.path)!,
        reversed: Boolean(c.derived?.without.includes(task)),
      });
      if (!evidence.length) continue;
      const said = describeEvidence(evidence[0]!);
      if (task === spec.focus) held.push(`${c.path} (${c.task_id}, base ${c.base_commit.slice(0, 12)}) holds the focus ${task}'s answer: ${said}`);
      else interruptionAnswers.push({ task_id: task, checkout: c.path, checkout_task: c.task_id, evidence: said });
    }
  }
  checks.push(held.length ? { check: "focus_answer_kept_out", passed: false, detail: held.join("; ") } : { check: "focus_answer_kept_out", passed: true });
  // Reported in every mode; a check (refused when any) only where the rule keeps them out too.
  if (rule.interruptions === "exclude")
    checks.push(
      interruptionAnswers.length
        ? {
            check: "interruption_answers_kept_out",
            passed: false,
            detail: interruptionAnswers.map((a) => `${a.checkout} (${a.checkout_task}) holds ${a.task_id}'s answer: ${a.evidence}`).join("; "),
          }
        : { check: "interruption_answers_kept_out", passed: true },
    );
  return { checks, interruptionAnswers };
}

/**
 * SPEC §2.9: no message quotes two or more lines of its own task's reference implementation
 * (reconstruct takes such excerpts out of upstream text; a curation file may approve a quote, with
 * its reason, and then it passes). `requests` are each task's requests as reconstructed.
 */
export function quoteCheck(spec: SessionSpec, heldout: ReadonlyMap<string, HeldoutTask>, requests: ReadonlyMap<string, readonly Request[]>): Check {
  const quoting: string[] = [];
  const seen = new Set<string>();
  for (const r of spec.conditions.switched) {
    if (r.finalization || r.stage === undefined || seen.has(`${r.task_id}#${r.stage}`)) continue;
    seen.add(`${r.task_id}#${r.stage}`);
    const reference = heldout.get(r.task_id);
    if (!reference) continue;
    let lines: Set<string>;
    try {
      lines = referenceLines(reference.implementation_patch);
    } catch (error) {
      // A held-out file edited by hand (`session check` reads what it is given): the check fails, naming it.
      if (!(error instanceof DiffParseError)) throw error;
      quoting.push(`${r.task_id}: its held-out implementation_patch is not a diff (${error.message}), so its quotes cannot be checked`);
      continue;
    }
    const quoted = quotedReferenceLines(r.message.text, lines);
    const approved = requests.get(r.task_id)?.find((q) => q.stage === r.stage)?.provenance.quote_approved;
    if (quoted.length >= 2 && !approved)
      quoting.push(`${r.task_id} stage ${r.stage} quotes ${quoted.length} lines of its reference implementation (first: ${quoted[0]})`);
  }
  return quoting.length ? { check: "no_reference_quotes", passed: false, detail: quoting.join("; ") } : { check: "no_reference_quotes", passed: true };
}
