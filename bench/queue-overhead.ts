// The queue executor's cost against the local executor on the same tasks: the demo pipeline
// (whose qualify and oracle stages run every test) once with `--executor local` and `jobs` tasks
// at once, and once through a BullMQ queue in a private redis-server with `jobs` worker processes
// (one job at a time each, their own work directories), so the total concurrency is the same.
// Prints both stages' times, their ratio (goal: queue within 1.10 of local), and the queue's
// per-job overhead (from sending a job to its result, less the time the worker spent on it;
// goal: under 50 ms). Needs redis-server (Debian's package).
// With --isolated: the same stages on a fleet that shares only the network (bench/queue-fleet.ts):
// 2 workers, 1, and 1 beside a misconfigured one (the wrong git service token).
// Usage: npm run bench:queue [-- --jobs 2] [-- --isolated]
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requireFinished, type RunSummary } from "../pipeline/engine/engine.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { createLogger } from "../pipeline/logger.ts";
import { prepareDemoCopy, withExecution } from "../test/helpers/demo-copy.ts";
import { startRedis } from "../test/helpers/redis.ts";

if (process.argv.includes("--isolated")) {
  const { benchIsolatedFleet } = await import("./queue-fleet.ts");
  await benchIsolatedFleet();
  process.exit(0);
}
const jobsArg = process.argv.indexOf("--jobs");
const jobs = jobsArg >= 0 ? Number(process.argv[jobsArg + 1]) : 2;
const stageSeconds = (summary: RunSummary, names: string[]) => summary.stages.filter((s) => names.includes(s.stage)).reduce((n, s) => n + (s.seconds ?? 0), 0);
const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-queue-"));
const redis = await startRedis();
if (!redis) throw new Error("bench:queue needs redis-server (apt-get install redis-server)");
try {
  // Environments are built before timing: both runs find them ready (the workers' in their own directories).
  const local = await prepareDemoCopy(join(dir, "local"));
  requireFinished(
    await runProjectOnce(withExecution(local.options, { executor: "local", jobs })).finally(() => local.server.stop()),
    "bench/queue-overhead.ts",
  );
  const timedLocal = await prepareDemoCopy(join(dir, "local-timed"), { corpusDir: join(dir, "local", "out", "demo-corpus") });
  const localOptions = withExecution({ ...timedLocal.options, workDir: local.workDir }, { executor: "local", jobs });
  const localSummary = await runProjectOnce(localOptions, { from: "qualify" }).finally(() => timedLocal.server.stop());

  const workers = Array.from({ length: jobs }, (_, i) =>
    spawn(
      process.execPath,
      [
        "bin/switch-swe.mjs",
        "worker",
        "--redis",
        redis.url,
        "--prefix",
        "bench",
        "--executor",
        "local",
        "--allow-local",
        "--work-dir",
        join(dir, `worker-${i}`),
        "--name",
        `worker-${i}`,
      ],
      { stdio: "ignore" },
    ),
  );
  const lines: string[] = [];
  const log = createLogger({ level: "info", write: (line) => lines.push(line) });
  const queued = await prepareDemoCopy(join(dir, "queue"), { corpusDir: join(dir, "local", "out", "demo-corpus") });
  const queueExecution = {
    executor: "queue" as const,
    queue_executor: "local" as const,
    jobs,
    queue: { redis: redis.url, name: "bench", wait_for_worker_seconds: 60 },
  };
  // A first run builds the workers' environments; the second, forced from qualify, is timed.
  requireFinished(await runProjectOnce({ ...withExecution(queued.options, queueExecution), log }), "bench/queue-overhead.ts");
  lines.length = 0;
  const queueSummary = await runProjectOnce({ ...withExecution(queued.options, queueExecution), log }, { from: "qualify" }).finally(() => queued.server.stop());
  for (const w of workers) w.kill("SIGTERM");

  const stages = ["qualify", "oracle"];
  const l = stageSeconds(localSummary, stages);
  const q = stageSeconds(queueSummary, stages);
  const overhead = lines.find((line) => line.includes("ms of queue overhead a job"));
  console.log(
    `demo qualify + oracle, ${jobs} at once: local executor ${l.toFixed(1)} s; queue with ${jobs} local workers ${q.toFixed(1)} s; ratio ${(q / l).toFixed(3)} (goal <= 1.10)`,
  );
  console.log(overhead ?? "the queue executor reported no jobs");
} finally {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}
