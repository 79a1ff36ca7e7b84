import { Option } from "commander";
import type { ExecutionSettings } from "../pipeline/engine/settings.ts";
import { UsageError } from "./io.ts";

/** What `--executor` may name on every command that runs tests (the demo excepted: it runs here). */
export const EXECUTOR_CHOICES = ["auto", "docker", "local", "queue"] as const;
export type ExecutorChoice = (typeof EXECUTOR_CHOICES)[number];

/** The command line's say over a config's execution settings. */
export interface ExecutionOverrides {
  executor?: ExecutorChoice;
  /** With `--executor queue`: the Redis URL of the queue. */
  redis?: string;
  jobs?: number;
}

export const executorOption = (description: string) => new Option("--executor <kind>", description).choices([...EXECUTOR_CHOICES]);
export const redisOption = () => new Option("--redis <url>", "with --executor queue: the Redis of the queue (default: the config's execution.queue.redis)");

/** The config's execution settings with the command line's overrides applied; `--redis` without the queue is refused. */
export function withExecutionOverrides(configured: ExecutionSettings, overrides: ExecutionOverrides): ExecutionSettings {
  const execution = { ...configured, ...(overrides.executor ? { executor: overrides.executor } : {}), ...(overrides.jobs ? { jobs: overrides.jobs } : {}), ...(overrides.redis ? { queue: { ...configured.queue, redis: overrides.redis } } : {}) };
  if (overrides.redis && execution.executor !== "queue") throw new UsageError("--redis is the queue's address: it goes with --executor queue (or execution.executor: queue in the config)");
  return execution;
}
