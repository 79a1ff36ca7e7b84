import { mkdirSync, readFileSync, readlinkSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { assertNoCredentials, JobResult, queueNameFor } from "../../../pipeline/executors/queue-protocol.ts";
import { applyWrittenFiles, checkoutState, writtenSince } from "../../../pipeline/executors/written-files.ts";
import { tempDir } from "../../helpers/tmp.ts";
import { refusingPort, startRedis } from "../../helpers/redis.ts";
import { Queue, QueueEvents } from "bullmq";
import { Redis } from "ioredis";
import { startQueueWorker } from "../../../pipeline/executors/queue-worker.ts";
import { selfCheck, WorkerHealth } from "../../../pipeline/executors/worker-health.ts";
import { silentLogger } from "../../../pipeline/logger.ts";

describe("the queue's parts", () => {
  it("carries back exactly the files a run wrote, and lays them over another checkout", async () => {
    const worker = tempDir();
    mkdirSync(join(worker, "tests"));
    writeFileSync(join(worker, "tests", "test_a.py"), "def test_a(): pass\n");
    writeFileSync(join(worker, "gone.txt"), "x");
    const before = await checkoutState(worker);
    // What a test run leaves: a marker file, a changed file, a deleted one, a link; byte code and caches are not carried.
    writeFileSync(join(worker, "tests", ".test_a.runs"), "1");
    writeFileSync(join(worker, "tests", "test_a.py"), "def test_a(): assert True\n");
    unlinkSync(join(worker, "gone.txt"));
    symlinkSync("tests/test_a.py", join(worker, "alias.py"));
    mkdirSync(join(worker, "tests", "__pycache__"));
    writeFileSync(join(worker, "tests", "__pycache__", "test_a.cpython-311.pyc"), "junk");
    const written = await writtenSince(worker, before);
    expect(written.map((f) => [f.path, f.content_base64 === null ? "deleted" : f.link !== undefined ? "link" : "file"])).toEqual([
      ["alias.py", "link"],
      ["gone.txt", "deleted"],
      ["tests/.test_a.runs", "file"],
      ["tests/test_a.py", "file"],
    ]);
    const coordinator = tempDir();
    writeFileSync(join(coordinator, "gone.txt"), "x");
    await applyWrittenFiles(coordinator, written);
    expect(readFileSync(join(coordinator, "tests", ".test_a.runs"), "utf8")).toBe("1");
    expect(readFileSync(join(coordinator, "tests", "test_a.py"), "utf8")).toBe("def test_a(): assert True\n");
    expect(readlinkSync(join(coordinator, "alias.py"))).toBe("tests/test_a.py");
    expect(() => readFileSync(join(coordinator, "gone.txt"))).toThrow();
    // A path from another machine never leaves the checkout.
    await expect(applyWrittenFiles(coordinator, [{ path: "../outside.txt", content_base64: "eA==" }])).rejects.toThrow("leaves its checkout");
  });

  it("never puts credentials on the queue, and routes by executor and Python version", () => {
    expect(() => assertNoCredentials("https://user:ghp_secret@github.com/o/r.git")).toThrow("carries credentials");
    expect(() => assertNoCredentials("https://ghp_secret@github.com/o/r.git")).toThrow("https://***@github.com/o/r.git");
    expect(() => assertNoCredentials("https://github.com/o/r.git")).not.toThrow();
    expect(() => assertNoCredentials("ssh://git@github.com/o/r.git")).not.toThrow();
    expect(() => assertNoCredentials("/srv/mirrors/o__r.bundle")).not.toThrow();
    expect(queueNameFor("docker", "3.11")).toBe("runs-docker-py3.11");
    // A worker's answer is checked before it is believed.
    expect(JobResult.safeParse({ worker: "w", ok: true, result: { timedOut: false, exitCode: "0", wallSeconds: 1, outputTail: "" } }).success).toBe(false);
  });
});

describe("a worker's own checks", () => {
  it("answers a job of another protocol with a protocol error, unrun, and stays in service", async (context) => {
    const redis = await startRedis();
    if (!redis) return context.skip();
    const prefix = "protocol-test";
    const worker = await startQueueWorker({
      redis: redis.url,
      prefix,
      executor: "local",
      concurrency: 1,
      workDir: tempDir(),
      allowLocal: true,
      log: silentLogger,
      pythonDownloads: "no",
      minFreeDiskBytes: 0,
    });
    const connect = () => new Redis(redis.url, { maxRetriesPerRequest: null }).on("error", () => undefined);
    const [connection, eventsConnection] = [connect(), connect()];
    const name = queueNameFor("local", worker.info().pythons[0]!);
    const queue = new Queue(name, { connection, prefix });
    const events = new QueueEvents(name, { connection: eventsConnection, prefix });
    try {
      await events.waitUntilReady();
      const job = await queue.add("run", { protocol: 0, type: "run", from: "an older coordinator" });
      const answer = JobResult.parse(await job.waitUntilFinished(events, 120_000));
      expect(answer).toMatchObject({
        ok: false,
        error: { name: "ProtocolError", message: expect.stringContaining(`job ${job.id} is not a job of this version`) },
      });
      // Not the worker's fault: no check of itself, still in service, the job counted as failed once.
      expect(answer).not.toHaveProperty("worker_fault");
      expect(worker.info()).toMatchObject({ jobs_failed: 1, jobs_done: 0 });
      expect(worker.info().out_of_service).toBeUndefined();
    } finally {
      await events.close();
      await queue.close();
      connection.disconnect();
      eventsConnection.disconnect();
      await worker.stop();
      await redis.stop();
    }
  }, 180_000);

  it("finds a full disk and a source it cannot fetch from, and takes the worker out of service until its checks pass", async () => {
    const workDir = tempDir();
    const base = { executor: "local" as const, pythons: ["3.11"], workDir, fetchEnv: () => ({}) };
    expect(await selfCheck({ ...base, minFree: 0 })).toBeUndefined();
    expect(await selfCheck({ ...base, minFree: Number.MAX_SAFE_INTEGER })).toMatch(/^the disk holding \S+ has \d+ MiB free \(this worker needs \d+ MiB\)$/);
    const port = await refusingPort();
    expect(await selfCheck({ ...base, minFree: 0, source: { url: `http://127.0.0.1:${port}/org__lib.git` } })).toMatch(
      new RegExp(`^cannot fetch from http://127\\.0\\.0\\.1:${port}/org__lib\\.git: .*(Could not connect|Failed to connect|Connection refused)`),
    );
    // Out of service on a confirmed failure (paused before it answers), back once a recheck passes.
    let failing = true;
    const events: string[] = [];
    const health = new WorkerHealth({
      id: "w",
      log: silentLogger,
      recheckSeconds: 0.05,
      check: async () => (failing ? "its Docker engine does not answer" : undefined),
      pause: async () => void events.push("pause"),
      resume: async () => void events.push("resume"),
    });
    expect(await health.confirm(undefined)).toBe("its Docker engine does not answer");
    expect(health.state?.reason).toBe("its Docker engine does not answer");
    expect(events).toEqual(["pause"]);
    failing = false;
    for (let i = 0; i < 100 && health.state; i++) await new Promise((r) => setTimeout(r, 20));
    expect(health.state).toBeUndefined();
    expect(events).toEqual(["pause", "resume"]);
    // A failure its checks do not confirm is the job's: the worker stays in service.
    expect(await health.confirm(undefined)).toBeUndefined();
    health.stop();
  });
});
