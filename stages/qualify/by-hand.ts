import type { AnyStage } from "../../pipeline/engine/stage.ts";
import { existsSync, readFileSync } from "node:fs";
import { effectiveAsOf, EnvironmentError } from "../../pipeline/profiles/environments.ts";
import type { EnvironmentSpec, PythonOffer } from "../../pipeline/executors/types.ts";

import { RecordError } from "../../pipeline/engine/stage.ts";
import { basename, dirname, join, resolve } from "node:path";
import { acceptedPythons, choosePython, NoAcceptedPython, recipeFor } from "../../pipeline/profiles/recipes.ts";
import { environmentSpec } from "../../pipeline/executors/environment.ts";

import type { Logger } from "../../pipeline/logger.ts";
import { type LoadedProfile, loadProfiles, profileFileName } from "../../pipeline/profiles/load.ts";
import { TaskResources } from "../../pipeline/profiles/resources.ts";
import { Project } from "../../pipeline/project/project.ts";
import { readSplitArtifacts } from "../../pipeline/project/split-artifacts.ts";
import { SplitChange } from "../../pipeline/schemas/split.ts";
import { InputError, readReviewed } from "../../pipeline/validation.ts";
import { designatedTestFiles, qualificationRecord, qualifyTask, qualifyTaskInput } from "../../pipeline/qualification/qualify-task.ts";

export interface ByHandOptions {
  /** The stages a config is read with (the command line's registry). */
  stages: AnyStage[];
  /** A split record's file, or (with `config`) a task id of the pipeline. */
  task: string;
  /** A pipeline config: the task's recipe and as-of date then come exactly as the qualify stage resolves them. */
  config?: string;
  profile?: string;
  executor?: "auto" | "docker" | "local";
  runs: number;
  workDir: string;
  asOf?: string;
  version?: string;
  fullSuite: boolean;
  /** Local copies of the repositories (`--mirrors`), cloned from instead of the profiles' clone_url. */
  mirrors?: string;
  log: Logger;
}

const mirrorsOverride = (options: ByHandOptions) => (options.mirrors ? { mirrors: options.mirrors } : {});

function readSplitFile(file: string): SplitChange {
  const text = readFileSync(file, "utf8").trim();
  return readReviewed(`${file}: line 1`, SplitChange, {
    text: text.split("\n")[0]!,
    format: "json",
    what: "a split record, one line of artifacts/split/splits.jsonl",
  });
}

/** A task of a pipeline: its split, its profile and its environment. */
export interface PlannedTask {
  split: SplitChange;
  loaded: LoadedProfile;
  envFor: (offer: PythonOffer) => EnvironmentSpec;
  /** Its repository's profile and mirrors, in the work directory it is qualified in. */
  resources: TaskResources;
}

/**
 * A split of a pipeline's task (the pipeline's own record, or one made anew from the task's
 * record) with its profile, and its environment planned exactly as the qualify stage plans it:
 * over the pipeline's splits, this one in place of the task's.
 */
export function inPipeline(
  pipeline: Project,
  split: SplitChange,
  { splits, profiles, errors }: Pick<Awaited<ReturnType<typeof readSplitArtifacts>>, "splits" | "profiles" | "errors">,
): PlannedTask {
  const resources = new TaskResources(
    { profiles, errors, dir: pipeline.settings.profiles_dir },
    () => pipeline.workspace.mirrors,
    (p) => resolve(pipeline.baseDir, p),
  );
  const loaded = resources.profileOf(split.repo);
  const envFor = (offer: PythonOffer) =>
    asRecordError(split.task_id, () =>
      resources.planEnvironments([...splits.filter((s) => s.task_id !== split.task_id), split], offer).environmentOf(split.task_id),
    );
  return { split, loaded, envFor, resources };
}

/** A task with no environment is the record's reject here as in the qualify stage (where the engine makes it: record-map.ts). */
function asRecordError<T>(taskId: string, plan: () => T): T {
  try {
    return plan();
  } catch (error) {
    if (error instanceof EnvironmentError) throw new RecordError(error.reason, `${taskId}: ${error.message}`, { field: error.field });
    if (error instanceof NoAcceptedPython) throw new RecordError("build_failed", `${taskId}: ${error.message}`, { field: "environment.python" });
    throw error;
  }
}

/**
 * The task, its profile and its environment. With a config, exactly as the qualify stage resolves
 * them (the same function over the pipeline's splits and candidates: overrides by version, the
 * as-of date of the earliest pull request sharing the recipe); without, from the split file and
 * a profile, its version and as-of date the record's own unless --version / --as-of say otherwise.
 */
async function resolveTask(options: ByHandOptions): Promise<
  PlannedTask & {
    /** The pipeline the task is qualified in: the config's settings (its container limits included), working in --work-dir. */
    project: Project;
  }
