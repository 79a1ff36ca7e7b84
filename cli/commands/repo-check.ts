import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import type { Command } from "commander";
import { explained, type TaskFidelity } from "../../pipeline/fidelity/compare.ts";
import { recipeFor } from "../../pipeline/profiles/recipes.ts";
import { createLogger, type Logger } from "../../pipeline/logger.ts";
import { RepoProfile } from "../../pipeline/schemas/repo-profile.ts";
import { describeFirstIssue, InputError } from "../../pipeline/validation.ts";
import { type ExitCode, type Io, requirePath } from "../io.ts";
import { measureFidelity, qualificationOptions } from "./fidelity.ts";
import type { ExecutorChoice } from "../execution-options.ts";

interface TaskLine {
  instance_id: string;
  repo: string;
  version?: string;
  created_at?: string;
}

/** One era of a profile: the tasks that share a recipe and a SWE-bench version, so one environment. */
export interface EraCheck {
  era: string;
  python: string;
  tasks: number;
  sampled: TaskFidelity[];
}

export interface RepoCheckOptions {
  profile: string;
  tasks: string;
  sample: number;
  workDir: string;
  executor: ExecutorChoice;
  /** With `executor: queue`: the Redis of the queue. */
  redis?: string;
  jobs: number;
  mirrors?: string;
  pythonDownloads?: "auto" | "yes" | "no";
  log: Logger;
}

/** A profile's file, validated: a clear error naming the file and field when it is not one. */
export function readProfile(path: string): RepoProfile {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new InputError(`${path}: not JSON: ${(error as Error).message}`);
  }
  const parsed = RepoProfile.safeParse(raw);
  if (!parsed.success) throw new InputError(`${path}: ${describeFirstIssue(parsed.error, raw)}`);
  return parsed.data;
}

/**
 * The tasks of a profile's repository in a SWE-bench-family file, grouped by era (the recipe the
 * profile gives them and their version: one environment each), and `sample` of each era: its
 * earliest task first (the era's environment is resolved as of it, as in a full run), then tasks
 * spread evenly over the rest by creation date.
 */
