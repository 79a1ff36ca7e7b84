import { hashValue } from "../canonical.ts";
import type { EnvironmentSpec, PythonOffer } from "../executors/types.ts";
import { environmentSpec } from "../executors/environment.ts";
import type { Candidate } from "../schemas/candidate.ts";
import type { EnvironmentRecipe } from "../schemas/repo-profile.ts";
import type { SplitChange } from "../schemas/split.ts";
import type { LoadedProfile } from "./load.ts";
import { acceptedPythons, choosePython, NoAcceptedPython, recipeFor } from "./recipes.ts";

/** The date an environment resolves as of: its earliest task's, or the recipe's floor when that is later. */
export function effectiveAsOf(tasksAsOf: string | null, notBefore: string | null): string | null {
  if (!notBefore) return tasksAsOf;
  const floor = /^\d{4}-\d{2}-\d{2}$/.test(notBefore) ? `${notBefore}T00:00:00Z` : notBefore;
  return !tasksAsOf || Date.parse(floor) > Date.parse(tasksAsOf) ? floor : tasksAsOf;
}

/**
 * One environment per (repository, recipe, SWE-bench version), resolved as of the earliest pull
 * request in it: no task sees a dependency released after it was opened, tasks sharing a recipe
 * and a version share one environment, and a 2023 task does not get 2019's dependencies because
 * its recipe is the same as an old task's. Tasks without a version group by recipe alone.
 */
export function planEnvironments<T extends { id: string; repo: string; recipe: EnvironmentRecipe; createdAt: string | null; version?: string }>(
  tasks: T[],
): Map<string, EnvironmentSpec> {
  const groupOf = (task: T) => hashValue({ repo: task.repo, recipe: task.recipe, version: task.version ?? null });
  const earliest = new Map<string, { repo: string; recipe: EnvironmentRecipe; asOf: string | null }>();
  for (const task of tasks) {
    const group = groupOf(task);
    const known = earliest.get(group);
    const asOf = task.createdAt;
    if (!known) earliest.set(group, { repo: task.repo, recipe: task.recipe, asOf });
    else if (asOf && (!known.asOf || asOf < known.asOf)) known.asOf = asOf;
  }
  const byTask = new Map<string, EnvironmentSpec>();
  for (const task of tasks) {
    const group = earliest.get(groupOf(task))!;
    byTask.set(task.id, environmentSpec(group.repo, group.recipe, effectiveAsOf(group.asOf, group.recipe.as_of_not_before)));
  }
  return byTask;
}

/**
 * Each task's environment: its repository's recipe (with overrides) on the Python chosen for it
 * from what the executor offers, as of the earliest PR sharing it; or, for a task whose recipe
 * accepts no Python the executor has, why not (in `unavailable`).
 */
export function environmentsForTasks(
  splits: SplitChange[],
  candidates: Map<string, Candidate>,
  profiles: Map<string, LoadedProfile>,
  offer: PythonOffer,
): { environments: Map<string, EnvironmentSpec>; unavailable: Map<string, NoAcceptedPython> } {
  const unavailable = new Map<string, NoAcceptedPython>();
  const planned: { id: string; repo: string; recipe: EnvironmentRecipe; createdAt: string | null; version?: string }[] = [];
  for (const s of splits) {
    const loaded = profiles.get(s.repo);
    if (!loaded) continue;
    const task = { id: s.task_id, ...(candidates.get(s.task_id)?.version !== undefined ? { version: candidates.get(s.task_id)!.version! } : {}) };
    try {
      const recipe = recipeFor(loaded.profile, task, choosePython(acceptedPythons(loaded.profile, task), offer));
      planned.push({ repo: s.repo, recipe, createdAt: candidates.get(s.task_id)?.created_at ?? null, ...task });
    } catch (error) {
      if (!(error instanceof NoAcceptedPython)) throw error;
      unavailable.set(s.task_id, error);
    }
  }
  return { environments: planEnvironments(planned), unavailable };
}
