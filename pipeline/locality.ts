import type { LocalityClass } from "./schemas/common.ts";
import type { LocalityPair } from "./schemas/locality.ts";
import { compareKeys } from "./canonical.ts";

export interface LocalityTask {
  id: string;
  repo: string;
  /** C_t */
  sourceFiles: readonly string[];
  /** D_t */
  sourceDirs: readonly string[];
}

export interface PairClass {
  eligible: boolean;
  class?: LocalityClass;
  sharedFiles: string[];
  sharedDirs: string[];
}

function intersect(a: readonly string[], b: readonly string[]): string[] {
  const set = new Set(b);
  return [...new Set(a.filter((x) => set.has(x)))].sort();
}

/** SPEC §2.6 for one pair: eligible iff C_a ∩ C_b = ∅; near iff also D_a ∩ D_b ≠ ∅, else far. */
export function classifyPair(a: LocalityTask, b: LocalityTask): PairClass {
  if (a.repo !== b.repo) throw new Error(`locality is defined only within a repository (${a.id} is ${a.repo}, ${b.id} is ${b.repo})`);
  const sharedFiles = intersect(a.sourceFiles, b.sourceFiles);
  const sharedDirs = intersect(a.sourceDirs, b.sourceDirs);
  if (sharedFiles.length) return { eligible: false, sharedFiles, sharedDirs };
  return { eligible: true, class: sharedDirs.length ? "near" : "far", sharedFiles, sharedDirs };
}

/**
 * All tasks of all repositories, indexed by directory. Any pair that shares a file also shares
 * that file's directory, so only tasks sharing a directory need comparing; every other
 * same-repository partner is far without looking. For a pool where most pairs are far this
 * turns the quadratic comparison into work proportional to the near and overlapping pairs.
 */
export class LocalityIndex {
  private readonly byId = new Map<string, LocalityTask>();
  private readonly byRepo = new Map<string, LocalityTask[]>();
  private readonly byDir = new Map<string, string[]>();

  constructor(tasks: Iterable<LocalityTask>) {
    for (const task of tasks) {
      if (this.byId.has(task.id)) throw new Error(`task ${task.id} appears twice`);
      this.byId.set(task.id, task);
      const list = this.byRepo.get(task.repo) ?? [];
      list.push(task);
      this.byRepo.set(task.repo, list);
      for (const dir of new Set(task.sourceDirs)) {
        const key = `${task.repo}\0${dir}`;
        const ids = this.byDir.get(key) ?? [];
        ids.push(task.id);
        this.byDir.set(key, ids);
      }
    }
    for (const list of this.byRepo.values()) list.sort((x, y) => compareKeys(x.id, y.id));
  }

  get(id: string): LocalityTask {
    const task = this.byId.get(id);
    if (!task) throw new Error(`unknown task ${id}`);
    return task;
  }

  repos(): string[] {
    return [...this.byRepo.keys()].sort(compareKeys);
  }

  tasksOf(repo: string): readonly LocalityTask[] {
    return this.byRepo.get(repo) ?? [];
  }

  /** Same-repository tasks sharing at least one directory with `id`, each with its pair class. */
  closePartners(id: string): Map<string, PairClass> {
    const task = this.get(id);
    const result = new Map<string, PairClass>();
    for (const dir of new Set(task.sourceDirs)) {
      for (const other of this.byDir.get(`${task.repo}\0${dir}`) ?? []) {
        if (other !== id && !result.has(other)) result.set(other, classifyPair(task, this.get(other)));
      }
    }
    return result;
  }

  /** Partners of `id` eligible in `group`, sorted by id. */
  eligiblePartners(id: string, group: LocalityClass): string[] {
    const close = this.closePartners(id);
    if (group === "near") {
      return [...close]
        .filter(([, c]) => c.eligible && c.class === "near")
        .map(([other]) => other)
        .sort(compareKeys);
    }
    const repo = this.get(id).repo;
    return this.tasksOf(repo)
      .filter((t) => t.id !== id && !close.has(t.id))
      .map((t) => t.id);
  }

  /** Counts of near, far and ineligible pairs per repository, without listing far pairs. */
  counts(): Map<string, { near: number; far: number; ineligible: number }> {
    const result = new Map<string, { near: number; far: number; ineligible: number }>();
    for (const repo of this.repos()) {
      const tasks = this.tasksOf(repo);
      let near = 0;
      let ineligible = 0;
      for (const task of tasks) {
        for (const [other, c] of this.closePartners(task.id)) {
          if (compareKeys(task.id, other) >= 0) continue;
          if (!c.eligible) ineligible++;
          else near++;
        }
      }
      const all = (tasks.length * (tasks.length - 1)) / 2;
      result.set(repo, { near, far: all - near - ineligible, ineligible });
    }
    return result;
  }

  /** Every same-repository pair (task_a < task_b) with its class: the locality table. */
  *pairs(): Generator<LocalityPair> {
    for (const repo of this.repos()) {
      const tasks = this.tasksOf(repo);
      for (let i = 0; i < tasks.length; i++) {
        const a = tasks[i]!;
        const close = this.closePartners(a.id);
        for (let j = i + 1; j < tasks.length; j++) {
          const b = tasks[j]!;
          const c = close.get(b.id);
          yield {
            repo,
            task_a: a.id,
            task_b: b.id,
            eligible: c ? c.eligible : true,
            ...(c ? (c.class ? { class: c.class } : {}) : { class: "far" as const }),
            shared_files: c?.sharedFiles ?? [],
            shared_dirs: c?.sharedDirs ?? [],
          };
        }
      }
    }
  }
}