export function sampleEras(profile: RepoProfile, lines: TaskLine[], sample: number): Map<string, { python: string; all: TaskLine[]; sampled: TaskLine[] }> {
  const eras = new Map<string, { python: string; all: TaskLine[]; sampled: TaskLine[] }>();
  for (const line of lines.filter((l) => l.repo === profile.repo)) {
    const recipe = recipeFor(profile, { id: line.instance_id, ...(line.version ? { version: line.version } : {}) });
    const overrides = profile.environment_overrides.flatMap((o, i) => (o.tasks.includes(line.instance_id) || (line.version !== undefined && o.versions.includes(line.version)) ? [`override ${i + 1}`] : []));
    const era = `version ${line.version ?? "(none)"}, ${overrides.length ? overrides.join(" + ") : "base recipe"}`;
    const entry = eras.get(era) ?? { python: recipe.python, all: [], sampled: [] };
    entry.all.push(line);
    eras.set(era, entry);
  }
  for (const entry of eras.values()) {
    const ordered = [...entry.all].sort((a, b) => ((a.created_at ?? "") < (b.created_at ?? "") ? -1 : (a.created_at ?? "") > (b.created_at ?? "") ? 1 : a.instance_id < b.instance_id ? -1 : 1));
    const count = Math.min(sample, ordered.length);
    const picks = new Set(Array.from({ length: count }, (_, i) => (count === 1 ? 0 : Math.round((i * (ordered.length - 1)) / (count - 1)))));
    entry.sampled = [...picks].map((i) => ordered[i]!);
  }
  return new Map([...eras].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * `switch-swe repo check`: builds a profile's environments and qualifies a sample of its tasks in
 * each era, as the pipeline would; what a maintainer runs after editing a profile.
 */
export async function checkProfile(options: RepoCheckOptions): Promise<EraCheck[]> {
  const profile = readProfile(options.profile);
  const lines = readFileSync(options.tasks, "utf8").split("\n").flatMap((line, index) => {
    if (!line.trim()) return [];
    try {
      return [JSON.parse(line) as TaskLine];
    } catch {
      throw new InputError(`${options.tasks}: line ${index + 1}: not JSON`);
    }
  });
  const eras = sampleEras(profile, lines, options.sample);
  if (!eras.size) throw new InputError(`${options.tasks}: no task of ${profile.repo} (field repo)`);
  // The profile alone, as the pipeline will load it.
  const workDir = resolve(options.workDir);
  const profiles = join(workDir, "profile-under-check");
  mkdirSync(profiles, { recursive: true });
  writeFileSync(join(profiles, basename(options.profile)), readFileSync(options.profile, "utf8"));
  const sampled = [...eras.values()].flatMap((e) => e.sampled.map((t) => t.instance_id));
  const result = await measureFidelity({ records: options.tasks, profilesDir: profiles, workDir, executor: options.executor, redis: options.redis, runs: 1, jobs: options.jobs, tasks: sampled, ...(options.mirrors ? { mirrors: options.mirrors } : {}), ...(options.pythonDownloads ? { pythonDownloads: options.pythonDownloads } : {}), log: options.log });
  const byTask = new Map(result.tasks.map((t) => [t.task, t]));
  return [...eras].map(([era, entry]) => ({
    era,
    python: entry.python,
    tasks: entry.all.length,
    sampled: entry.sampled.map((t) => byTask.get(t.instance_id) ?? { task: t.instance_id, environment: { built: false, reason: "not_run", message: "not qualified" } }),
  }));
}

/** True when the task's environment built and its F2P is the record's, or differs only for named reasons. */
const works = (t: TaskFidelity) => t.environment.built && explained(t);

/** Per era: what works, and what does not, with why. */
export function formatProfileCheck(repo: string, eras: EraCheck[]): string {
  const lines = [`${repo}: ${eras.length} era(s)`];
  for (const era of eras) {
    lines.push(`  ${era.era} (Python ${era.python}; ${era.tasks} task(s), ${era.sampled.length} checked): ${era.sampled.every(works) ? "works" : "DOES NOT WORK"}`);
    for (const t of era.sampled) {
      if (!t.environment.built) lines.push(`    ${t.task}: not qualified: ${t.environment.reason}: ${t.environment.message.split("\n")[0]!.slice(0, 300)}`);
      else lines.push(`    ${t.task}: environment built; F2P ${t.failToPass!.agreement}${explained(t) ? "" : " (a difference of class 'other': look at it)"}; P2P ${t.passToPass!.agreement}${t.kept ? "" : "; rejected"}`);
    }
  }
  return lines.join("\n") + "\n";
}

export function registerRepoCheck(repo: Command, io: Io, exit: ExitCode): void {
  qualificationOptions(
    repo
      .command("check")
      .description("build a profile's environments and qualify a sample of its tasks in each era; print per era what works")
      .argument("<profile>", "the profile file (data/repos/OWNER__NAME.json)")
      .requiredOption("--tasks <file>", "SWE-bench-family records (JSON Lines) of the repository"),
    ".switch-swe/repo-check",
    { profiles: false, tasks: false },
  )
    .option("--sample <n>", "tasks checked per era", (v) => Number(v), 1)
    .addHelpText("after", "\nExample:\n  switch-swe repo check data/repos/pylint-dev__astroid.json --tasks ../shared/data/swebench-lite-dev.jsonl --sample 2 --executor docker")
    .action(
      exit.act(async (profile: string, opts) => {
        requirePath("<profile>", profile, "file");
        requirePath("--tasks", opts.tasks, "file");
        if (!Number.isInteger(opts.sample) || opts.sample < 1) throw new InputError(`--sample: expected a whole number of tasks per era, 1 or more (got ${opts.sample})`);
        const log = createLogger({ write: (line) => io.err(line + "\n") });
        const eras = await checkProfile({ profile, tasks: opts.tasks, sample: opts.sample, workDir: opts.workDir, executor: opts.executor, redis: opts.redis, jobs: opts.jobs, mirrors: opts.mirrors, pythonDownloads: opts.pythonDownloads, log });
        io.out(formatProfileCheck(readProfile(profile).repo, eras));
        return eras.every((e) => e.sampled.every(works)) ? 0 : 1;
      }),
    );
}
