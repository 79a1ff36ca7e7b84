import seedrandom from "seedrandom";
import { sha256 } from "../../pipeline/canonical.ts";
import type { LocalityClass } from "../../pipeline/schemas/common.ts";
import type { RuleExclusionRecord as RuleExclusion, SelectedSession } from "../../pipeline/schemas/selection.ts";
import { LocalityIndex } from "../../pipeline/locality.ts";

export interface SelectableTask {
  id: string;
  repo: string;
  sourceFiles: readonly string[];
  sourceDirs: readonly string[];
  stages: number;
}

/** What select knows of the answer rule (SPEC §2.7): which checkouts hold which answers, and how to revert. */
export interface AnswerRuleView {
  /** Whether `checkoutTask`'s base holds `task`'s answer; a pair nobody measured counts as holding it. */
  holds(task: string, checkoutTask: string): boolean;
  /** Why it holds it, for people. */
  why(task: string, checkoutTask: string): string;
  /** The revert strategy: `candidate`'s base with `focus`'s upstream fix reversed out, re-qualified (slow; asked only when needed). */
  revert?: (
    focus: string,
    candidate: string,
  ) => Promise<{ ok: true; commit: string; rolledBack?: { to: string; paths: string[] } } | { ok: false; reason: string }>;
  /** Interruptions' answers are kept out of every other checkout too, not only reported. */
  exclusive: boolean;
}

/** No checkout holds any answer: for pools whose history is not looked at (unit tests of the selection alone). */
export const NO_ANSWERS_HELD: AnswerRuleView = { holds: () => false, why: () => "", exclusive: false };

export interface SelectionResult {
  sessions: SelectedSession[];
  skipped: { focus: string; group: LocalityClass; reason: string }[];
  exclusions: RuleExclusion[];
  interruptionReuse: Record<string, number>;
}

export interface SelectOptions {
  seed: string;
  sizes: Record<LocalityClass, number>;
  interruptions: number;
  minFocusStages: number;
  /** Interruptions with fewer substantive requests are never drawn. */
  minInterruptionStages?: number;
}

/**
 * A session's own seed, from the benchmark seed and its focus id only: adding a repository or a
 * task changes no other session's draws.
 */
export function caseSeed(benchmarkSeed: string, focus: string): string {
  return sha256(`${benchmarkSeed}\0${focus}`).slice(0, 32);
}

