// The queue on a fleet that shares only the network (`npm run bench:queue -- --isolated`): the
// demo's qualify and oracle through Redis and the coordinator's git service to workers each in a
// container of its own (test/helpers/fleet.ts), reaching the coordinator over the Docker bridge.
// One warm-up run on two workers builds their environments (not timed); then, timed, from
// qualify: 2 workers, 1 worker (the other stopped), and that 1 beside a misconfigured worker (the
// wrong git service token). Prints per fleet the stages' seconds, jobs, throughput (jobs a
// second) and the queue's overhead a job (from sending to result, less the worker's own time).
// Needs redis-server, a Docker engine and switch-swe-base:bookworm.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunSummary } from "../pipeline/engine/engine.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { createLogger } from "../pipeline/logger.ts";
import { prepareDemoCopy, withExecution } from "../test/helpers/demo-copy.ts";
import { createFleetNetwork, removeFleetLeftovers, startWorkerContainer, type WorkerContainer, workersOn } from "../test/helpers/fleet.ts";
import { freePort, startRedis } from "../test/helpers/redis.ts";
import { until } from "../test/helpers/until.ts";

const stageSeconds = (summary: RunSummary, names: string[]) => summary.stages.filter((s) => names.includes(s.stage)).reduce((n, s) => n + (s.seconds ?? 0), 0);

export async function benchIsolatedFleet(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-fleet-"));
  removeFleetLeftovers();
  const network = await createFleetNetwork();
  const gateway = network.gateway;
  const redis = await startRedis({ bind: ["127.0.0.1", gateway], password: "bench" });
  if (!redis) {
    await network.remove();
    throw new Error("bench:queue --isolated needs redis-server (apt-get install redis-server)");
  }
  process.env.SWITCH_SWE_BENCH_GIT_TOKEN = "bench-token";
  const prefix = "bench-fleet";
  const workerRedis = `redis://:bench@${gateway}:${redis.port}`;
  const start = (name: string, token: string) =>
    startWorkerContainer({ name, network: network.name, redis: workerRedis, prefix, gitToken: token, recheckSeconds: 3600 });
  const workers = [start("w0", "bench-token"), start("w1", "bench-token")];
  const containers: WorkerContainer[] = [...workers];
  try {
    await until("two workers", async () => (await workersOn(redis.url, prefix)).length === 2, 120);
    const lines: string[] = [];
    const log = createLogger({ level: "info", write: (line) => lines.push(line) });
    const demo = await prepareDemoCopy(join(dir, "demo"));
    const execution = {
      executor: "queue" as const,
      queue_executor: "local" as const,
      jobs: 2,
      queue: {
        redis: redis.url,
        name: prefix,
        wait_for_worker_seconds: 120,
        git_service: { listen: `${gateway}:${await freePort()}`, token_env: "SWITCH_SWE_BENCH_GIT_TOKEN", serve: "local" as const },
      },
    };
    const timed = async (label: string) => {
      lines.length = 0;
      const summary = await runProjectOnce({ ...withExecution(demo.options, execution), log }, { from: "qualify" });
      if (!summary.ok) throw new Error(`the run on ${label} did not finish`);
      const seconds = stageSeconds(summary, ["qualify", "oracle"]);
      const overhead = lines.find((line) => line.includes("ms of queue overhead a job")) ?? "";
      const jobs = Number(/queue: (\d+) job/.exec(overhead)?.[1] ?? 0);
      console.log(
        `${label}: demo qualify + oracle ${seconds.toFixed(1)} s, ${jobs} jobs, ${(jobs / seconds).toFixed(2)} jobs/s; ${overhead.replace(/^.*?queue: /, "")}`,
      );
    };
    try {
      const warm = await runProjectOnce({ ...withExecution(demo.options, execution), log });
      if (!warm.ok) throw new Error("the warm-up run did not finish");
      await timed("2 isolated workers");
      workers[1]!.remove();
      await until("one worker", async () => (await workersOn(redis.url, prefix)).length === 1, 120);
      await timed("1 isolated worker");
      containers.push(start("broken", "wrong-token"));
      await until("the broken worker", async () => (await workersOn(redis.url, prefix)).length === 2, 120);
      await timed("1 isolated worker + 1 broken");
      const broken = (await workersOn(redis.url, prefix)).find((w) => w.id === "broken");
      console.log(
        `the broken worker: ${broken?.jobs_failed ?? "?"} job(s) failed, ${broken?.out_of_service ? `out of service: ${broken.out_of_service.reason}` : "in service"}`,
      );
    } finally {
      demo.server.stop();
    }
  } finally {
    for (const c of containers) c.remove();
    await redis.stop();
    await network.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}