> {
  if (options.config) {
    const pipeline = Project.open(options.config, { stages: options.stages, log: options.log, overrides: mirrorsOverride(options) });
    const { splits, splitsPath, profiles, errors } = await readSplitArtifacts(pipeline);
    const split = existsSync(options.task) ? readSplitFile(options.task) : splits.find((s) => s.task_id === options.task);
    if (!split) throw new InputError(`<task> ${options.task}: no such task in ${splitsPath}`);
    // Planned over the pipeline's splits, its mirrors those of the work directory it is qualified in.
    const project = workingIn(pipeline, options);
    return { ...inPipeline(project, split, { splits, profiles, errors }), project };
  }
  const split = readSplitFile(options.task);
  const profilePath = options.profile ?? join("data", "repos", profileFileName(split.repo));
  const { profiles, errors } = loadProfiles([{ path: basename(profilePath), text: readFileSync(profilePath, "utf8") }]);
  const loaded = profiles.get(split.repo);
  if (!loaded) throw new InputError(errors.values().next().value ?? `${profilePath}: not the profile of ${split.repo}`);
  // The record's own version and date unless given: its environment is then the stage's for a
  // task alone (the stage dates an environment by the earliest task sharing its recipe).
  const version = options.version ?? split.version;
  const task = { id: split.task_id, ...(version ? { version } : {}) };
  const envFor = (offer: PythonOffer) =>
    asRecordError(split.task_id, () => {
      const recipe = recipeFor(loaded.profile, task, choosePython(acceptedPythons(loaded.profile, task), offer));
      return environmentSpec(split.repo, recipe, options.asOf ?? effectiveAsOf(split.created_at, recipe.as_of_not_before));
    });
  const project = workingIn(
    Project.of(
      { name: "qualify", seed: "qualify", workDir: options.workDir, baseDir: ".", stageConfigs: {} },
      { stages: options.stages, log: options.log, overrides: mirrorsOverride(options) },
    ),
    options,
  );
  const resources = new TaskResources(
    { profiles, errors },
    () => project.workspace.mirrors,
    (p) => resolve(dirname(profilePath), p),
  );
  return { split, loaded, envFor, resources, project };
}

/**
 * The pipeline, working in the by-hand work directory with the executor asked for. One task runs
 * here: a config naming the queue executor is read as asking for Docker's sandbox.
 */
function workingIn(pipeline: Project, options: ByHandOptions): Project {
  const executor = options.executor ?? pipeline.settings.execution.executor;
  if (executor === "queue") options.log.warn("qualify task runs on this machine, not through the queue: using the docker executor (pass --executor to choose)");
  return pipeline.elsewhere(options.workDir, { executor: executor === "queue" ? "docker" : executor });
}

/**
 * Qualifies one task, for a maintainer checking it by hand: every test's status in every run,
 * and the sets.
 */
export async function qualifyByHand(options: ByHandOptions) {
  const { project, ...task } = await resolveTask(options);
  try {
    const { input, executor, result } = await qualifyPlanned(project, task, {
      runs: options.runs,
      fullSuite: options.fullSuite,
      logGroup: "qualify",
      log: options.log,
    });
    return qualificationRecord(input, executor, result);
  } finally {
    await project.close();
  }
}

/**
 * Qualifies a planned task in a project's workspace (its executor, mirrors and scratch), every
 * state as the qualify stage runs it; a failed run's log goes under logs/<logGroup>/.
 */
export async function qualifyPlanned(
  project: Project,
  { split, loaded, envFor, resources }: PlannedTask,
  run: { runs: number; fullSuite: boolean; logGroup: string; log: Logger },
) {
  const { workspace } = project;
  const executor = await workspace.executor();
  const env = envFor(await executor.pythonOffer());
  const mirror = await resources.mirrorAt(split.repo, split.base_commit);
  const testArgs = run.fullSuite ? [] : designatedTestFiles(split.files, loaded.profile.classification.test_modules);
  const checkout = (patches: { name: string; text: string }[]) => workspace.checkout(mirror, split.base_commit, patches);
  const saveLog = (name: string, text: string) => workspace.saveLog(run.logGroup, name, text);
  const input = qualifyTaskInput(split, { env, testArgs, runs: run.runs, checkout, mirror, saveLog });
  return { input, executor: executor.kind, result: await qualifyTask(executor, input, run.log) };
}

/** A table for a terminal: one row a test, one column a run of each state, then its set. */
export function formatByHand(result: Awaited<ReturnType<typeof qualifyByHand>>): string {
  const setOf = (t: string) =>
    result.fail_to_pass.includes(t)
      ? "F2P"
      : result.pass_to_pass.includes(t)
        ? "P2P"
        : result.pass_to_fail.includes(t)
          ? "P2F"
          : result.unstable.includes(t)
            ? "unstable"
            : "F2F";
  const tests = [...new Set(result.runs.flatMap((r) => Object.keys(r.outcomes)))].sort();
  const header = ["test", ...result.runs.map((r) => `${r.state[0]}${r.run + 1}`), "set"];
  const rows = tests.map((t) => [t, ...result.runs.map((r) => r.outcomes[t] ?? "absent"), setOf(t)]);
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => r[i]!.length)));
  const lines = [header, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join("  "));
  lines.push("", `${result.task_id} (${result.executor}): ${result.kept ? "kept" : `rejected: ${result.reject_reason}: ${result.reject_detail}`}`);
  return lines.join("\n") + "\n";
}
