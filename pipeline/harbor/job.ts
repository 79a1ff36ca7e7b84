import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import type { LoadedReport } from "../report/aggregate.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import type { ClassificationRules } from "../schemas/repo-profile.ts";
import { Condition, type SessionSpec } from "../schemas/session.ts";
import { readListedSessions } from "../project/listed-sessions.ts";
import { InputError } from "../validation.ts";
import { earlierTaskDirName, HARBOR_JOB, taskDirName } from "./layout.ts";
import { type BenchmarkView, loadHarborTrial } from "./trial.ts";

/*
 * Harbor jobs as verification reports (`switch-swe report --harbor DIR`): a job directory holds
 * config.json and one directory per trial (result.json, steps/<step>/{agent,verifier,artifacts});
 * each job is one configuration, named after it. A configuration whose trials ran as several jobs
 * (one job a trial, each with its own context relay, say) is a directory of those jobs.
 */

/** What report needs of the benchmark to grade a trial again with switch-swe's own code (the command opens the benchmark). */
export interface HeldoutView {
  heldout(taskId: string): HeldoutTask | undefined;
  rules(repo: string): ClassificationRules | undefined;
}

const isDir = (path: string) => existsSync(path) && statSync(path).isDirectory();
const isJob = (dir: string) => existsSync(join(dir, HARBOR_JOB.config)) && readdirSync(dir).some((n) => existsSync(join(dir, n, HARBOR_JOB.result)));
const subdirectories = (dir: string) =>
  readdirSync(dir)
    .sort()
    .map((n) => join(dir, n))
    .filter(isDir);

/**
 * The configuration a job records itself as part of: the first part of the job's name when Harbor
 * was given one with a `/` (`--job-name claude-code-rcm/<task>`: a job per trial, kept under its
 * configuration's directory), else none.
 */
function recordedConfiguration(job: string): string | undefined {
  const name = (JSON.parse(readFileSync(join(job, HARBOR_JOB.config), "utf8")) as { job_name?: unknown }).job_name;
  return typeof name === "string" && name.includes("/") ? name.split("/")[0] : undefined;
}

/**
 * The jobs under `dir` by configuration: `dir` itself when it is a job; else each subdirectory that
 * is a job, or that holds jobs. A job is its configuration's by the name it records (a job named
 * `claude-code/<task>` is claude-code's, wherever `dir` starts), else by its directory's name or
 * the name of the directory holding it.
 */
export function harborJobs(dir: string): { configuration: string; jobs: string[] }[] {
  if (!isDir(dir)) throw new InputError(`${dir}: no such directory of Harbor jobs`);
  const found = isJob(dir)
    ? [{ configuration: recordedConfiguration(dir) ?? basename(dir), job: dir }]
    : subdirectories(dir).flatMap((sub) =>
        isJob(sub)
          ? [{ configuration: recordedConfiguration(sub) ?? basename(sub), job: sub }]
          : subdirectories(sub)
              .filter(isJob)
              .map((job) => ({ configuration: recordedConfiguration(job) ?? basename(sub), job })),
      );
  const byConfiguration = new Map<string, string[]>();
  for (const { configuration, job } of found) byConfiguration.set(configuration, [...(byConfiguration.get(configuration) ?? []), job]);
  return [...byConfiguration].map(([configuration, jobs]) => ({ configuration, jobs }));
}

/** The benchmark's exported tasks by Harbor's name for them (the task's [task] name, or its directory's). */
function tasksByName(sessionsDir: string): Map<string, { spec: SessionSpec; condition: Condition }> {
  const tasks = new Map<string, { spec: SessionSpec; condition: Condition }>();
  for (const { spec } of readListedSessions(sessionsDir))
    for (const condition of Condition.options)
      for (const name of [taskDirName(spec.session_id, condition), earlierTaskDirName(spec.session_id, condition)]) {
        tasks.set(name, { spec, condition });
        tasks.set(`switch-swe/${name}`, { spec, condition });
      }
  return tasks;
}

/** Every trial of the jobs under `dir` as a verification report, graded again; what could not be read or does not agree, as problems. */
export function loadHarborReports(dir: string, sessionsDir: string, heldout: HeldoutView): { reports: LoadedReport[]; problems: string[] } {
  const tasks = tasksByName(sessionsDir);
  const view: BenchmarkView = { ...heldout, task: (name) => tasks.get(name) };
  const reports: LoadedReport[] = [];
  const problems: string[] = [];
  const configurations = harborJobs(dir);
  if (!configurations.length) problems.push(`${dir}: no Harbor job (a directory with config.json and trial directories holding result.json)`);
  for (const { configuration, jobs } of configurations)
    for (const job of jobs)
      for (const trial of readdirSync(job).sort()) {
        const trialDir = join(job, trial);
        if (!existsSync(join(trialDir, HARBOR_JOB.result))) continue;
        const loaded = loadHarborTrial(trialDir, configuration, view);
        problems.push(...loaded.problems);
        if (loaded.report) reports.push(loaded.report);
      }
  return { reports, problems };
}
