import seedrandom from "seedrandom";
import { sha256 } from "../../pipeline/canonical.ts";
import type { LocalityClass } from "../../pipeline/schemas/common.ts";
import { LocalityIndex } from "../../pipeline/locality.ts";

export interface SelectableTask {
  id: string;
  repo: string;
  sourceFiles: readonly string[];
  sourceDirs: readonly string[];
  stages: number;
}

export interface SelectedSession {
  focus: string;
  repo: string;
  locality: LocalityClass;
  interruptions: string[];
  case_seed: string;
  /** Interruptions taken with a single request because too few eligible ones had two or more (they cannot be resumed). */
  single_request_interruptions: number;
}

export interface SelectionResult {
  sessions: SelectedSession[];
  skipped: { focus: string; group: LocalityClass; reason: string }[];
  interruptionReuse: Record<string, number>;
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
 * (only they can be suspended and resumed). A focus that cannot get enough interruptions in a
 * group is skipped for it, with the reason.
 */
export function selectSessions(
  tasks: SelectableTask[],
  options: { seed: string; sizes: Record<LocalityClass, number>; interruptions: number; minFocusStages: number },
): SelectionResult {
  const sorted = [...tasks].sort((a, b) => (a.id < b.id ? -1 : 1));
  const index = new LocalityIndex(sorted.map((t) => ({ id: t.id, repo: t.repo, sourceFiles: t.sourceFiles, sourceDirs: t.sourceDirs })));
  const focusable = sorted.filter((t) => t.stages >= options.minFocusStages);
  const stagesOf = new Map(sorted.map((t) => [t.id, t.stages]));
  const rng = seedrandom(`${options.seed}/cohort`);
  const used = new Set<string>();
  const sessions: SelectedSession[] = [];
  const skipped: SelectionResult["skipped"] = [];
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
        const eligible = index.eligiblePartners(focus.id, group);
        if (eligible.length < options.interruptions) {
          skipped.push({ focus: focus.id, group, reason: `only ${eligible.length} eligible ${group} interruption(s); ${options.interruptions} needed` });
          continue;
        }
        const seed = caseSeed(options.seed, focus.id);
        // Interruptions of two requests or more first (they can be suspended and resumed), each kind in a seeded order.
        const drawn = shuffle(eligible, seedrandom(`${seed}/interruptions`));
        const multi = drawn.filter((id) => (stagesOf.get(id) ?? 0) >= 2);
        const interruptions = [...multi, ...drawn.filter((id) => (stagesOf.get(id) ?? 0) < 2)].slice(0, options.interruptions);
        const single = interruptions.filter((id) => (stagesOf.get(id) ?? 0) < 2).length;
        sessions.push({ focus: focus.id, repo: focus.repo, locality: group, interruptions, case_seed: seed, single_request_interruptions: single });
        used.add(focus.id);
        taken++;
      }
    }
  }
  const interruptionReuse: Record<string, number> = {};
  for (const s of sessions) for (const t of s.interruptions) interruptionReuse[t] = (interruptionReuse[t] ?? 0) + 1;
  return { sessions: sessions.sort((a, b) => (a.focus < b.focus ? -1 : 1)), skipped, interruptionReuse };
}
