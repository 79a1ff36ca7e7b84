import { type Command, Option } from "commander";
import { createLogger } from "../../pipeline/logger.ts";
import { connectRedis, liveWorkers, redactUrl } from "../../pipeline/executors/queue.ts";
import { startQueueWorker } from "../../pipeline/executors/queue-worker.ts";
import { type ExitCode, type Io, UsageError } from "../io.ts";

const DEFAULT_REDIS = "redis://127.0.0.1:6379";
const DEFAULT_PREFIX = "switch-swe";

function positiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag}: expected a positive whole number, got '${value}'`);
  return n;
}

/**
 * `switch-swe worker` (runs test jobs from the queue until stopped) and `switch-swe workers`
 * (lists the workers connected to a queue).
 */
export function registerWorker(program: Command, io: Io, exit: ExitCode): void {
  program
    .command("worker")
    .description("run test jobs of a queue (executor: queue) on this host until stopped (Ctrl-C or SIGTERM finishes the jobs in hand)")
    .option("--redis <url>", "the queue's Redis", DEFAULT_REDIS)
    .option("--prefix <name>", "the queue's key prefix (the config's execution.queue.name)", DEFAULT_PREFIX)
    .addOption(new Option("--executor <kind>", "how this worker runs tests").choices(["docker", "local"]).default("docker"))
    .option("--allow-local", "let a worker with the local executor run the repositories' tests unsandboxed on this host")
    .option("--concurrency <n>", "jobs run at once", "1")
    .option("--work-dir <dir>", "this worker's mirrors, environments and scratch checkouts", ".switch-swe/worker")
    .option("--name <id>", "the worker's name in `switch-swe workers` (default: host-pid)")
    .option("--lock-seconds <n>", "after this long without a sign of life, a worker's job goes to another worker", "30")
    .addHelpText("after", "\nExample:\n  switch-swe worker --redis redis://queue.internal:6379 --concurrency 2 --work-dir /srv/switch-swe-worker")
    .action(
      exit.act(async (opts) => {
        const log = createLogger({ level: "info", write: (line) => io.err(line + "\n") });
        const worker = await startQueueWorker({
          redis: opts.redis,
          prefix: opts.prefix,
          executor: opts.executor,
          allowLocal: Boolean(opts.allowLocal),
          concurrency: positiveInteger("--concurrency", opts.concurrency),
          workDir: opts.workDir,
          id: opts.name,
          lockSeconds: positiveInteger("--lock-seconds", opts.lockSeconds),
          log,
        });
        await new Promise<void>((resolve) => {
          const stop = (signal: string) => {
            log.info(`worker ${worker.id}: ${signal}: finishing the jobs in hand, then stopping`);
            resolve();
          };
          process.once("SIGINT", () => stop("SIGINT"));
          process.once("SIGTERM", () => stop("SIGTERM"));
        });
        await worker.stop();
        const { jobs_done, jobs_failed } = worker.info();
        io.out(`worker ${worker.id}: ${jobs_done} job(s) done, ${jobs_failed} answered with an error\n`);
        return 0;
      }),
    );
  program
    .command("workers")
    .description("list the workers connected to a queue: executor, Python versions, free disk, jobs done")
    .option("--redis <url>", "the queue's Redis", DEFAULT_REDIS)
    .option("--prefix <name>", "the queue's key prefix", DEFAULT_PREFIX)
    .option("--json", "one JSON object per worker")
    .addHelpText("after", "\nExample:\n  switch-swe workers --redis redis://queue.internal:6379")
    .action(
      exit.act(async (opts) => {
        const redis = await connectRedis(opts.redis);
        try {
          const workers = await liveWorkers(redis, opts.prefix);
          if (opts.json) {
            for (const w of workers) io.out(JSON.stringify(w) + "\n");
            return 0;
          }
          if (!workers.length) {
            io.out(`no worker is connected to ${redactUrl(opts.redis)} (prefix ${opts.prefix})\n`);
            return 0;
          }
          for (const w of workers) {
            io.out(
              `${w.id}  ${w.executor}  Python ${w.pythons.join(",")}  ${w.active}/${w.concurrency} busy  ${w.jobs_done} done  ${w.jobs_failed} errors  ${(w.free_disk_bytes / 2 ** 30).toFixed(1)} GiB free  since ${w.started_at}\n`,
            );
          }
          return 0;
        } finally {
          redis.disconnect();
        }
      }),
    );
}
