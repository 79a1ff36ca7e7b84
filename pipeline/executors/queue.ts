import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { Job, Queue, QueueEvents } from "bullmq";
import { Redis } from "ioredis";
import type { z } from "zod";
import { hashValue } from "../canonical.ts";
import { RunAbort } from "../failures.ts";
import { DEFAULT_GIT_SERVICE, type GitServiceSettings } from "./git-service.ts";
import type { Logger } from "../logger.ts";
import { DEBIAN_FOR_PYTHON, type DockerLimits } from "./docker.ts";
import type { PythonDownloads } from "./python-offer.ts";
import { needsRevisionLayer } from "./recipe-scripts.ts";
import { JobResult, type JobSource, QUEUE_PROTOCOL, queueNameFor, RunJob, WorkerInfo, type WrittenFile } from "./queue-protocol.ts";
import { applyWrittenFiles } from "./written-files.ts";
import { JobSources } from "./job-sources.ts";
import { announcedWorkers, connectRedis, liveWorkers } from "./fleet-redis.ts";
export { announcedWorkers, connectRedis, liveWorkers, redactUrl } from "./fleet-redis.ts";
import {
  BuildFailed,
  type EnvironmentSpec,
  type Executor,
  InfrastructureFault,
  type PythonOffer,
  RunTimedOut,
  type TestRunRequest,
  type TestRunResult,
} from "./types.ts";
import { type BaseRevision } from "../checkouts/checkout.ts";

export interface QueueExecutorOptions {
  redis: string;
  /** Key prefix in Redis. */
  prefix: string;
  /** The executor the workers run tests with. */
  workerExecutor: "docker" | "local";
  /** How long a job may wait without a live worker that can run it. */
  waitForWorkerSeconds: number;
  /** Limits of each Docker test container, sent with every run (the config's execution.limits). */
  limits?: DockerLimits;
  log: Logger;
  /** Seconds between progress lines while jobs are out (0: none). */
  progressSeconds?: number;
  /** Whether environments may use uv-managed Python downloads (auto: when every worker can). */
  pythonDownloads?: PythonDownloads;
  /** How the workers get the repositories whose clone source is on this machine (or all of them). */
  gitService?: GitServiceSettings;
}

/**
 * No worker that could run a job is in service, and at least one is out of service for a reason
 * of its own: the run stops at once, naming the reasons, instead of meeting it once per task.
 */
export class FleetUnavailable extends RunAbort {
  override name = "FleetUnavailable";
}

/** How many times one job is sent again after workers took themselves out of service on it. */
const MAX_WORKER_FAULT_RESENDS = 4;

/**
 * Test runs on a fleet of workers (`switch-swe worker`) through BullMQ queues in Redis, one per
 * (executor, Python version). The coordinating run keeps its cache, lock and artifacts; each job
 * carries the environment, where to clone the repository, the commit and the patches, the tests
 * and the limits. Its id is a hash of that content and of how many identical jobs this run sent
 * before, so a restarted coordinator finds the results of jobs already done instead of running
 * them again. A job fails as an infrastructure fault (retried by the caller, as the local
 * executors' faults are) when no live worker can take it within `waitForWorkerSeconds`.
 */
export class QueueExecutor implements Executor {
  readonly built: string[] = [];
  readonly buildSeconds = new Map<string, number>();
  private readonly queues = new Map<string, { queue: Queue; events: QueueEvents }>();
  /** Connections handed to BullMQ, which leaves a connection it was given open: closed by `close`. */
  private readonly connections: Redis[] = [];
  private readonly sent = new Map<string, number>();
  private readonly perWorker = new Map<string, number>();
  /** Per checkout directory, the files its runs wrote so far (sent with its next run). */
  private readonly written = new Map<string, Map<string, WrittenFile>>();
  private outstanding = 0;
  /**
   * Jobs this run took results from. They stay in Redis until the run ends (a coordinator killed
   * before then finds them when restarted), and are removed when it closes: a later run, forced
   * or not, never takes a result meant for an earlier one (the stages' record cache reuses work).
   */
  private readonly answered: { queue: Queue; id: string }[] = [];
  /** Jobs answered, the time from sending each to its result, and the time workers spent on them (for bench:queue). */
  readonly timing = { jobs: 0, roundTripSeconds: 0, workerSeconds: 0 };
  private progressTimer?: NodeJS.Timeout;
  private readonly sources: JobSources;

