import { hashValue } from "../canonical.ts";
import type { EnvironmentSpec, PythonOffer } from "../executors/types.ts";
import { environmentSpec } from "../executors/environment.ts";
import type { QualificationRecord } from "../schemas/qualification.ts";
import type { Task } from "../schemas/task.ts";
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
 * A task's environment cannot be had: its recipe accepts no Python the executor offers (reason
 * `build_failed`, field `environment.python`), or the environment a stage reads back from qualify's
 * record is not the one qualify ran in (`malformed_record`, field `environment_key`). The engine turns
 * it into the record's reject, remembered like any fact about the inputs (record-map.ts).
 */
export class EnvironmentError extends Error {
  override name = "EnvironmentError";

  constructor(
    readonly reason: "build_failed" | "malformed_record",
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

/**
 * The environments of a pipeline's tasks, planned once over all of them (planEnvironments): what
 * qualify runs each task in, and what `images build` and `qualify task` build and run in too.
 * Later stages read the planned environment back from qualify's record (recordedEnvironment).
 */
export class EnvironmentPlan {
  constructor(
    private readonly environments: Map<string, EnvironmentSpec>,
    private readonly unavailable: Map<string, NoAcceptedPython>,
  ) {}

  /** The task's environment; one whose recipe accepts no Python the executor has is an EnvironmentError naming `environment.python`. */
  environmentOf(taskId: string): EnvironmentSpec {
    const env = this.environments.get(taskId);
    if (env) return env;
    throw new EnvironmentError("build_failed", this.unavailable.get(taskId)?.message ?? "no environment was planned", "environment.python");
  }

  /** The task's environment, or undefined when it has none (why: `unavailableFor`). */
  planned(taskId: string): EnvironmentSpec | undefined {
    return this.environments.get(taskId);
  }

  /** Why a task has no environment, when its recipe accepts no Python the executor has. */
  unavailableFor(taskId: string): NoAcceptedPython | undefined {
    return this.unavailable.get(taskId);
  }

  /** What a record's cached result depends on: its environment's key, else why it has none. */
  dependency(taskId: string): string | undefined {
    return this.environments.get(taskId)?.key ?? this.unavailable.get(taskId)?.message;
  }

  /** How many distinct environments the plan holds. */
  get size(): number {
    return new Set([...this.environments.values()].map((e) => e.key)).size;
  }
}

/**
 * Each task's environment: its repository's recipe (with overrides, by the split's version) on the
 * Python chosen for it from what the executor offers, as of the earliest PR sharing it (the split's
 * created_at); or, for a task whose recipe
 * accepts no Python the executor has, why not.
 */
export function environmentsForTasks(splits: SplitChange[], profiles: Map<string, LoadedProfile>, offer: PythonOffer): EnvironmentPlan {
  const unavailable = new Map<string, NoAcceptedPython>();
  const planned: { id: string; repo: string; recipe: EnvironmentRecipe; createdAt: string | null; version?: string }[] = [];
  for (const s of splits) {
    const loaded = profiles.get(s.repo);
    if (!loaded) continue;
    const task = { id: s.task_id, ...(s.version !== undefined ? { version: s.version } : {}) };
    try {
      const recipe = recipeFor(loaded.profile, task, choosePython(acceptedPythons(loaded.profile, task), offer));
      planned.push({ repo: s.repo, recipe, createdAt: s.created_at, ...task });
    } catch (error) {
      if (!(error instanceof NoAcceptedPython)) throw error;
      unavailable.set(s.task_id, error);
    }
  }
  return new EnvironmentPlan(planEnvironments(planned), unavailable);
}

/**
 * The environment a task was qualified in, read back from what was recorded rather than planned
 * again: the task's recipe (reconstruct's `snapshot.environment`, on the Python qualify ran) as of
 * qualify's `as_of`. Its key must be the one qualify's record holds; any other is an
 * EnvironmentError naming the record and the field.
 */
export function recordedEnvironment(task: Task, qualification: QualificationRecord | undefined): EnvironmentSpec {
  const where = `qualify's qualifications, record ${task.id}`;
  if (!qualification) throw new EnvironmentError("malformed_record", `${where}: there is none`, "task_id");
  const env = environmentSpec(task.snapshot.repo, task.snapshot.environment, qualification.as_of);
  if (env.key !== qualification.environment_key)
    throw new EnvironmentError(
      "malformed_record",
      `${where}, field environment_key: qualified in environment ${qualification.environment_key}, but the task's recipe (snapshot.environment) as of ${qualification.as_of ?? "no date"} is ${env.key}`,
      "environment_key",
    );
  return env;
}
