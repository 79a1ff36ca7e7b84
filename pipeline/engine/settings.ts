import { InputError } from "../validation.ts";
import { z } from "zod";
import { GitServiceSettings } from "../executors/git-service.ts";

/** The five role-neutral checkouts of a session (SPEC §1), unless the config names others. */
export const DEFAULT_CHECKOUTS = ["/workspace/w00", "/workspace/w01", "/workspace/w02", "/workspace/w03", "/workspace/w04"];

/** Interruption tasks per session (SPEC §2.7). */
export const DEFAULT_INTERRUPTIONS = 4;

/** How test runs are executed, for every stage that runs tests (qualify, the oracle) and for `verify`. */
export const ExecutionSettings = z.strictObject({
  /**
   * `queue`: test runs go to workers on other hosts through a BullMQ queue in Redis (`switch-swe
   * worker`); the workers run them with `queue_executor`.
   */
  executor: z.enum(["auto", "docker", "local", "queue"]).default("auto"),
  /** With `executor: queue`, the executor the workers run tests with: what the records then say ran them. */
  queue_executor: z.enum(["docker", "local"]).default("docker"),
  /** With `executor: queue`: where the queue is. Changes where runs happen, not what they produce: not in any cache key. */
  queue: z
    .strictObject({
      redis: z.string().default("redis://127.0.0.1:6379"),
      /** Prefix of the queue's keys in Redis, so several benchmarks can share one Redis. */
      name: z
        .string()
        .regex(/^[A-Za-z0-9_-]+$/)
        .default("switch-swe"),
      /** How long a job may wait for a worker that can run it before it fails as an infrastructure fault. */
      wait_for_worker_seconds: z.number().int().positive().default(60),
      /**
       * The coordinator's repositories, served read-only over git's smart HTTP so that workers on
       * other hosts clone from a URL, never from a path of this machine (docs/SCALING-OUT.md).
       */
      git_service: GitServiceSettings.optional(),
    })
    .default({ redis: "redis://127.0.0.1:6379", name: "switch-swe", wait_for_worker_seconds: 60 }),
  /** Tasks worked on at once; 0 means one per core. Changes how fast, not what: not in any cache key. */
  jobs: z.number().int().min(0).default(0),
  /** Pauses before the first and second retry after an infrastructure fault; not in any cache key. */
  infrastructure_backoff_seconds: z.array(z.number().nonnegative()).min(1).default([15, 30]),
  /**
   * Whether environments may use uv-managed Python downloads for versions no interpreter or base
   * image gives: `auto` asks the download host once; `no` always takes a recipe's first fallback
   * that the executor has. It decides which Python a recipe gets, so it joins the cache key.
   */
  python_downloads: z.enum(["auto", "yes", "no"]).default("auto"),
  /**
   * Where a missing Docker base image is made from, once per engine, before any build: pulled
   * from `registry` (a repository of Debian images tagged by suite; empty: never pull), else built
   * by debootstrap from `mirror` where it can be (root). Changes where an image comes from, not
   * what a run produces: not in any cache key.
   */
  base_images: z
    .strictObject({
      registry: z.string().default("docker.io/library/debian"),
      debootstrap: z.boolean().default(true),
      mirror: z.string().url().default("http://deb.debian.org/debian"),
    })
    .default({ registry: "docker.io/library/debian", debootstrap: true, mirror: "http://deb.debian.org/debian" }),
  /** Per Docker test container. */
  limits: z
    .strictObject({
      memory_mb: z.number().int().positive().default(2048),
      pids: z.number().int().positive().default(512),
      cpus: z.number().positive().default(1),
    })
    .default({ memory_mb: 2048, pids: 512, cpus: 1 }),
});
export type ExecutionSettings = z.infer<typeof ExecutionSettings>;

/** Keys of the execution settings that change how fast a stage runs, never what it produces. */
export const VOLATILE_EXECUTION_KEYS = ["jobs", "infrastructure_backoff_seconds", "queue", "base_images"] as const;