  private constructor(
    private readonly redis: Redis,
    private readonly options: QueueExecutorOptions,
  ) {
    this.sources = new JobSources(options.gitService ?? DEFAULT_GIT_SERVICE, options.prefix, options.log);
  }

  get kind(): "docker" | "local" {
    return this.options.workerExecutor;
  }

  static async connect(options: QueueExecutorOptions): Promise<QueueExecutor> {
    return new QueueExecutor(await connectRedis(options.redis), options);
  }

  private async queueFor(python: string): Promise<{ queue: Queue; events: QueueEvents }> {
    const name = queueNameFor(this.options.workerExecutor, python);
    let entry = this.queues.get(name);
    if (!entry) {
      // BullMQ wants connections that retry forever; QueueEvents blocks on its own.
      const connection = () => {
        const redis = new Redis(this.options.redis, { maxRetriesPerRequest: null });
        redis.on("error", () => undefined);
        this.connections.push(redis);
        return redis;
      };
      entry = {
        queue: new Queue(name, { connection: connection(), prefix: this.options.prefix }),
        events: new QueueEvents(name, { connection: connection(), prefix: this.options.prefix }),
      };
      this.queues.set(name, entry);
      await entry.events.waitUntilReady();
    }
    return entry;
  }

  async ensureEnvironment(env: EnvironmentSpec, base?: BaseRevision): Promise<{ built: boolean }> {
    let source: JobSource | undefined;
    if (needsRevisionLayer(env.recipe) && base) {
      // Where the caller did not say how its checkout is made, one is made here to learn it.
      let origin = base.origin;
      if (!origin) {
        const checkout = await base.checkout();
        await checkout.dispose();
        origin = checkout.origin;
      }
      if (!origin) throw new Error("the queue executor needs to know how a base revision's checkout is made (its origin)");
      source = await this.sources.sourceFor(env.repo, origin);
    }
    const result = await this.submit({ protocol: QUEUE_PROTOCOL, type: "ensure", env, source, base_commit: base?.commit, tests: [], overlay: [] });
    if (result.built) this.built.push(env.key);
    return { built: Boolean(result.built) };
  }

  async run(request: TestRunRequest): Promise<TestRunResult> {
    if (!request.source) throw new Error("the queue executor needs to know how the run's checkout was made (TestRunRequest.source)");
    const source = await this.sources.sourceFor(request.env.repo, request.source);
    const dir = resolve(request.checkoutDir);
    for (const gone of [...this.written.keys()].filter((d) => !existsSync(d))) this.written.delete(gone);
    const overlay = [...(this.written.get(dir)?.values() ?? [])].sort((a, b) => (a.path < b.path ? -1 : 1));
    const result = await this.submit({
      protocol: QUEUE_PROTOCOL,
      type: "run",
      env: request.env,
      source,
      base_commit: request.baseCommit,
      tests: request.tests,
      timeout_seconds: request.timeoutSeconds,
      overlay,
      ...(this.options.limits ? { limits: this.options.limits } : {}),
      ...(request.guarded ? { guarded: request.guarded } : {}),
    });
    if (!result.result) throw new InfrastructureFault("a worker answered a run without its result");
    // What the run wrote in its checkout is written here too, and goes with the checkout's next run.
    if (result.written?.length) {
      await applyWrittenFiles(dir, result.written);
      const files = this.written.get(dir) ?? new Map<string, WrittenFile>();
      for (const file of result.written) files.set(file.path, file);
      this.written.set(dir, files);
    }
    const { junitXml, channel, ...rest } = result.result;
    return { ...rest, ...(junitXml !== undefined ? { junitXml } : {}), ...(channel ? { channel } : {}) };
  }

