// The queue on a fleet that shares only the network (`npm run bench:queue -- --isolated`): the
// demo's qualify and oracle through Redis and the coordinator's git service to 1 and then 2
// workers, each in a container of its own (test/helpers/fleet.ts), reaching the coordinator over
// the Docker bridge. Per fleet size: a first run builds the workers' environments (not timed), a
// second, from qualify, is timed. Prints the stages' seconds, jobs, throughput (jobs a second),
// the queue's overhead a job (from sending to result, less the worker's own time) and the git
// service's fetches. Needs redis-server, a Docker engine and switch-swe-base:bookworm.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runPipeline, type RunSummary } from "../pipeline/engine/engine.ts";
import { createLogger } from "../pipeline/logger.ts";
import { prepareDemoCopy, withExecution } from "../test/helpers/demo-copy.ts";
import { bridgeGateway, removeFleetLeftovers, startWorkerContainer, type WorkerContainer } from "../test/helpers/fleet.ts";
import { freePort, startRedis } from "../test/helpers/redis.ts";

const stageSeconds = (summary: RunSummary, names: string[]) => summary.stages.filter((s) => names.includes(s.stage)).reduce((n, s) => n + (s.seconds ?? 0), 0);

/** A fleet: its good workers, and whether a misconfigured one (the wrong git token) stands beside them. */
export interface FleetShape {
  good: number;
  broken: boolean;
}

export async function benchIsolatedFleet(shapes: FleetShape[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-fleet-"));
  removeFleetLeftovers();
  const gateway = await bridgeGateway();
  const redis = await startRedis({ bind: ["127.0.0.1", gateway], password: "bench" });
  if (!redis) throw new Error("bench:queue --isolated needs redis-server (apt-get install redis-server)");
  process.env.SWITCH_SWE_BENCH_GIT_TOKEN = "bench-token";
  const containers: WorkerContainer[] = [];
  try {
    const corpus = await prepareDemoCopy(join(dir, "corpus"));
    corpus.server.stop();
    for (const shape of shapes) {
      const size = shape.good;
      const label = `${size} isolated worker(s)${shape.broken ? " + 1 broken" : ""}`;
      const prefix = `bench-fleet-${size}${shape.broken ? "-broken" : ""}`;
      const workerRedis = `redis://:bench@${gateway}:${redis.port}`;
      for (let i = 0; i < size; i++) containers.push(startWorkerContainer({ name: `w${i}`, redis: workerRedis, prefix, gitToken: "bench-token" }));
      if (shape.broken) containers.push(startWorkerContainer({ name: "broken", redis: workerRedis, prefix, gitToken: "wrong-token", recheckSeconds: 3600 }));
      const lines: string[] = [];
      const log = createLogger({ level: "info", write: (line) => lines.push(line) });
      const demo = await prepareDemoCopy(join(dir, prefix), { corpusDir: join(dir, "corpus", "out", "demo-corpus") });
      const execution = {
        executor: "queue" as const,
        queue_executor: "local" as const,
        jobs: size,
        queue: {
          redis: redis.url,
          name: prefix,
          wait_for_worker_seconds: 120,
          git_service: { listen: `${gateway}:${await freePort()}`, token_env: "SWITCH_SWE_BENCH_GIT_TOKEN", serve: "local" as const },
        },
      };
      try {
        const warm = await runPipeline({ ...withExecution(demo.options, execution), log });
        if (!warm.ok) throw new Error(`the first run on ${label} did not finish`);
        lines.length = 0;
        const timed = await runPipeline({ ...withExecution(demo.options, execution), log }, { from: "qualify" });
        if (!timed.ok) throw new Error(`the timed run on ${label} did not finish`);
        const seconds = stageSeconds(timed, ["qualify", "oracle"]);
        const overhead = lines.find((line) => line.includes("ms of queue overhead a job")) ?? "";
        const jobs = Number(/queue: (\d+) job/.exec(overhead)?.[1] ?? 0);
        console.log(
          `${label}: demo qualify + oracle ${seconds.toFixed(1)} s, ${jobs} jobs, ${(jobs / seconds).toFixed(2)} jobs/s; ${overhead.replace(/^.*?queue: /, "")}`,
        );
      } finally {
        demo.server.stop();
        for (const c of containers.splice(0)) c.remove();
      }
    }
  } finally {
    for (const c of containers) c.remove();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
