import { mkdirSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { type Job, Worker } from "bullmq";
import { dockerEngine } from "./docker-engine.ts";
import { Redis } from "ioredis";
import { writeFileAtomic } from "../atomic.ts";
import { baseRevision, freshCheckout } from "../checkouts/checkout.ts";
import { TransientFailure } from "../failures.ts";
import { MirrorCache } from "../git.ts";
import { WorkLayout } from "../work-layout.ts";
import { InputError } from "../validation.ts";
import { gitServiceAuthEnv } from "./git-service.ts";
import { freeDisk, imagePythons, selfCheck, WorkerHealth } from "./worker-health.ts";
import type { Logger } from "../logger.ts";
import { hostPythons, type PythonDownloads, UV_MANAGED_PYTHONS, uvDownloadsReachable } from "./python-offer.ts";
import { BASE_REPOSITORY, dockerAvailable, type DockerLimits } from "./docker.ts";
import { createExecutor, DEFAULT_LIMIT_SETTINGS } from "./index.ts";
import { connectRedis, redactUrl } from "./queue.ts";
import { HEARTBEAT_SECONDS, type JobResult, QUEUE_PROTOCOL, queueNameFor, RunJob, workerKey, type WorkerInfo, WORKER_TTL_SECONDS } from "./queue-protocol.ts";
import type { BaseRevision } from "../checkouts/checkout.ts";
import type { Executor, TestRunResult } from "./types.ts";
import { applyWrittenFiles, checkoutState, writtenSince } from "./written-files.ts";

export interface QueueWorkerOptions {
  redis: string;
  prefix: string;
  executor: "docker" | "local";
  /** Jobs run at once, over all the queues this worker listens on. */
  concurrency: number;
  /** This worker's own directory: mirrors, environments, scratch checkouts, run logs. */
  workDir: string;
  /** A local worker runs the repositories' tests unsandboxed: only when its operator says so. */
  allowLocal: boolean;
  log: Logger;
  /** A name for the registry (default host-pid). */
  id?: string;
  /** How long a job's lock lasts without renewal: after it, a silent worker's job is given to another. */
  lockSeconds?: number;
  /** Whether builds may download uv-managed Pythons (auto: when the download host answers). */
  pythonDownloads?: PythonDownloads;
  /** The coordinator's git service token (from this worker's own environment, never the queue). */
  gitToken?: string;
  /** Seconds between checks of a worker out of service; it takes jobs again once one passes. */
  recheckSeconds?: number;
  /** Below this much free disk in its work directory, the worker takes itself out of service. */
  minFreeDiskBytes?: number;
}

/** The default least free disk a worker works with: an environment build alone can take this much. */
export const DEFAULT_MIN_FREE_DISK_BYTES = 512 * 2 ** 20;

/** Errors a job answers with that say something of the job (its recipe, its tests), never of the worker. */
const JOB_ERRORS = new Set(["BuildFailed", "RunTimedOut", "ProtocolError", "PatchDoesNotApply", "CommitNotInSource"]);

/** The Python versions this worker can run, or why it cannot work at all (one line). */
async function workerPythons(options: QueueWorkerOptions): Promise<string[]> {
  if (options.executor === "local" && !options.allowLocal)
    throw new InputError(
      "a worker with the local executor runs the repositories' tests unsandboxed on this machine: start it with --allow-local if that is what you want, or use --executor docker",
    );
  if (options.executor === "local") {
    const pythons = hostPythons();
    if (!pythons.length) throw new TransientFailure("no Python interpreter found on this machine (python3, python3.X)");
    return pythons;
  }
  const docker = dockerEngine();
  if (!(await dockerAvailable(docker)))
    throw new TransientFailure("no Docker engine answers on this machine: start dockerd, or run this worker with --executor local --allow-local");
  const pythons = await imagePythons(docker);
  if (!pythons.length)
    throw new TransientFailure(`this Docker engine has no base image (${BASE_REPOSITORY}:<suite>): build one with 'switch-swe images base --suite bookworm'`);
  return pythons;
}

/** At most `limit` calls of `work` at once, over every queue a worker listens on. */
function limited<A, R>(limit: number, work: (arg: A) => Promise<R>): (arg: A) => Promise<R> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (arg) => {
    while (running >= limit) await new Promise<void>((r) => waiting.push(r));
    running++;
    try {
      return await work(arg);
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

/**
 * Results travel, log text does not: a run with results to read sends no output; a run without
 * (its caller saves and quotes the output) keeps its whole output on the worker and sends where,
 * with its last lines.
 */
async function resultForQueue(result: TestRunResult, worker: string, logFile: string): Promise<TestRunResult> {
  const readable = result.channel ? result.channel.finished : Boolean(result.junitXml) && result.exitCode !== 3 && result.exitCode !== 4;
  if (readable) return { ...result, outputTail: "" };
  const kept = await writeFileAtomic(logFile, result.outputTail).then(
    () => true,
    () => false,
  );
  return {
    ...result,
    outputTail: `(whole output on worker ${worker}${kept ? `: ${logFile}` : ""})\n${result.outputTail.trimEnd().split("\n").slice(-20).join("\n")}`,
  };
}

/**
 * A worker (`switch-swe worker`): takes jobs of the queues of what it can run (its executor and
 * the Python versions it has), builds or reuses environments locally (the environment key makes
 * two workers build identical images), makes each job's checkout from its own mirror, runs it with
 * the existing executor, and returns the structured result. It announces itself in Redis every
 * few seconds; a worker killed mid-job stops renewing the job's lock, and BullMQ gives the job to
 * another worker.
 */
export async function startQueueWorker(options: QueueWorkerOptions): Promise<{ id: string; info: () => WorkerInfo; stop: () => Promise<void> }> {
  const installed = await workerPythons(options);
  const pythonDownloads = await uvDownloadsReachable(options.pythonDownloads ?? "auto");
  // A worker that can download uv-managed Pythons also serves the versions it has no interpreter of.
  const pythons = pythonDownloads ? [...new Set([...installed, ...UV_MANAGED_PYTHONS])].sort() : installed;
  const redis = await connectRedis(options.redis, true);
  const workDir = resolve(options.workDir);
  const layout = new WorkLayout(workDir);
  const scratch = layout.scratch("run");
  const logs = layout.workerLogs;
  mkdirSync(scratch, { recursive: true });
  mkdirSync(logs, { recursive: true });
  const id = options.id ?? `${hostname()}-${process.pid}`;
  const executors = new ExecutorsByLimits(options, workDir, pythonDownloads);
  const executorFor = (limits: DockerLimits | undefined) => executors.for(limits);
  const served = new Set<string>();
  const fetchEnv = (source: string) => (served.has(source) ? gitServiceAuthEnv(options.gitToken) : {});
  const mirrors = new MirrorCache(layout.mirrors, fetchEnv);
  const counters = { done: 0, failed: 0, active: 0 };
  const checks = { executor: options.executor, pythons: installed, workDir, minFree: options.minFreeDiskBytes ?? DEFAULT_MIN_FREE_DISK_BYTES, fetchEnv };
  let consumers: ReturnType<typeof consumeQueues> | undefined;
  // What this worker needs of itself to take jobs: room, its engine and images, a way to the job's source.
  const health = new WorkerHealth({
    id,
    log: options.log,
    recheckSeconds: options.recheckSeconds ?? 30,
    check: (source) => selfCheck({ ...checks, source }),
    // Paused before the job is answered, so that the coordinator's resend goes to another worker.
    pause: async () => {
      await consumers?.pause();
      await announce();
    },
    resume: async () => {
      consumers?.resume();
      await announce();
    },
  });
  const fixed = {
    id,
    executor: options.executor,
    pythons,
    python_downloads: pythonDownloads,
    concurrency: options.concurrency,
    started_at: new Date().toISOString(),
  };
  const info = () => workerInfo(fixed, workDir, counters, health);
  const announce = () =>
    redis
      .set(workerKey(options.prefix, id), JSON.stringify(info()), "EX", WORKER_TTL_SECONDS)
      .catch((error) => options.log.warn(`worker ${id}: cannot announce itself to Redis: ${(error as Error).message}`));
  await announce();
  const heartbeat = setInterval(announce, HEARTBEAT_SECONDS * 1000);

  const process_ = limited(options.concurrency, async (job: Job): Promise<JobResult> => {
    counters.active++;
    try {
      return await handleJob(job, { id, health, counters, served, run: { id, executorFor, mirrors, scratch, logs, log: options.log } });
    } finally {
      counters.active--;
      // Announced at once, so `switch-swe workers` and the coordinator see what this worker is doing now.
      void announce();
    }
  });
  consumers = consumeQueues(options, pythons, process_, id);
  options.log.info(
    `worker ${id}: ${options.executor} executor, Python ${pythons.join(", ")}, ${options.concurrency} at a time, on ${redactUrl(options.redis)} (prefix ${options.prefix})`,
  );
  return {
    id,
    info,
    stop: async () => {
      clearInterval(heartbeat);
      health.stop();
      await consumers!.close();
      await redis.del(workerKey(options.prefix, id)).catch(() => undefined);
      redis.disconnect();
      await executors.close();
    },
  };
}

/** What a worker announces: what it is, what it did, and whether it is in service. */
function workerInfo(
  fixed: Pick<WorkerInfo, "id" | "executor" | "pythons" | "python_downloads" | "concurrency" | "started_at">,
  workDir: string,
  counters: { done: number; failed: number; active: number },
  health: WorkerHealth,
): WorkerInfo {
  const state = health.state;
  return {
    ...fixed,
    host: hostname(),
    pid: process.pid,
    free_disk_bytes: freeDisk(workDir),
    jobs_done: counters.done,
    jobs_failed: counters.failed,
    active: counters.active,
    ...(state ? { out_of_service: { reason: state.reason, since: state.since } } : {}),
  };
}

/**
 * One job, with this worker's health in mind: a job taken while out of service is handed back
 * unrun; a failure a check of the worker confirms is answered as the worker's own fault.
 */
async function handleJob(
  job: Job,
  context: {
    id: string;
    health: WorkerHealth;
    counters: { done: number; failed: number };
    served: Set<string>;
    run: Parameters<typeof runJob>[2];
  },
): Promise<JobResult> {
  const { id, health, counters } = context;
  const started = performance.now();
  const state = health.state;
  if (state) {
    counters.failed++;
    return { worker: id, ok: false, error: { name: "OutOfService", message: state.reason }, worker_fault: state.reason };
  }
  const data = RunJob.safeParse(job.data);
  if (!data.success) {
    counters.failed++;
    return {
      worker: id,
      ok: false,
      error: {
        name: "ProtocolError",
        message: `job ${job.id} is not a job of this version of switch-swe (protocol ${QUEUE_PROTOCOL}): ${data.error.issues[0]?.message}`,
      },
      seconds: (performance.now() - started) / 1000,
    };
  }
  // The coordinator's git service wants the token; other sources never see it.
  if (data.data.source?.served) context.served.add(data.data.source.clone_url);
  const result = await runJob(job, data.data, context.run);
  if (result.ok) counters.done++;
  else counters.failed++;
  const seconds = (performance.now() - started) / 1000;
  if (!result.ok && !JOB_ERRORS.has(result.error.name)) {
    // A failure is taken for the worker's own only when a check of the worker fails too.
    const reason = await health.confirm(data.data.source ? { url: data.data.source.clone_url } : undefined);
    if (reason) return { ...result, worker_fault: reason, seconds };
  }
  return { ...result, seconds };
}

/** One executor per set of limits the coordinators ask for (they share the environments). */
class ExecutorsByLimits {
  private readonly made = new Map<string, Promise<Executor>>();

  constructor(
    private readonly options: QueueWorkerOptions,
    private readonly workDir: string,
    private readonly pythonDownloads: boolean,
  ) {}

  for(limits: DockerLimits | undefined): Promise<Executor> {
    const key = JSON.stringify(limits ?? null);
    const settings = {
      executor: this.options.executor,
      limits: limits ? { memory_mb: limits.memoryBytes / 2 ** 20, pids: limits.pids, cpus: limits.cpus } : DEFAULT_LIMIT_SETTINGS,
      python_downloads: this.pythonDownloads ? ("yes" as const) : ("no" as const),
    };
    if (!this.made.has(key)) this.made.set(key, createExecutor(settings, { workDir: this.workDir, log: this.options.log }));
    return this.made.get(key)!;
  }

  async close(): Promise<void> {
    for (const executor of this.made.values()) await (await executor).close?.();
  }
}

/** A BullMQ worker on the queue of each Python version served, each with its own connection. */
function consumeQueues(
  options: QueueWorkerOptions,
  pythons: string[],
  process_: (job: Job) => Promise<JobResult>,
  id: string,
): { pause: () => Promise<void>; resume: () => void; close: () => Promise<void> } {
  const lockDuration = (options.lockSeconds ?? 30) * 1000;
  const connections: Redis[] = [];
  const connectionFor = () => {
    const connection = new Redis(options.redis, { maxRetriesPerRequest: null });
    // A dropped connection is retried; BullMQ reports what it cannot recover from on the worker's "error".
    connection.on("error", () => undefined);
    connections.push(connection);
    return connection;
  };
  const workers = pythons.map(
    (python) =>
      new Worker(queueNameFor(options.executor, python), process_, {
        connection: connectionFor(),
        prefix: options.prefix,
        concurrency: options.concurrency,
        lockDuration,
        stalledInterval: Math.max(1000, Math.floor(lockDuration / 2)),
        maxStalledCount: 3,
      }),
  );
  for (const worker of workers) worker.on("error", (error) => options.log.warn(`worker ${id}: ${error.message}`));
  return {
    pause: async () => {
      await Promise.all(workers.map((w) => w.pause(true)));
    },
    resume: () => {
      for (const w of workers) w.resume();
    },
    close: async () => {
      await Promise.all(workers.map((w) => w.close()));
      for (const connection of connections) connection.disconnect();
    },
  };
}

/** One job: the same checkout the coordinator made, from this worker's own mirror, then the executor's build or run. */
async function runJob(
  job: Job,
  data: RunJob,
  context: {
    id: string;
    executorFor: (limits: DockerLimits | undefined) => Promise<Executor>;
    mirrors: MirrorCache;
    scratch: string;
    logs: string;
    log: Logger;
  },
): Promise<JobResult> {
  try {
    // Chosen once the job is known to be well formed: its limits say which executor runs it.
    const executor = await context.executorFor(data.limits);
    const mirror = data.source ? await context.mirrors.ensure(data.source.repo, data.source.clone_url, data.source.commit) : undefined;
    const baseCommit = data.base_commit ?? data.source?.commit;
    const base: BaseRevision | undefined = mirror && baseCommit ? baseRevision(mirror, baseCommit, context.scratch) : undefined;
    const { built } = await executor.ensureEnvironment(data.env, base);
    if (data.type === "ensure") return { worker: context.id, ok: true, built };
    if (!mirror || !data.source) throw new Error(`job ${job.id}: a run without its checkout's source`);
    const checkout = await freshCheckout(mirror, data.source.commit, data.source.patches, context.scratch);
    try {
      await applyWrittenFiles(checkout.dir, data.overlay);
      const before = await checkoutState(checkout.dir);
      const result = await executor.run({
        env: data.env,
        checkoutDir: checkout.dir,
        tests: data.tests,
        timeoutSeconds: data.timeout_seconds ?? data.env.recipe.test_timeout_seconds,
        ...(data.base_commit ? { baseCommit: data.base_commit } : {}),
        ...(data.guarded ? { guarded: data.guarded } : {}),
      });
      const written = await writtenSince(checkout.dir, before);
      return { worker: context.id, ok: true, built, result: await resultForQueue(result, context.id, join(context.logs, `${job.id}.log`)), written };
    } finally {
      await checkout.dispose();
    }
  } catch (error) {
    context.log.warn(`worker ${context.id}: job ${job.id}: ${(error as Error).message.split("\n")[0]}`);
    return { worker: context.id, ok: false, error: { name: (error as Error).name, message: (error as Error).message } };
  }
}