/** How every task's answer is kept out of the other checkouts of its session (SPEC §2.7): select keeps it, validate checks it. */
export const AnswerRuleSettings = z.strictObject({
  /**
   * chronology: an interruption whose checkout holds the focus's answer is never drawn. revert:
   * such interruptions too, where the focus lacks others, with the focus's upstream fix reversed
   * out of their checkout and their own tests qualified there again (slow: qualify's runs each).
   */
  strategy: z.enum(["chronology", "revert"]).default("chronology"),
  /** report: other tasks' answers in a session's checkouts are counted in each session; exclude: they are kept out too, and validate refuses them. */
  interruptions: z.enum(["report", "exclude"]).default("report"),
});
export type AnswerRuleSettings = z.infer<typeof AnswerRuleSettings>;

/** The shape of every session: how many interruptions, the checkouts' paths, and the answer rule. */
export const SessionSettings = z.strictObject({
  interruptions: z.number().int().min(1).default(DEFAULT_INTERRUPTIONS),
  checkouts: z.array(z.string().regex(/^\//, "expected an absolute path")).min(2).default(DEFAULT_CHECKOUTS),
  answer_rule: AnswerRuleSettings.default(AnswerRuleSettings.parse({})),
});
export type SessionSettings = z.infer<typeof SessionSettings>;

/**
 * Settings that several stages share, declared once at the top of the config instead of in each
 * stage's section. A stage names the ones it uses (`StageDefinition.settings`); only those join
 * its cache key.
 */
export const PipelineSettings = z.object({
  /** The repository profiles, relative to the config file. */
  profiles_dir: z.string().default("data/repos"),
  execution: ExecutionSettings.default(ExecutionSettings.parse({})),
  session: SessionSettings.default(SessionSettings.parse({})),
});
export type PipelineSettings = z.infer<typeof PipelineSettings>;
export type SettingName = "profiles" | "execution" | "session";

/** What `--executor` may name on every command that runs tests (the demo excepted: it runs here). */
export const EXECUTOR_CHOICES = ["auto", "docker", "local", "queue"] as const;
export type ExecutorChoice = (typeof EXECUTOR_CHOICES)[number];

/** The command line's say over a config's execution settings. */
export interface ExecutionOverrides {
  executor?: ExecutorChoice;
  /** With `--executor queue`: the Redis URL of the queue. */
  redis?: string;
  /**
   * With `--executor queue`: host:port the git service listens on (workers on other hosts reach
   * it there); its token from SWITCH_SWE_GIT_TOKEN unless the config names another variable.
   */
  gitService?: string;
  jobs?: number;
}

/** The config's execution settings with the command line's overrides applied; `--redis` without the queue is refused. */
export function withExecutionOverrides(configured: ExecutionSettings, overrides: ExecutionOverrides): ExecutionSettings {
  const execution = {
    ...configured,
    ...(overrides.executor ? { executor: overrides.executor } : {}),
    ...(overrides.jobs ? { jobs: overrides.jobs } : {}),
    ...(overrides.redis || overrides.gitService
      ? {
          queue: {
            ...configured.queue,
            ...(overrides.redis ? { redis: overrides.redis } : {}),
            ...(overrides.gitService
              ? {
                  git_service: {
                    ...(configured.queue.git_service ?? { serve: "local" as const }),
                    listen: overrides.gitService,
                    token_env: configured.queue.git_service?.token_env ?? (process.env.SWITCH_SWE_GIT_TOKEN ? "SWITCH_SWE_GIT_TOKEN" : undefined),
                  },
                }
              : {}),
          },
        }
      : {}),
  };
  if (overrides.gitService && execution.executor !== "queue")
    throw new InputError("--git-service serves the queue's workers: it goes with --executor queue (or execution.executor: queue in the config)");
  if (overrides.redis && execution.executor !== "queue")
    throw new InputError("--redis is the queue's address: it goes with --executor queue (or execution.executor: queue in the config)");
  return execution;
}
