import { join } from "node:path";
import { ExecutionSettings } from "../settings.ts";
import { QueueExecutor } from "../executors/queue.ts";
import type { Executor } from "../executors/types.ts";
import { planEnvironments, recipeFor } from "../executors/environment.ts";
import { createExecutor } from "../executors/index.ts";
import type { Logger } from "../logger.ts";
import type { Candidate } from "../schemas/candidate.ts";
import type { SplitChange } from "../schemas/split.ts";
import type { LoadedProfile } from "./profiles.ts";

/** Each task's environment: its repository's recipe (with overrides), as of the earliest PR sharing it. */
export function environmentsForTasks(splits: SplitChange[], candidates: Map<string, Candidate>, profiles: Map<string, LoadedProfile>) {
  const known = splits.filter((s) => profiles.has(s.repo));
  return planEnvironments(
    known.map((s) => ({ id: s.task_id, repo: s.repo, recipe: recipeFor(profiles.get(s.repo)!.profile, { id: s.task_id, version: candidates.get(s.task_id)?.version }), createdAt: candidates.get(s.task_id)?.created_at ?? null, version: candidates.get(s.task_id)?.version })),
  );
}

/** The executor the execution settings ask for; environments live under `<work>/envs`, shared by every stage. */
export function executorFor(config: Pick<ExecutionSettings, "executor" | "limits"> & Partial<Pick<ExecutionSettings, "queue" | "queue_executor">>, workDir: string, log: Logger): Promise<Executor> {
  const { limits: l } = config;
  const limits = { memoryBytes: l.memory_mb * 2 ** 20, pids: l.pids, cpus: l.cpus };
  if (config.executor === "queue") {
    const queue = config.queue ?? ExecutionSettings.parse({}).queue;
    return QueueExecutor.connect({ redis: queue.redis, prefix: queue.name, workerExecutor: config.queue_executor ?? "docker", waitForWorkerSeconds: queue.wait_for_worker_seconds, limits, log });
  }
  return createExecutor(config.executor, { envRoot: join(workDir, "envs"), workDir, log, limits });
}

