import { hashValue } from "../canonical.ts";
import type { RepoProfile } from "../schemas/repo-profile.ts";
import { EnvironmentRecipe, type RecipePatch } from "../schemas/repo-profile.ts";
import type { EnvironmentSpec } from "./types.ts";

/**
 * An override applied onto a recipe field by field: a field the override leaves out keeps the
 * recipe's value, and the two maps (`as_of_exceptions`, `build_tools`) merge key by key.
 */
export function applyRecipePatch(recipe: EnvironmentRecipe, patch: RecipePatch): EnvironmentRecipe {
  const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
  return EnvironmentRecipe.parse({
    ...recipe,
    ...defined,
    as_of_exceptions: { ...recipe.as_of_exceptions, ...patch.as_of_exceptions },
    build_tools: { ...recipe.build_tools, ...Object.fromEntries(Object.entries(patch.build_tools ?? {}).filter(([, v]) => v !== undefined)) },
  });
}

/** The recipe for one task: the profile's, with every matching override (by version or task id) applied in order. */
export function recipeFor(profile: RepoProfile, task: { id: string; version?: string }): EnvironmentRecipe {
  let recipe = profile.environment;
  for (const override of profile.environment_overrides) {
    if (override.tasks.includes(task.id) || (task.version !== undefined && override.versions.includes(task.version))) {
      recipe = applyRecipePatch(recipe, override.recipe);
    }
  }
  return recipe;
}

/**
 * The version of how a recipe becomes an environment (recipe-scripts.ts). It joins every
 * environment's key: a change in how environments are built must not reuse images or virtual
 * environments built the old way. Bump it with any change to what the build scripts install.
 */
export const ENVIRONMENT_SCHEME = 4;

export function environmentSpec(repo: string, recipe: EnvironmentRecipe, asOf: string | null): EnvironmentSpec {
  return { repo, recipe, asOf, key: hashValue({ repo, recipe, asOf, scheme: ENVIRONMENT_SCHEME }) };
}

/**
 * One environment per (repository, recipe, SWE-bench version), resolved as of the earliest pull
 * request in it: no task sees a dependency released after it was opened, tasks sharing a recipe
 * and a version share one environment, and a 2023 task does not get 2019's dependencies because
 * its recipe is the same as an old task's. Tasks without a version group by recipe alone.
 */
export function planEnvironments<T extends { id: string; repo: string; recipe: EnvironmentRecipe; createdAt: string | null; version?: string }>(tasks: T[]): Map<string, EnvironmentSpec> {
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
    byTask.set(task.id, environmentSpec(group.repo, group.recipe, group.asOf));
  }
  return byTask;
}
