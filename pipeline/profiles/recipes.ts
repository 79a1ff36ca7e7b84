/**
 * A profile's recipe for one task: its overrides applied (by version, task id, and the Python
 * chosen), and the choice of Python from what an executor offers.
 */
import type { RepoProfile } from "../schemas/repo-profile.ts";
import { EnvironmentRecipe, ProfileRecipe, type RecipePatch } from "../schemas/repo-profile.ts";
import type { PythonOffer } from "../executors/types.ts";

/**
 * An override applied onto a recipe field by field: a field the override leaves out keeps the
 * recipe's value, and two maps (`as_of_exceptions`, `build_tools`) merge key by key; `test_env`
 * is replaced whole.
 */
export function applyRecipePatch(recipe: ProfileRecipe, patch: RecipePatch): ProfileRecipe {
  const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
  const applied = ProfileRecipe.parse({
    ...recipe,
    ...defined,
    as_of_exceptions: { ...recipe.as_of_exceptions, ...patch.as_of_exceptions },
    build_tools: { ...recipe.build_tools, ...Object.fromEntries(Object.entries(patch.build_tools ?? {}).filter(([, v]) => v !== undefined)) },
  });
  // No variables is no test_env at all, so that the recipe (and its environment's key) is the one it would be without.
  if (applied.test_env && !Object.keys(applied.test_env).length) delete applied.test_env;
  return applied;
}

export type TaskRef = { id: string; version?: string };

/** Whether an override names this task (by id or SWE-bench version); one that names only Pythons names every task. */
function overrideNames(override: RepoProfile["environment_overrides"][number], task: TaskRef): boolean {
  if (!override.versions.length && !override.tasks.length) return true;
  return override.tasks.includes(task.id) || (task.version !== undefined && override.versions.includes(task.version));
}

/** The profile's recipe for one task before its Python is chosen: every override naming it by version or id, in order. */
function taskRecipe(profile: RepoProfile, task: TaskRef): ProfileRecipe {
  let recipe = profile.environment;
  for (const override of profile.environment_overrides) {
    if (!override.pythons.length && overrideNames(override, task)) recipe = applyRecipePatch(recipe, override.recipe);
  }
  return recipe;
}

/** The Python versions a task's recipe accepts, in order of preference. */
export function acceptedPythons(profile: RepoProfile, task: TaskRef): string[] {
  const { python } = taskRecipe(profile, task);
  return typeof python === "string" ? [python] : [...new Set(python)];
}

/**
 * The recipe for one task on a chosen Python (by default the first it accepts): the profile's,
 * with every matching override (by version or task id) applied in order, then the overrides for
 * that Python. A Python the recipe does not accept is a caller's error.
 */
export function recipeFor(profile: RepoProfile, task: TaskRef, python?: string): EnvironmentRecipe {
  const accepted = acceptedPythons(profile, task);
  const chosen = python ?? accepted[0]!;
  if (!accepted.includes(chosen))
    throw new Error(`${task.id}: the recipe of ${profile.repo} does not accept Python ${chosen} (it accepts ${accepted.join(", ")})`);
  let recipe = taskRecipe(profile, task);
  for (const override of profile.environment_overrides) {
    if (override.pythons.includes(chosen) && overrideNames(override, task)) recipe = applyRecipePatch(recipe, override.recipe);
  }
  return EnvironmentRecipe.parse({ ...recipe, python: chosen, python_accepted: accepted.length > 1 ? accepted : [] });
}

/** A recipe accepts no Python the executor can give: a property of this setup and the recipe, said with both lists. */
export class NoAcceptedPython extends Error {
  override name = "NoAcceptedPython";
}

/**
 * The Python a task runs on: where uv downloads can be had, the first accepted (the era's own);
 * else the first accepted that the executor has installed. None: NoAcceptedPython, naming both.
 */
export function choosePython(accepted: string[], offer: PythonOffer): string {
  if (offer.downloads) return accepted[0]!;
  const found = accepted.find((v) => offer.installed.includes(v));
  if (found) return found;
  throw new NoAcceptedPython(
    `the recipe accepts Python ${accepted.join(", ")}; the executor offers ${offer.installed.join(", ") || "none"} (${offer.describe}) and no uv-managed download (none can be had from here): add a fallback the executor offers to the recipe's python list, or provide an interpreter of one of those versions`,
  );
}