  /**
   * Sends one job and waits for its result; a result carrying an error is thrown as that error's
   * class. A worker that answers with a fault of its own has taken itself out of service: the job
   * is sent again, for the workers still in service, and when none is left the run stops.
   */
  private async submit(job: z.input<typeof RunJob>): Promise<Extract<JobResult, { ok: true }>> {
    const content = hashValue(job);
    const ordinal = this.sent.get(content) ?? 0;
    this.sent.set(content, ordinal + 1);
    const { queue, events } = await this.queueFor(job.env.recipe.python);
    this.outstanding++;
    this.startProgress();
    try {
      const faults: string[] = [];
      for (let resend = 0; ; resend++) {
        const jobId = `${content.slice(0, 40)}-${ordinal}${resend ? `-again${resend}` : ""}`;
        const result = await this.sendOnce(queue, events, jobId, job);
        if (result.ok) return result;
        if (result.worker_fault !== undefined) {
          faults.push(`${result.worker}: ${result.worker_fault}`);
          this.options.log.warn(`queue: worker ${result.worker} took itself out of service (${result.worker_fault}); sending job ${jobId} again`);
          if (resend < MAX_WORKER_FAULT_RESENDS) continue;
          throw new InfrastructureFault(`job ${jobId} met a worker that took itself out of service ${faults.length} times: ${faults.join("; ")}`);
        }
        const { name, message } = result.error;
        if (name === "BuildFailed") throw new BuildFailed(message);
        if (name === "RunTimedOut") throw new RunTimedOut(message);
        if (name === "InfrastructureFault") throw new InfrastructureFault(message);
        throw new InfrastructureFault(`on worker ${result.worker}: ${message}`);
      }
    } finally {
      this.outstanding--;
    }
  }

  /** One send of a job under one id, and its answer (taken from Redis when a killed coordinator sent it before). */
  private async sendOnce(queue: Queue, events: QueueEvents, jobId: string, job: z.input<typeof RunJob>): Promise<JobResult> {
    // A job of this id already in the queue (sent by this coordinator before it was killed) is not added again: its result is taken.
    const existing = await this.reusable(queue, jobId);
    // A result already there needs no worker; anything else does.
    if (!existing || !(await existing.isCompleted())) await this.awaitWorker(job.env.recipe.python);
    const added =
      existing ?? (await queue.add(job.type, job, { jobId, attempts: 1, removeOnComplete: { age: 7 * 24 * 3600 }, removeOnFail: { age: 7 * 24 * 3600 } }));
    const sent = performance.now();
    const value = await this.finished(queue, added, events, job.env.recipe.python);
    const parsed = JobResult.safeParse(value);
    if (!parsed.success) throw new InfrastructureFault(`job ${jobId}: a worker's answer is not a result of this version of switch-swe`);
    const result = parsed.data;
    this.answered.push({ queue, id: jobId });
    this.timing.jobs++;
    this.timing.roundTripSeconds += (performance.now() - sent) / 1000;
    this.timing.workerSeconds += result.seconds ?? 0;
    this.perWorker.set(result.worker, (this.perWorker.get(result.worker) ?? 0) + 1);
    return result;
  }

  /**
   * The job of this id a killed coordinator sent, if it is still running or was answered well. A
   * fault it was answered with (or a job that failed) is removed, so the run is sent again: a
   * fault is never replayed as a result.
   */
  private async reusable(queue: Queue, jobId: string): Promise<Job | undefined> {
    const existing = await Job.fromId(queue, jobId);
    if (!existing) return undefined;
    const state = await existing.getState();
    const answeredWell = state === "completed" && (existing.returnvalue as { ok?: unknown } | undefined)?.ok === true;
    if (state !== "failed" && (state !== "completed" || answeredWell)) return existing;
    await existing.remove().catch(() => undefined);
    return undefined;
  }

