import { join } from "node:path";
import { ExecutionSettings } from "../settings.ts";
import { QueueExecutor } from "../executors/queue.ts";
import type { EnvironmentSpec, Executor, PythonOffer } from "../executors/types.ts";
import type { EnvironmentRecipe } from "../schemas/repo-profile.ts";
import { acceptedPythons, choosePython, NoAcceptedPython, planEnvironments, recipeFor } from "../executors/environment.ts";
import { createExecutor } from "../executors/index.ts";
import type { Logger } from "../logger.ts";
import type { Candidate } from "../schemas/candidate.ts";
import type { SplitChange } from "../schemas/split.ts";
import type { LoadedProfile } from "./profiles.ts";

/**
 * Each task's environment: its repository's recipe (with overrides) on the Python chosen for it
 * from what the executor offers, as of the earliest PR sharing it; or, for a task whose recipe
 * accepts no Python the executor has, why not (in `unavailable`).
 */
export function environmentsForTasks(splits: SplitChange[], candidates: Map<string, Candidate>, profiles: Map<string, LoadedProfile>, offer: PythonOffer): { environments: Map<string, EnvironmentSpec>; unavailable: Map<string, NoAcceptedPython> } {
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

/** The executor the execution settings ask for; environments live under `<work>/envs`, shared by every stage. */
export function executorFor(config: Pick<ExecutionSettings, "executor" | "limits"> & Partial<Pick<ExecutionSettings, "queue" | "queue_executor" | "python_downloads">>, workDir: string, log: Logger): Promise<Executor> {
  const { limits: l } = config;
  const limits = { memoryBytes: l.memory_mb * 2 ** 20, pids: l.pids, cpus: l.cpus };
  if (config.executor === "queue") {
    const queue = config.queue ?? ExecutionSettings.parse({}).queue;
    return QueueExecutor.connect({ redis: queue.redis, prefix: queue.name, workerExecutor: config.queue_executor ?? "docker", waitForWorkerSeconds: queue.wait_for_worker_seconds, limits, log, pythonDownloads: config.python_downloads ?? "auto" });
  }
  return createExecutor(config.executor, { envRoot: join(workDir, "envs"), workDir, log, limits, pythonDownloads: config.python_downloads ?? "auto" });
}

