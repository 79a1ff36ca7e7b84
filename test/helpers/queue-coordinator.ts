// A coordinator in a process of its own, for the queue tests to kill: sends the test runs a JSON
// file lists (argv[2]) through the queue executor one after another, and appends one line per
// finished run to argv[3]. Usage: node --import tsx queue-coordinator.ts RUNS.json DONE.jsonl
import { appendFileSync, readFileSync } from "node:fs";
import { QueueExecutor } from "../../pipeline/executors/queue.ts";
import type { TestRunRequest } from "../../pipeline/executors/types.ts";
import { silentLogger } from "../../pipeline/logger.ts";

const { redis, prefix, runs } = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as { redis: string; prefix: string; runs: TestRunRequest[] };
const executor = await QueueExecutor.connect({ redis, prefix, workerExecutor: "local", waitForWorkerSeconds: 60, log: silentLogger, progressSeconds: 0 });
for (const [index, run] of runs.entries()) {
  const result = await executor.run(run);
  appendFileSync(process.argv[3]!, JSON.stringify({ index, exitCode: result.exitCode, junit: Boolean(result.junitXml) }) + "\n");
}
await executor.close();