function shuffle<T>(items: T[], rng: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * SPEC §2.7: up to `sizes.near` near and `sizes.far` far focus tasks (each in one group only),
 * spread over repositories round-robin, each with `count` distinct same-repository interruptions
 * eligible with it and of its group, drawn from its case seed, those of two requests or more first
 * (only they can be suspended and resumed), and among them those open at the same time as the
 * focus (its checkout does not hold their answer) first. No interruption's checkout may hold the focus's answer:
 * those that do are left out, or, with the revert strategy and only where the focus lacks others,
 * taken with the focus's fix reversed out of them once that is shown to work. A focus that cannot
 * get enough interruptions in a group is skipped for it, with the reason.
 */
export async function selectSessions(tasks: SelectableTask[], options: SelectOptions, answers: AnswerRuleView = NO_ANSWERS_HELD): Promise<SelectionResult> {
  const sorted = [...tasks].sort((a, b) => (a.id < b.id ? -1 : 1));
  const index = new LocalityIndex(sorted.map((t) => ({ id: t.id, repo: t.repo, sourceFiles: t.sourceFiles, sourceDirs: t.sourceDirs })));
  const focusable = sorted.filter((t) => t.stages >= options.minFocusStages);
  const stagesOf = new Map(sorted.map((t) => [t.id, t.stages]));
  const rng = seedrandom(`${options.seed}/cohort`);
  const used = new Set<string>();
  const result: SelectionResult = { sessions: [], skipped: [], exclusions: [], interruptionReuse: {} };
  for (const group of ["near", "far"] as const) {
    // A seeded order of each repository's candidates, then take them round-robin across repositories.
    const byRepo = new Map<string, SelectableTask[]>();
    for (const t of focusable) byRepo.set(t.repo, [...(byRepo.get(t.repo) ?? []), t]);
    const queues = [...byRepo.keys()].sort().map((repo) => shuffle(byRepo.get(repo)!, rng));
    let taken = 0;
    while (taken < options.sizes[group] && queues.some((q) => q.length)) {
      for (const queue of queues) {
        if (taken >= options.sizes[group]) break;
        const focus = queue.shift();
        if (!focus || used.has(focus.id)) continue;
        const session = await sessionFor(focus, group, { index, stagesOf, options, answers, result });
        if (!session) continue;
        result.sessions.push(session);
        used.add(focus.id);
        taken++;
      }
    }
  }
  for (const s of result.sessions) for (const t of s.interruptions) result.interruptionReuse[t] = (result.interruptionReuse[t] ?? 0) + 1;
  result.sessions.sort((a, b) => (a.focus < b.focus ? -1 : 1));
  return result;
}

interface Drawing {
  index: LocalityIndex;
  stagesOf: Map<string, number>;
  options: SelectOptions;
  answers: AnswerRuleView;
  result: SelectionResult;
}

/** One focus's session in one group, or undefined (skipped, with the reason and the rule's exclusions recorded). */
async function sessionFor(focus: SelectableTask, group: LocalityClass, drawing: Drawing): Promise<SelectedSession | undefined> {
  const { index, stagesOf, options, answers, result } = drawing;
  const minStages = options.minInterruptionStages ?? 1;
  const eligible = index.eligiblePartners(focus.id, group).filter((id) => (stagesOf.get(id) ?? 0) >= minStages);
  const seed = caseSeed(options.seed, focus.id);
  // Interruptions of two requests or more first (they can be suspended and resumed); within each,
  // those whose own answer the focus's checkout does not hold (open at the same time as the focus,
  // as the session's story has it) before the others; each kind in a seeded order.
  const drawn = shuffle(eligible, seedrandom(`${seed}/interruptions`));
  const resumable = (id: string) => (stagesOf.get(id) ?? 0) >= 2;
  const concurrent = (id: string) => !answers.holds(id, focus.id);
  const ordered = [true, false].flatMap((multi) => [true, false].flatMap((open) => drawn.filter((id) => resumable(id) === multi && concurrent(id) === open)));
  const clean = ordered.filter((id) => !answers.holds(focus.id, id));
  const holding = ordered.filter((id) => answers.holds(focus.id, id));
  const exclusions: RuleExclusion[] = [];
  const exclude = (task: string, reason: RuleExclusion["reason"], detail: string) => exclusions.push({ focus: focus.id, group, task, reason, detail });
  const chosen: string[] = [];
  const derived: SelectedSession["derived_checkouts"] = [];
  for (const id of clean) {
    if (chosen.length >= options.interruptions) break;
    const cross = answers.exclusive ? crossing(id, [focus.id, ...chosen], answers) : undefined;
    if (cross) exclude(id, "answers_cross", cross);
    else chosen.push(id);
  }
  for (const id of holding) {
    if (chosen.length >= options.interruptions || !answers.revert) {
      exclude(id, "holds_focus_answer", answers.why(focus.id, id));
      continue;
    }
    const cross = answers.exclusive ? crossing(id, [focus.id, ...chosen], answers, focus.id) : undefined;
    if (cross) {
      exclude(id, "answers_cross", cross);
      continue;
    }
    const reverted = await answers.revert(focus.id, id);
    if (!reverted.ok) {
      exclude(id, "revert_not_viable", reverted.reason);
      continue;
    }
    chosen.push(id);
    derived.push({
      task_id: id,
      without: [focus.id],
      commit: reverted.commit,
      ...(reverted.rolledBack ? { rolled_back: [{ task_id: focus.id, ...reverted.rolledBack }] } : {}),
    });
  }
  result.exclusions.push(...exclusions);
  if (chosen.length < options.interruptions) {
    const ruled = exclusions.length ? `; the answer rule kept out ${exclusions.length}: ${exclusions.map((e) => `${e.task} (${e.detail})`).join("; ")}` : "";
    result.skipped.push({
      focus: focus.id,
      group,
      reason: `only ${chosen.length} eligible ${group} interruption(s) of ${minStages} request(s) or more can be used; ${options.interruptions} needed${ruled}`,
    });
    return undefined;
  }
  const members = [focus.id, ...chosen];
  const interruptionAnswers = chosen.flatMap((t) =>
    members
      .filter((x) => x !== t && answers.holds(t, x) && !derived.some((d) => d.task_id === x && d.without.includes(t)))
      .map((x) => ({ task_id: t, checkout_task: x })),
  );
  return {
    focus: focus.id,
    repo: focus.repo,
    locality: group,
    interruptions: chosen,
    case_seed: seed,
    single_request_interruptions: chosen.filter((id) => (stagesOf.get(id) ?? 0) < 2).length,
    derived_checkouts: derived,
    interruption_answers: interruptionAnswers,
  };
}

/**
 * With interruptions' answers excluded too: why `candidate` cannot join `members` (its answer is
 * in one of their checkouts, or one of theirs is in its checkout), or undefined. The focus's own
 * answer in the candidate is the caller's to judge (`reversedFocus`: it will be reversed out).
 */
function crossing(candidate: string, members: string[], answers: AnswerRuleView, reversedFocus?: string): string | undefined {
  for (const member of members) {
    if (answers.holds(candidate, member)) return `${member}'s checkout holds its answer: ${answers.why(candidate, member)}`;
    if (member !== reversedFocus && answers.holds(member, candidate)) return `its checkout holds ${member}'s answer: ${answers.why(member, candidate)}`;
  }
  return undefined;
}
