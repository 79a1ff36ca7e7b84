import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { writeFileAtomic } from "../../pipeline/atomic.ts";
import { environmentsForTasks } from "../../pipeline/profiles/environments.ts";
import type { EnvironmentSpec, PythonOffer } from "../../pipeline/executors/types.ts";
import type { Command } from "commander";
import { createLogger } from "../../pipeline/logger.ts";
import { RecordError } from "../../pipeline/engine/stage.ts";
import { type Io, requirePath, RunFailed } from "../io.ts";
import { basename, dirname, join, resolve } from "node:path";
import { acceptedPythons, choosePython, NoAcceptedPython, recipeFor } from "../../pipeline/profiles/recipes.ts";
import { environmentSpec } from "../../pipeline/executors/environment.ts";
import { createExecutor } from "../../pipeline/executors/index.ts";
import { ExecutionSettings } from "../../pipeline/engine/settings.ts";
import { MirrorCache } from "../../pipeline/git.ts";
import { freshCheckout } from "../../pipeline/checkouts/checkout.ts";
import type { Logger } from "../../pipeline/logger.ts";
import { cloneSourceOf, type LoadedProfile, loadProfiles, profileFileName } from "../../pipeline/profiles/load.ts";
import { readSplitArtifacts } from "../../pipeline/engine/artifacts.ts";
import { SplitChange } from "../../pipeline/schemas/split.ts";
import { describeFirstIssue, InputError } from "../../pipeline/validation.ts";
import { designatedTestFiles, qualificationRecord, qualifyTask } from "../../stages/qualify/run.ts";

export interface ByHandOptions {
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
  log: Logger;
}

function readSplitFile(file: string): SplitChange {
  const text = readFileSync(file, "utf8").trim();
  let raw: unknown;
  try {
    raw = JSON.parse(text.split("\n")[0]!);
  } catch (error) {
    throw new InputError(`${file}: line 1: not valid JSON (${(error as Error).message}); expected a split record, one line of artifacts/split/splits.jsonl`);
  }
  const parsed = SplitChange.safeParse(raw);
  if (!parsed.success) throw new InputError(`${file}: ${describeFirstIssue(parsed.error, raw)} (expected a split record, one line of artifacts/split/splits.jsonl)`);
  return parsed.data;
}

/**
 * The task, its profile and its environment. With a config, exactly as the qualify stage resolves
 * them (the same function over the pipeline's splits and candidates: overrides by version, the
 * as-of date of the earliest pull request sharing the recipe); without, from the split file, a
 * profile, and --version / --as-of as given.
 */
async function resolveTask(options: ByHandOptions): Promise<{ split: SplitChange; loaded: LoadedProfile; envFor: (offer: PythonOffer) => EnvironmentSpec; resolvePath: (p: string) => string; executorKind: "auto" | "docker" | "local" | "queue"; execution: ExecutionSettings }> {
  if (options.config) {
    const { config, splits, candidates, splitsPath, profiles, errors } = await readSplitArtifacts(options.config);
    const split = existsSync(options.task) ? readSplitFile(options.task) : splits.find((s) => s.task_id === options.task);
    if (!split) throw new InputError(`--task ${options.task}: no such task in ${splitsPath}`);
    const loaded = profiles.get(split.repo);
    if (!loaded) throw new InputError(errors.get(split.repo) ?? `no profile for ${split.repo} in ${config.config.profiles_dir}`);
    const envFor = (offer: PythonOffer) => {
      const planned = environmentsForTasks(splits.some((s) => s.task_id === split.task_id) ? splits : [...splits, split], candidates, profiles, offer);
      const unavailable = planned.unavailable.get(split.task_id);
      if (unavailable) throw new RecordError("build_failed", `${split.task_id}: ${unavailable.message}`, { field: "environment.python" });
      return planned.environments.get(split.task_id)!;
    };
    // the config's execution settings, its container limits included
    return { split, loaded, envFor, resolvePath: (p) => resolve(config.baseDir, p), executorKind: options.executor ?? config.config.execution.executor, execution: config.config.execution };
  }
  const split = readSplitFile(options.task);
  const profilePath = options.profile ?? join("data", "repos", profileFileName(split.repo));
  const { profiles, errors } = loadProfiles([{ path: basename(profilePath), text: readFileSync(profilePath, "utf8") }]);
  const loaded = profiles.get(split.repo);
  if (!loaded) throw new InputError(errors.values().next().value ?? `${profilePath}: not the profile of ${split.repo}`);
  const task = { id: split.task_id, ...(options.version ? { version: options.version } : {}) };
  const envFor = (offer: PythonOffer) => {
    try {
      return environmentSpec(split.repo, recipeFor(loaded.profile, task, choosePython(acceptedPythons(loaded.profile, task), offer)), options.asOf ?? null);
    } catch (error) {
      if (error instanceof NoAcceptedPython) throw new RecordError("build_failed", `${split.task_id}: ${error.message}`, { field: "environment.python" });
      throw error;
    }
  };
  return { split, loaded, envFor, resolvePath: (p) => resolve(dirname(profilePath), p), executorKind: options.executor ?? "auto", execution: ExecutionSettings.parse({}) };
}

