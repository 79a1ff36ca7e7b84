import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { explained, type TaskFidelity } from "./compare.ts";
import { recipeFor } from "../profiles/recipes.ts";
import { type Logger } from "../logger.ts";
import { RepoProfile } from "../schemas/repo-profile.ts";
import { InputError } from "../validation.ts";
import { type FidelityOptions, measureFidelity } from "./measure.ts";
import type { ExecutorChoice } from "../engine/settings.ts";
import { readProfile } from "../profiles/load.ts";
import { WorkLayout } from "../work-layout.ts";

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
  stages: FidelityOptions["stages"];
  profile: string;
  tasks: string;
  sample: number;
  workDir: string;
  executor: ExecutorChoice;
  /** With `executor: queue`: the Redis of the queue. */
  redis?: string;
  /** With `executor: queue`: host:port of the git service the workers fetch the repositories from. */
  gitService?: string;
  jobs: number;
  mirrors?: string;
  pythonDownloads?: "auto" | "yes" | "no";
  log: Logger;
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
    const overrides = profile.environment_overrides.flatMap((o, i) =>
      o.tasks.includes(line.instance_id) || (line.version !== undefined && o.versions.includes(line.version)) ? [`override ${i + 1}`] : [],
    );
    const era = `version ${line.version ?? "(none)"}, ${overrides.length ? overrides.join(" + ") : "base recipe"}`;
    const entry = eras.get(era) ?? { python: recipe.python, all: [], sampled: [] };
    entry.all.push(line);
    eras.set(era, entry);
  }
  for (const entry of eras.values()) {
    const ordered = [...entry.all].sort((a, b) =>
      (a.created_at ?? "") < (b.created_at ?? "") ? -1 : (a.created_at ?? "") > (b.created_at ?? "") ? 1 : a.instance_id < b.instance_id ? -1 : 1,
    );
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
  const lines = readFileSync(options.tasks, "utf8")
    .split("\n")
    .flatMap((line, index) => {
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
  const profiles = new WorkLayout(workDir).profileUnderCheck;
  mkdirSync(profiles, { recursive: true });
  writeFileSync(join(profiles, basename(options.profile)), readFileSync(options.profile, "utf8"));
  const sampled = [...eras.values()].flatMap((e) => e.sampled.map((t) => t.instance_id));
  const result = await measureFidelity({
    stages: options.stages,
    records: options.tasks,
    profilesDir: profiles,
    workDir,
    executor: options.executor,
    redis: options.redis,
    gitService: options.gitService,
    runs: 1,
    jobs: options.jobs,
    tasks: sampled,
    ...(options.mirrors ? { mirrors: options.mirrors } : {}),
    ...(options.pythonDownloads ? { pythonDownloads: options.pythonDownloads } : {}),
    log: options.log,
  });
  const byTask = new Map(result.tasks.map((t) => [t.task, t]));
  return [...eras].map(([era, entry]) => ({
    era,
    python: entry.python,
    tasks: entry.all.length,
    sampled: entry.sampled.map(
      (t) => byTask.get(t.instance_id) ?? { task: t.instance_id, environment: { built: false, reason: "not_run", message: "not qualified" } },
    ),
  }));
}

/** True when the task's environment built and its F2P is the record's, or differs only for named reasons. */
export const works = (t: TaskFidelity) => t.environment.built && explained(t);

/** Per era: what works, and what does not, with why. */
export function formatProfileCheck(repo: string, eras: EraCheck[]): string {
  const lines = [`${repo}: ${eras.length} era(s)`];
  for (const era of eras) {
    lines.push(
      `  ${era.era} (Python ${era.python}; ${era.tasks} task(s), ${era.sampled.length} checked): ${era.sampled.every(works) ? "works" : "DOES NOT WORK"}`,
    );
    for (const t of era.sampled) {
      if (!t.environment.built) lines.push(`    ${t.task}: not qualified: ${t.environment.reason}: ${t.environment.message.split("\n")[0]!.slice(0, 300)}`);
      else
        lines.push(
          `    ${t.task}: environment built; F2P ${t.failToPass!.agreement}${explained(t) ? "" : " (a difference of class 'other': look at it)"}; P2P ${t.passToPass!.agreement}${t.kept ? "" : "; rejected"}`,
        );
    }
  }
  return lines.join("\n") + "\n";
}