  /** The job's return value once done; a job that fails, or waits with no live worker able to take it, is an infrastructure fault. */
  private async finished(queue: Queue, job: Job, events: QueueEvents, python: string): Promise<unknown> {
    const state = await job.getState();
    if (state === "completed") return (await Job.fromId(queue, job.id!))?.returnvalue;
    if (state === "failed") {
      // A failed job (its worker crashed, say) is removed so that sending it again runs it again.
      const reason = (await Job.fromId(queue, job.id!))?.failedReason;
      await job.remove().catch(() => undefined);
      throw new InfrastructureFault(`job ${job.id} failed on a worker: ${reason ?? "no reason given"}`);
    }
    let watchdog: NodeJS.Timeout | undefined;
    const orphaned = new Promise<never>((_, reject) => {
      let silentSince = Date.now();
      const check = async () => {
        // A Redis restarted without persistence (or flushed) forgets the job: nothing would ever finish it.
        if ((await Job.fromId(queue, job.id!).catch(() => job)) === undefined) {
          reject(new InfrastructureFault(`job ${job.id} vanished from Redis while it waited or ran (was Redis restarted without persistence, or flushed?)`));
          return;
        }
        const fleet = await this.fleetFor(python).catch(() => ({ inService: [], outOfService: [] }));
        if (fleet.inService.length) silentSince = Date.now();
        else if (fleet.outOfService.length && ["waiting", "prioritized", "delayed"].includes(await job.getState().catch(() => "unknown"))) {
          reject(this.unavailable(python, fleet.outOfService));
          return;
        } else if (Date.now() - silentSince > this.options.waitForWorkerSeconds * 1000) {
          reject(
            new InfrastructureFault(
              `no live worker could run job ${job.id} (${this.options.workerExecutor} executor, Python ${python}) for ${this.options.waitForWorkerSeconds} s`,
            ),
          );
          return;
        }
        watchdog = setTimeout(check, 2000);
      };
      watchdog = setTimeout(check, 2000);
    });
    try {
      return await Promise.race([job.waitUntilFinished(events), orphaned]);
    } catch (error) {
      if (error instanceof InfrastructureFault) throw error;
      // BullMQ's own words when the job's keys went while it waited (Redis flushed or restarted).
      if (/Missing key for job/.test((error as Error).message))
        throw new InfrastructureFault(`job ${job.id} vanished from Redis while it waited or ran (was Redis restarted without persistence, or flushed?)`);
      await job.remove().catch(() => undefined);
      throw new InfrastructureFault(`job ${job.id} failed on a worker: ${(error as Error).message}`);
    } finally {
      clearTimeout(watchdog);
    }
  }

  /**
   * Docker workers offer the Debian suites' versions (as the Docker executor does everywhere);
   * local workers what their machines' interpreters give. Downloads: as the settings say, or with
   * `auto`, when every connected worker of the executor can download.
   */
  async pythonOffer(): Promise<PythonOffer> {
    const workers = (await liveWorkers(this.redis, this.options.prefix)).filter((w) => w.executor === this.options.workerExecutor);
    const setting = this.options.pythonDownloads ?? "auto";
    const downloads = setting === "auto" ? workers.length > 0 && workers.every((w) => w.python_downloads) : setting === "yes";
    if (this.options.workerExecutor === "docker")
      return { installed: Object.keys(DEBIAN_FOR_PYTHON).sort(), downloads, describe: "the Docker workers' Debian base images" };
    return {
      installed: [...new Set(workers.flatMap((w) => w.pythons))].sort(),
      downloads,
      describe: `the interpreters of ${workers.length} connected local worker(s)`,
    };
  }

