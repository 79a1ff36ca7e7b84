import { type Command, Option } from "commander";
import { createLogger } from "../../pipeline/logger.ts";
import { announcedWorkers, connectRedis, redactUrl } from "../../pipeline/executors/queue.ts";
import { DEFAULT_MIN_FREE_DISK_BYTES, startQueueWorker } from "../../pipeline/executors/queue-worker.ts";
import { type ExitCode, type Io, UsageError } from "../io.ts";
import { positiveWholeNumber } from "../numeric-options.ts";

const DEFAULT_REDIS = "redis://127.0.0.1:6379";
const DEFAULT_PREFIX = "switch-swe";

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
    .option("--concurrency <n>", "jobs run at once", positiveWholeNumber, 1)
    .option("--work-dir <dir>", "this worker's mirrors, environments and scratch checkouts", ".switch-swe/worker")
    .option("--name <id>", "the worker's name in `switch-swe workers` (default: host-pid)")
    .option("--lock-seconds <n>", "after this long without a sign of life, a worker's job goes to another worker", positiveWholeNumber, 30)
    .option("--git-token-env <name>", "the variable holding the coordinator's git service token", "SWITCH_SWE_GIT_TOKEN")
    .option("--recheck-seconds <n>", "while out of service, how often the worker checks itself again", positiveWholeNumber, 30)
    .option(
      "--min-free-disk-mb <n>",
      "below this much free disk in --work-dir the worker takes no jobs",
      positiveWholeNumber,
      DEFAULT_MIN_FREE_DISK_BYTES / 2 ** 20,
    )
    .addHelpText("after", "\nExample:\n  switch-swe worker --redis redis://queue.internal:6379 --concurrency 2 --work-dir /srv/switch-swe-worker")
    .action(
      exit.act(async (opts) => {
        const log = createLogger({ level: "info", write: (line) => io.err(line + "\n") });
        const worker = await startQueueWorker({
          redis: opts.redis,
          prefix: opts.prefix,
          executor: opts.executor,
          allowLocal: Boolean(opts.allowLocal),
          concurrency: opts.concurrency,
          workDir: opts.workDir,
          id: opts.name,
          lockSeconds: opts.lockSeconds,
          gitToken: process.env[opts.gitTokenEnv] || undefined,
          recheckSeconds: opts.recheckSeconds,
          minFreeDiskBytes: opts.minFreeDiskMb * 2 ** 20,
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
  registerWorkersList(program, io, exit);
}

/** `switch-swe workers`: who is connected, and why one is out of service. */
function registerWorkersList(program: Command, io: Io, exit: ExitCode): void {
  program
    .command("workers")
    .description("list the workers connected to a queue: executor, Python versions, free disk, jobs done, and why one is out of service")
    .option("--redis <url>", "the queue's Redis", DEFAULT_REDIS)
    .option("--prefix <name>", "the queue's key prefix", DEFAULT_PREFIX)
    .option("--json", "one JSON object per worker")
    .addHelpText("after", "\nExample:\n  switch-swe workers --redis redis://queue.internal:6379")
    .action(
      exit.act(async (opts) => {
        const redis = await connectRedis(opts.redis);
        try {
          const workers = await announcedWorkers(redis, opts.prefix);
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
              `${w.id}  ${w.executor}  Python ${w.pythons.join(",")}  ${w.active}/${w.concurrency} busy  ${w.jobs_done} done  ${w.jobs_failed} errors  ${(w.free_disk_bytes / 2 ** 30).toFixed(1)} GiB free  since ${w.started_at}` +
                (w.out_of_service ? `\n  OUT OF SERVICE since ${w.out_of_service.since}: ${w.out_of_service.reason}` : "") +
                "\n",
            );
          }
          return 0;
        } finally {
          redis.disconnect();
        }
      }),
    );
}
