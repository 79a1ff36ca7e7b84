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
export const ENVIRONMENT_SCHEME = 2;

export function environmentSpec(repo: string, recipe: EnvironmentRecipe, asOf: string | null): EnvironmentSpec {
  return { repo, recipe, asOf, key: hashValue({ repo, recipe, asOf, scheme: ENVIRONMENT_SCHEME }) };
}

/**
 * One environment per (repository, recipe), resolved as of the earliest pull request that uses
 * it: no task then sees a dependency released after it was opened, and tasks sharing a recipe
 * share one environment.
 */
export function planEnvironments<T extends { id: string; repo: string; recipe: EnvironmentRecipe; createdAt: string | null }>(tasks: T[]): Map<string, EnvironmentSpec> {
  const earliest = new Map<string, { repo: string; recipe: EnvironmentRecipe; asOf: string | null }>();
  for (const task of tasks) {
    const group = hashValue({ repo: task.repo, recipe: task.recipe });
    const known = earliest.get(group);
    const asOf = task.createdAt;
    if (!known) earliest.set(group, { repo: task.repo, recipe: task.recipe, asOf });
    else if (asOf && (!known.asOf || asOf < known.asOf)) known.asOf = asOf;
  }
  const byTask = new Map<string, EnvironmentSpec>();
  for (const task of tasks) {
    const group = earliest.get(hashValue({ repo: task.repo, recipe: task.recipe }))!;
    byTask.set(task.id, environmentSpec(group.repo, group.recipe, group.asOf));
  }
  return byTask;
}