  /** The connected workers that could run this Python: in service, and out of it (with their reasons). */
  private async fleetFor(python: string): Promise<{ inService: WorkerInfo[]; outOfService: WorkerInfo[] }> {
    const capable = (await announcedWorkers(this.redis, this.options.prefix)).filter((w) => this.canRun(w, python));
    return { inService: capable.filter((w) => !w.out_of_service), outOfService: capable.filter((w) => w.out_of_service) };
  }

  private unavailable(python: string, outOfService: WorkerInfo[]): FleetUnavailable {
    return new FleetUnavailable(
      `no worker that runs Python ${python} with the ${this.options.workerExecutor} executor is in service: ${outOfService
        .map((w) => `${w.id} is out of service since ${w.out_of_service!.since}: ${w.out_of_service!.reason}`)
        .join("; ")} (see 'switch-swe workers'; mend them, or start one that works, and run again)`,
    );
  }

  private canRun(worker: WorkerInfo, python: string): boolean {
    return worker.executor === this.options.workerExecutor && worker.pythons.includes(python);
  }

  /** Waits (at most waitForWorkerSeconds) for a live worker that can run this Python; says who is connected otherwise. */
  private async awaitWorker(python: string): Promise<void> {
    const deadline = Date.now() + this.options.waitForWorkerSeconds * 1000;
    for (;;) {
      const { inService, outOfService } = await this.fleetFor(python);
      if (inService.length) return;
      if (outOfService.length) throw this.unavailable(python, outOfService);
      const workers = await liveWorkers(this.redis, this.options.prefix);
      if (Date.now() > deadline) {
        const who = workers.length ? workers.map((w) => `${w.id} (${w.executor}: Python ${w.pythons.join(", ") || "none"})`).join("; ") : "none";
        throw new InfrastructureFault(
          `no connected worker runs Python ${python} with the ${this.options.workerExecutor} executor (waited ${this.options.waitForWorkerSeconds} s; connected: ${who})`,
        );
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  private startProgress(): void {
    const every = this.options.progressSeconds ?? 15;
    if (!every || this.progressTimer) return;
    this.progressTimer = setInterval(() => {
      if (!this.outstanding) return;
      void this.progressLine().then(
        (line) => this.options.log.info(line),
        () => undefined,
      );
    }, every * 1000);
    this.progressTimer.unref();
  }

  /** Jobs waiting / active / done / failed over this run's queues, and what each worker did for it. */
  async progressLine(): Promise<string> {
    const totals = { waiting: 0, active: 0, completed: 0, failed: 0 };
    for (const { queue } of this.queues.values()) {
      const counts = await queue.getJobCounts("waiting", "active", "completed", "failed");
      for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += counts[key] ?? 0;
    }
    const workers = [...this.perWorker.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([w, n]) => `${w} ${n}`)
      .join(", ");
    return `queue: ${totals.waiting} waiting, ${totals.active} active, ${totals.completed} done, ${totals.failed} failed; this run's jobs by worker: ${workers || "none yet"}`;
  }

  async close(): Promise<void> {
    clearInterval(this.progressTimer);
    const t = this.timing;
    if (t.jobs)
      this.options.log.info(
        `queue: ${t.jobs} job(s); ${t.roundTripSeconds.toFixed(1)} s from sending to result, ${t.workerSeconds.toFixed(1)} s of it on the workers: ${(((t.roundTripSeconds - t.workerSeconds) / t.jobs) * 1000).toFixed(1)} ms of queue overhead a job`,
      );
    for (const { queue, id } of this.answered.splice(0)) await queue.remove(id).catch(() => undefined);
    for (const { queue, events } of this.queues.values()) {
      await events.close().catch(() => undefined);
      await queue.close().catch(() => undefined);
    }
    for (const connection of this.connections) connection.disconnect();
    this.redis.disconnect();
    await this.sources.close();
  }
}