/**
 * Qualifies one task, for a maintainer checking it by hand: every test's status in every run,
 * and the sets.
 */
export async function qualifyByHand(options: ByHandOptions) {
  const workDir = resolve(options.workDir);
  const { split, loaded, envFor, resolvePath, executorKind, execution } = await resolveTask(options);
  // By hand, one task runs here: a config naming the queue executor is read as asking for Docker's sandbox.
  if (executorKind === "queue") options.log.warn("qualify --task runs on this machine, not through the queue: using the docker executor (pass --executor to choose)");
  const executor = await createExecutor({ ...execution, executor: executorKind === "queue" ? "docker" : executorKind }, { workDir, log: options.log });
  const env = envFor(await executor.pythonOffer());
  const mirror = await new MirrorCache(join(workDir, "git")).ensure(split.repo, cloneSourceOf(split.repo, loaded, resolvePath), split.base_commit);
  const scratch = join(workDir, "scratch");
  mkdirSync(scratch, { recursive: true });
  const testArgs = options.fullSuite ? [] : designatedTestFiles(split.files);
  const checkout = (patches: { name: string; text: string }[]) => freshCheckout(mirror, split.base_commit, patches, scratch);
  const logs = join(workDir, "logs");
  const saveLog = async (name: string, text: string) => {
    const path = join(logs, `${name.replace(/[^\w.-]/g, "_")}.log`);
    await writeFileAtomic(path, text);
    return path;
  };
  const input = { id: split.task_id, baseCommit: split.base_commit, testPatch: split.test_patch, implementationPatch: split.implementation_patch, env, testArgs, runs: options.runs, checkout, mirror, saveLog };
  return qualificationRecord(input, executor.kind, await qualifyTask(executor, input, options.log));
}

/** A table for a terminal: one row a test, one column a run of each state, then its set. */
export function formatByHand(result: Awaited<ReturnType<typeof qualifyByHand>>): string {
  const setOf = (t: string) => (result.fail_to_pass.includes(t) ? "F2P" : result.pass_to_pass.includes(t) ? "P2P" : result.pass_to_fail.includes(t) ? "P2F" : result.unstable.includes(t) ? "unstable" : "F2F");
  const tests = [...new Set(result.runs.flatMap((r) => Object.keys(r.outcomes)))].sort();
  const header = ["test", ...result.runs.map((r) => `${r.state[0]}${r.run + 1}`), "set"];
  const rows = tests.map((t) => [t, ...result.runs.map((r) => r.outcomes[t] ?? "absent"), setOf(t)]);
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => r[i]!.length)));
  const lines = [header, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join("  "));
  lines.push("", `${result.task_id} (${result.executor}): ${result.kept ? "kept" : `rejected: ${result.reject_reason}: ${result.reject_detail}`}`);
  return lines.join("\n") + "\n";
}

/** `switch-swe qualify --task FILE`: the by-hand mode of the qualify command. */
export const qualifyTaskCommand = {
  addOptions(command: Command): void {
    command
      .option("--task <id|file>", "qualify one task by hand: with --config a task id (its recipe and as-of date exactly as the stage resolves them), else a split record file (one line of artifacts/split/splits.jsonl)")
      .option("--profile <file>", "with --task FILE: the repository profile (default data/repos/OWNER__NAME.json)")
      .option("--version <v>", "with --task FILE: the task's SWE-bench version, for the profile's version overrides")
      .option("--work-dir <dir>", "with --task: where environments and mirrors go", ".switch-swe/qualify")
      .option("--as-of <date>", "with --task FILE: resolve dependencies as of this date")
      .option("--full-suite", "with --task: run the whole suite, not only the touched test files")
      .option("--json", "with --task: print the result as JSON");
  },
  async run(io: Io, opts: Record<string, any>): Promise<number> {
    if (!opts.config) requirePath("--task", opts.task, "file");
    requirePath("--profile", opts.profile, "file");
    let result;
    try {
      result = await qualifyByHand({ task: opts.task, config: opts.config, profile: opts.profile, executor: opts.executor, runs: opts.runs ?? 3, workDir: opts.workDir, asOf: opts.asOf, version: opts.version, fullSuite: Boolean(opts.fullSuite), log: createLogger({ level: opts.json ? "warn" : "info", write: (line) => io.err(line + "\n") }) });
    } catch (error) {
      // The task itself could not be qualified (its environment does not build, a patch does not apply).
      if (error instanceof RecordError) throw new RunFailed(error.message);
      throw error;
    }
    io.out(opts.json ? JSON.stringify(result, null, 2) + "\n" : formatByHand(result));
    return result.kept ? 0 : 1;
  },
};
