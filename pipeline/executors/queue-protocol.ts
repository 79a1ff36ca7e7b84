import { z } from "zod";
import { EnvironmentRecipe } from "../schemas/repo-profile.ts";

/**
 * What travels on the queue between a coordinating run and the workers (`switch-swe worker`):
 * one job per environment build or test run, carrying everything a worker needs to make the same
 * checkout and run the same tests, and nothing secret (no token, no credentials in a clone URL).
 */

/** Bumped when a job's or a result's meaning changes: a worker refuses jobs of another version. */
export const QUEUE_PROTOCOL = 2;

/** One queue per (executor, Python version): a worker listens on the queues of what it can run. */
export function queueNameFor(executor: "docker" | "local", python: string): string {
  return `runs-${executor}-py${python}`;
}

export const JobSource = z.strictObject({
  repo: z.string(),
  /**
   * A URL the workers fetch from (never a path of the coordinator's machine); the worker keeps its
   * own mirror of it.
   */
  clone_url: z.string().min(1),
  /** Whether the URL is the coordinator's git service, whose token the worker sends from its own environment. */
  served: z.boolean().default(false),
  commit: z.string(),
  patches: z.array(z.strictObject({ name: z.string(), text: z.string() })),
});
export type JobSource = z.infer<typeof JobSource>;

export const JobEnvironment = z.strictObject({ repo: z.string(), recipe: EnvironmentRecipe, asOf: z.string().nullable(), key: z.string() });

/**
 * A file a run wrote in its checkout (content in base64, a symbolic link's target, or null when
 * it deleted the file). Runs of one checkout see each other's files (a test's marker file, say);
 * a worker makes a fresh checkout per job, so the files earlier runs wrote travel with the job,
 * and what this run wrote travels back.
 */
export const WrittenFile = z.strictObject({ path: z.string(), content_base64: z.string().nullable(), link: z.string().optional() });
export type WrittenFile = z.infer<typeof WrittenFile>;

/** The most a run's written files may weigh on the queue (their base64 text). */
export const MAX_WRITTEN_BYTES = 16 * 2 ** 20;

export const RunJob = z.strictObject({
  protocol: z.literal(QUEUE_PROTOCOL),
  type: z.enum(["ensure", "run"]),
  env: JobEnvironment,
  /** For `ensure`: the base revision (no patches), when the recipe installs from the checkout. For `run`: the checkout. */
  source: JobSource.optional(),
  base_commit: z.string().optional(),
  tests: z.array(z.string()).default([]),
  timeout_seconds: z.number().positive().optional(),
  guarded: z.strictObject({ submittedPaths: z.array(z.string()), protectedPaths: z.array(z.string()) }).optional(),
  /** The coordinator's limits of a Docker test container (memory, processes, CPUs): the worker runs the job under them. */
  limits: z.strictObject({ memoryBytes: z.number().int().positive(), pids: z.number().int().positive(), cpus: z.number().positive() }).optional(),
  /** Files earlier runs of the same checkout wrote, laid over the fresh checkout before the run. */
  overlay: z.array(WrittenFile).default([]),
});
export type RunJob = z.infer<typeof RunJob>;

const GuardRecordSchema = z.union([
  z.strictObject({ kind: z.literal("test"), nodeid: z.string(), when: z.enum(["setup", "call", "teardown"]), outcome: z.string() }),
  z.strictObject({ kind: z.enum(["problem", "suspicious"]), text: z.string() }),
  z.strictObject({ kind: z.literal("finish"), exitstatus: z.number(), problems: z.array(z.string()) }),
]);

export const RunResultSchema = z.strictObject({
  timedOut: z.boolean(),
  junitXml: z.string().optional(),
  exitCode: z.number(),
  wallSeconds: z.number(),
  outputTail: z.string(),
  channel: z.strictObject({ records: z.array(GuardRecordSchema), finished: z.boolean(), foreign: z.array(z.string()) }).optional(),
});

/** A job's return value: the structured result, or the error the worker's executor threw (by class name). */
export const JobResult = z.union([
  z.strictObject({
    worker: z.string(),
    ok: z.literal(true),
    built: z.boolean().optional(),
    result: RunResultSchema.optional(),
    written: z.array(WrittenFile).optional(),
    seconds: z.number().optional(),
  }),
  z.strictObject({
    worker: z.string(),
    ok: z.literal(false),
    error: z.strictObject({ name: z.string(), message: z.string() }),
    /**
     * Set when the worker found the failure to be its own (it cannot clone, its Docker engine or
     * base image is gone, its disk is full): it has taken itself out of service, and the job is
     * sent again for another worker.
     */
    worker_fault: z.string().optional(),
    seconds: z.number().optional(),
  }),
]);
export type JobResult = z.infer<typeof JobResult>;

/** What a worker announces, refreshed every few seconds; it expires when the worker stops answering. */
export const WorkerInfo = z.strictObject({
  id: z.string(),
  host: z.string(),
  pid: z.number().int(),
  executor: z.enum(["docker", "local"]),
  pythons: z.array(z.string()),
  /** Whether this worker's builds can download uv-managed Pythons (versions its executor has none of). */
  python_downloads: z.boolean().default(false),
  concurrency: z.number().int().positive(),
  free_disk_bytes: z.number().nonnegative(),
  started_at: z.string(),
  jobs_done: z.number().int().nonnegative(),
  jobs_failed: z.number().int().nonnegative(),
  active: z.number().int().nonnegative(),
  /** Set while the worker takes no jobs because a check of its own failed: why, and since when. */
  out_of_service: z.strictObject({ reason: z.string(), since: z.string() }).optional(),
});
export type WorkerInfo = z.infer<typeof WorkerInfo>;

/** Redis keys of the worker registry, under the queue's prefix. */
export const workerKey = (prefix: string, id: string) => `${prefix}:workers:${id}`;
export const WORKER_PATTERN = (prefix: string) => `${prefix}:workers:*`;
/** Seconds between a worker's announcements, and after which a silent worker counts as gone. */
export const HEARTBEAT_SECONDS = 3;
export const WORKER_TTL_SECONDS = 10;

/** A clone URL carrying credentials never goes on the queue (anyone who can read Redis could read them). */
export function assertNoCredentials(url: string): void {
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/@]*:[^/@]*@/i.test(url) || (/^[a-z][a-z0-9+.-]*:\/\/[^/@]*@/i.test(url) && !/^ssh:\/\//i.test(url))) {
    throw new Error(
      `the clone URL ${url.replace(/\/\/[^@]*@/, "//***@")} carries credentials, which never go on the queue: give the workers a URL without them (and their own access)`,
    );
  }
}
