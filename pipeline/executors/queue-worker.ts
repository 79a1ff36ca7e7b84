import { mkdirSync, statfsSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { type Job, Worker } from "bullmq";
import Docker from "dockerode";
import { Redis } from "ioredis";
import { writeFileAtomic } from "../atomic.ts";
import { baseRevision, freshCheckout } from "../checkouts/checkout.ts";
import { git, MirrorCache } from "../git.ts";
import { gitServiceAuthEnv } from "./git-service.ts";
import type { Logger } from "../logger.ts";
import { hostPythons, type PythonDownloads, UV_MANAGED_PYTHONS, uvDownloadsReachable } from "./python-offer.ts";
import { DEBIAN_FOR_PYTHON, BASE_REPOSITORY, dockerAvailable, type DockerLimits } from "./docker.ts";
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

/** Python versions whose base image this engine has (for a Docker worker). */
async function imagePythons(docker: Docker): Promise<string[]> {
  const found: string[] = [];
  for (const [python, suite] of Object.entries(DEBIAN_FOR_PYTHON)) {
    if (
      await docker
        .getImage(`${BASE_REPOSITORY}:${suite}`)
        .inspect()
        .then(
          () => true,
          () => false,
        )
    )
      found.push(python);
  }
  return found.sort();
}

/** The Python versions this worker can run, or why it cannot work at all (one line). */
async function workerPythons(options: QueueWorkerOptions): Promise<string[]> {
  if (options.executor === "local" && !options.allowLocal)
    throw new Error(
      "a worker with the local executor runs the repositories' tests unsandboxed on this machine: start it with --allow-local if that is what you want, or use --executor docker",
    );
  if (options.executor === "local") {
    const pythons = hostPythons();
    if (!pythons.length) throw new Error("no Python interpreter found on this machine (python3, python3.X)");
    return pythons;
  }
  const docker = new Docker();
  if (!(await dockerAvailable(docker)))
    throw new Error("no Docker engine answers on this machine: start dockerd, or run this worker with --executor local --allow-local");
  const pythons = await imagePythons(docker);
  if (!pythons.length)
    throw new Error(`this Docker engine has no base image (${BASE_REPOSITORY}:<suite>): build one with 'switch-swe images base --suite bookworm'`);
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
  const scratch = join(workDir, "scratch");
  const logs = join(workDir, "run-logs");
  mkdirSync(scratch, { recursive: true });
  mkdirSync(logs, { recursive: true });
  const id = options.id ?? `${hostname()}-${process.pid}`;
  const executors = new ExecutorsByLimits(options, workDir, pythonDownloads);
  const executorFor = (limits: DockerLimits | undefined) => executors.for(limits);
  // The coordinator's git service wants the token; other sources never see it.
  const served = new Set<string>();
  const fetchEnv = (source: string) => (served.has(source) ? gitServiceAuthEnv(options.gitToken) : {});
  const mirrors = new MirrorCache(join(workDir, "git"), fetchEnv);
  const counters = { done: 0, failed: 0, active: 0 };
  let outOfService: { reason: string; since: string; source?: { url: string } } | undefined;
  const startedAt = new Date().toISOString();
  const info = (): WorkerInfo => ({
    id,
    host: hostname(),
    pid: process.pid,
    executor: options.executor,
    pythons,
    python_downloads: pythonDownloads,
    concurrency: options.concurrency,
    free_disk_bytes: freeDisk(workDir),
    started_at: startedAt,
    jobs_done: counters.done,
    jobs_failed: counters.failed,
    active: counters.active,
    ...(outOfService ? { out_of_service: { reason: outOfService.reason, since: outOfService.since } } : {}),
  });
  const announce = () =>
    redis
      .set(workerKey(options.prefix, id), JSON.stringify(info()), "EX", WORKER_TTL_SECONDS)
      .catch((error) => options.log.warn(`worker ${id}: cannot announce itself to Redis: ${(error as Error).message}`));
  await announce();
  const heartbeat = setInterval(announce, HEARTBEAT_SECONDS * 1000);

  // What this worker needs of itself to take jobs: room, its engine and images, a way to the job's source.
  const check = (source: { url: string } | undefined) =>
    selfCheck({ executor: options.executor, pythons: installed, workDir, minFree: options.minFreeDiskBytes ?? DEFAULT_MIN_FREE_DISK_BYTES, source, fetchEnv });
  let consumers: ReturnType<typeof consumeQueues> | undefined;
  let recheck: NodeJS.Timeout | undefined;
  const takeOut = async (reason: string, source: { url: string } | undefined) => {
    if (outOfService) return;
    outOfService = { reason, since: new Date().toISOString(), ...(source ? { source } : {}) };
    options.log.warn(`worker ${id}: out of service, taking no jobs: ${reason}`);
    // Paused before the job is answered, so that the coordinator's resend goes to another worker.
    await consumers?.pause();
    await announce();
    const again = async () => {
      const still = await check(outOfService?.source);
      if (still) {
        outOfService = { ...outOfService!, reason: still };
        await announce();
        recheck = setTimeout(again, (options.recheckSeconds ?? 30) * 1000);
        return;
      }
      options.log.info(`worker ${id}: back in service (its checks pass again)`);
      outOfService = undefined;
      consumers?.resume();
      await announce();
    };
    recheck = setTimeout(again, (options.recheckSeconds ?? 30) * 1000);
  };

  const process_ = limited(options.concurrency, async (job: Job): Promise<JobResult> => {
    counters.active++;
    const started = performance.now();
    try {
      // Jobs taken before this worker went out of service are handed back, not run.
      if (outOfService) {
        counters.failed++;
        return { worker: id, ok: false, error: { name: "OutOfService", message: outOfService.reason }, worker_fault: outOfService.reason };
      }
      const data = RunJob.safeParse(job.data);
      if (data.success && data.data.source?.served) served.add(data.data.source.clone_url);
      const result = await runJob(job, { id, executorFor, mirrors, scratch, logs, log: options.log });
      if (result.ok) counters.done++;
      else counters.failed++;
      if (!result.ok && !JOB_ERRORS.has(result.error.name)) {
        // A failure of the worker's own is taken for one only when a check of the worker fails too.
        const source = data.success && data.data.source ? { url: data.data.source.clone_url } : undefined;
        const reason = await check(source);
        if (reason) {
          await takeOut(reason, source);
          return { ...result, worker_fault: reason, seconds: (performance.now() - started) / 1000 };
        }
      }
      return { ...result, seconds: (performance.now() - started) / 1000 };
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
      clearTimeout(recheck);
      await consumers!.close();
      await redis.del(workerKey(options.prefix, id)).catch(() => undefined);
      redis.disconnect();
      await executors.close();
    },
  };
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

/**
 * Why this worker cannot work now, in one line, or undefined when it can: too little disk, no
 * Docker engine or base image (a Docker worker), or no way to fetch from the job's source.
 */
async function selfCheck(context: {
  executor: "docker" | "local";
  pythons: string[];
  workDir: string;
  minFree: number;
  source?: { url: string };
  fetchEnv: (source: string) => Record<string, string>;
}): Promise<string | undefined> {
  const free = freeDisk(context.workDir);
  if (free < context.minFree)
    return `the disk holding ${context.workDir} has ${(free / 2 ** 20).toFixed(0)} MiB free (this worker needs ${(context.minFree / 2 ** 20).toFixed(0)} MiB)`;
  if (context.executor === "docker") {
    const docker = new Docker();
    if (!(await dockerAvailable(docker))) return "its Docker engine does not answer";
    const images = await imagePythons(docker);
    const gone = context.pythons.filter((p) => !images.includes(p));
    if (gone.length) return `its base image of Python ${gone.join(", ")} is gone (${gone.map((p) => `${BASE_REPOSITORY}:${DEBIAN_FOR_PYTHON[p]}`).join(", ")})`;
  }
  if (context.source) {
    const { url } = context.source;
    try {
      await withTimeout(git(["ls-remote", "--heads", url], { env: context.fetchEnv(url) }), 60_000, "no answer in 60 s");
    } catch (error) {
      const words = (error as Error).message;
      if (/could not read Username|Authentication failed|401/i.test(words))
        return `cannot fetch from ${redactUrl(url)}: it refuses this worker's credentials (HTTP 401; start the worker with the coordinator's git service token in SWITCH_SWE_GIT_TOKEN)`;
      return `cannot fetch from ${redactUrl(url)}: ${words.replace(/^git ls-remote failed \(exit -?\d+\): /, "")}`;
    }
  }
  return undefined;
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(what)), ms)))]).finally(() => clearTimeout(timer));
}

function freeDisk(dir: string): number {
  try {
    const stats = statfsSync(dir);
    return stats.bavail * stats.bsize;
  } catch {
    return 0;
  }
}

/** One job: the same checkout the coordinator made, from this worker's own mirror, then the executor's build or run. */
async function runJob(
  job: Job,
  context: {
    id: string;
    executorFor: (limits: DockerLimits | undefined) => Promise<Executor>;
    mirrors: MirrorCache;
    scratch: string;
    logs: string;
    log: Logger;
  },
): Promise<JobResult> {
  const parsed = RunJob.safeParse(job.data);
  if (!parsed.success)
    return {
      worker: context.id,
      ok: false,
      error: {
        name: "ProtocolError",
        message: `job ${job.id} is not a job of this version of switch-swe (protocol ${QUEUE_PROTOCOL}): ${parsed.error.issues[0]?.message}`,
      },
    };
  const data = parsed.data;
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
