import seedrandom from "seedrandom";
import type { SelectedSession } from "../../pipeline/schemas/selection.ts";
import { SessionSpec, type ScheduledRequest } from "../../pipeline/schemas/session.ts";

/** A request slot: which task, which of its stages (1-based), or the focus's finalization. */
export interface Slot {
  task: string;
  stage?: number;
  finalization: boolean;
}

export interface ScheduleInput {
  focus: { id: string; stages: number };
  interruptions: { id: string; stages: number }[];
  caseSeed: string;
}

export interface Schedules {
  control: Slot[];
  switched: Slot[];
  /** How many requests of each interruption's prefix the switched condition uses. */
  prefixes: Record<string, number>;
}

export class ScheduleError extends Error {
  override name = "ScheduleError";
}

type Rng = () => number;
const pickInt = (rng: Rng, lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
function shuffle<T>(items: T[], rng: Rng): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * How much of an interruption a session works on: most of it (its last request at most is left
 * for later), so the interruptions are real work between focus returns, as the study's sessions
 * of 22 requests are; two requests or more where it is to be suspended and resumed.
 */
function prefixLength(stages: number, resumable: boolean, rng: Rng): number {
  return pickInt(rng, Math.max(resumable ? 2 : 1, stages - 1), stages);
}

/**
 * SPEC §2.8. Control: the focus's stages, then finalization. Switched: the same, with an ordered
 * prefix of every interruption's requests divided into chunks placed in the gaps between focus
 * stages (in increasing gap order), such that every gap holds interruption work and an
 * interruption with two or more requests is suspended and resumed (its prefix two requests or
 * more, in two chunks or more) whenever there are two or more gaps. Prefix lengths, chunking and
 * within-gap order come from the case seed alone.
 */
export function buildSchedules(input: ScheduleInput): Schedules {
  const rng = seedrandom(input.caseSeed);
  const k = input.focus.stages;
  if (k < 2) throw new ScheduleError(`focus ${input.focus.id} has ${k} stage(s); a focus needs at least 2`);
  const gaps = k - 1;
  // With two or more gaps, an interruption of two or more requests is suspended and resumed: its
  // prefix has at least two requests, so it can be cut into two chunks.
  const resumable = (t: { stages: number }) => gaps >= 2 && t.stages >= 2;
  const items = input.interruptions.map((t) => ({ ...t, prefix: prefixLength(t.stages, resumable(t), rng) }));
  // Enough prefix to put work in every gap: grow prefixes (within each task's stages) if needed.
  const capacity = () => items.reduce((n, t) => n + Math.min(t.prefix, gaps), 0);
  for (const t of shuffle(items, rng)) while (capacity() < gaps && t.prefix < t.stages) t.prefix++;
  if (capacity() < gaps)
    throw new ScheduleError(`focus ${input.focus.id} has ${gaps} gaps but its interruptions offer only ${capacity()} requests to fill them`);

  // Chunks per interruption: at least two when it can be suspended and resumed.
  const chunks = items.map((t) => {
    const upper = Math.min(t.prefix, gaps);
    const lower = resumable(t) ? 2 : 1;
    return pickInt(rng, lower, upper);
  });
  for (const i of shuffle(
    items.map((_, i) => i),
    rng,
  )) {
    while (chunks.reduce((a, b) => a + b, 0) < gaps && chunks[i]! < Math.min(items[i]!.prefix, gaps)) chunks[i]!++;
  }
  // Assign gaps: first cover every gap (most remaining chunks first), then spread the rest.
  const assigned: Set<number>[] = items.map(() => new Set());
  for (const gap of shuffle(
    Array.from({ length: gaps }, (_, g) => g),
    rng,
  )) {
    const candidates = items.map((_, i) => i).filter((i) => assigned[i]!.size < chunks[i]! && !assigned[i]!.has(gap));
    if (!candidates.length) throw new ScheduleError(`cannot cover gap ${gap + 1} of ${input.focus.id}`);
    const most = Math.max(...candidates.map((i) => chunks[i]! - assigned[i]!.size));
    const best = candidates.filter((i) => chunks[i]! - assigned[i]!.size === most);
    assigned[best[Math.floor(rng() * best.length)]!]!.add(gap);
  }
  items.forEach((_, i) => {
    const free = shuffle(
      Array.from({ length: gaps }, (_, g) => g).filter((g) => !assigned[i]!.has(g)),
      rng,
    );
    while (assigned[i]!.size < chunks[i]!) assigned[i]!.add(free.pop()!);
  });

  // Split each prefix into its chunks (consecutive, non-empty) in gap order.
  const perGap: Slot[][][] = Array.from({ length: gaps }, () => []);
  items.forEach((t, i) => {
    const gapsOfT = [...assigned[i]!].sort((a, b) => a - b);
    const cuts = shuffle(
      Array.from({ length: t.prefix - 1 }, (_, c) => c + 1),
      rng,
    )
      .slice(0, gapsOfT.length - 1)
      .sort((a, b) => a - b);
    const bounds = [0, ...cuts, t.prefix];
    gapsOfT.forEach((gap, c) => {
      const slots: Slot[] = [];
      for (let s = bounds[c]! + 1; s <= bounds[c + 1]!; s++) slots.push({ task: t.id, stage: s, finalization: false });
      perGap[gap]!.push(slots);
    });
  });

  const control: Slot[] = [];
  for (let s = 1; s <= k; s++) control.push({ task: input.focus.id, stage: s, finalization: false });
  control.push({ task: input.focus.id, finalization: true });
  const switched: Slot[] = [];
  for (let s = 1; s <= k; s++) {
    switched.push({ task: input.focus.id, stage: s, finalization: false });
    if (s <= gaps) for (const chunk of shuffle(perGap[s - 1]!, rng)) switched.push(...chunk);
  }
  switched.push({ task: input.focus.id, finalization: true });
  return { control, switched, prefixes: Object.fromEntries(items.map((t) => [t.id, t.prefix])) };
}

/** Checkout paths for the session's five tasks: a seeded permutation, so the focus is not always first. */
export function assignCheckouts(tasks: string[], paths: string[], caseSeed: string): Map<string, string> {
  if (paths.length < tasks.length) throw new ScheduleError(`${tasks.length} tasks need ${tasks.length} checkout paths; ${paths.length} configured`);
  const order = shuffle(paths, seedrandom(`${caseSeed}/checkouts`));
  return new Map(tasks.map((t, i) => [t, order[i]!]));
}

/** What a session's specification is built from: its selection, its tasks, and the benchmark's settings. */
export interface SessionSpecInput {
  session: Pick<SelectedSession, "focus" | "repo" | "locality" | "interruptions" | "case_seed"> & { derived_checkouts?: SelectedSession["derived_checkouts"] };
  benchmark: string;
  seed: string;
  /** Each member task's number of requests, and its base commit. */
  task: (id: string) => { stages: number; baseCommit: string };
  /** The text of a slot's request (a stage's request, or the finalization). */
  text: (slot: Slot) => string;
  /** The checkout paths a session draws from (the config's session settings). */
  checkoutPaths: string[];
  budget: SessionSpec["budget"];
}

/**
 * A session's specification: its schedules in both conditions over role-neutral checkouts drawn
 * by its case seed, the one way it is built (the schedule stage, and the benchmarks and tests
 * that make sessions of synthetic tasks). ScheduleError when the tasks cannot make one.
 */
export function sessionSpec({ session, benchmark, seed, task, text, checkoutPaths, budget }: SessionSpecInput): SessionSpec {
  const schedules = buildSchedules({
    focus: { id: session.focus, stages: task(session.focus).stages },
    interruptions: session.interruptions.map((id) => ({ id, stages: task(id).stages })),
    caseSeed: session.case_seed,
  });
  const members = [session.focus, ...session.interruptions];
  const checkout = assignCheckouts(members, checkoutPaths, session.case_seed);
  const toRequest = (slot: Slot): ScheduledRequest => ({
    task_id: slot.task,
    ...(slot.stage ? { stage: slot.stage } : {}),
    finalization: slot.finalization,
    message: { repository: session.repo, checkout: checkout.get(slot.task)!, text: text(slot) },
  });
  return SessionSpec.parse({
    session_id: `session-${session.focus}`,
    benchmark,
    repo: session.repo,
    focus: session.focus,
    interruptions: session.interruptions,
    locality: session.locality,
    seeds: { benchmark: seed, case: session.case_seed },
    checkouts: members
      .map((id) => {
        const derived = session.derived_checkouts?.find((d) => d.task_id === id);
        return {
          path: checkout.get(id)!,
          task_id: id,
          base_commit: task(id).baseCommit,
          ...(derived
            ? { derived: { without: derived.without, commit: derived.commit, ...(derived.rolled_back ? { rolled_back: derived.rolled_back } : {}) } }
            : {}),
        };
      })
      .sort((a, b) => (a.path < b.path ? -1 : 1)),
    budget,
    conditions: { control: schedules.control.map(toRequest), switched: schedules.switched.map(toRequest) },
  });
}
