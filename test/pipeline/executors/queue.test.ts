import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Queue, Worker } from "bullmq";
import Docker from "dockerode";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoCorpus } from "../../helpers/demo-corpus.ts";
import { baseRevision, freshCheckout } from "../../../pipeline/checkouts/checkout.ts";
import { loadProfiles } from "../../../pipeline/profiles/load.ts";
import { parseJunitReport } from "../../../pipeline/test-results/junit.ts";
import { environmentSpec } from "../../../pipeline/executors/environment.ts";
import { planEnvironments } from "../../../pipeline/profiles/environments.ts";
import { recipeFor } from "../../../pipeline/profiles/recipes.ts";
import { DockerExecutor } from "../../../pipeline/executors/docker.ts";
import { LocalExecutor } from "../../../pipeline/executors/local.ts";
import { QueueExecutor } from "../../../pipeline/executors/queue.ts";
import { queueNameFor, type WorkerInfo, workerKey } from "../../../pipeline/executors/queue-protocol.ts";
import { type BaseRevision } from "../../../pipeline/checkouts/checkout.ts";
import { InfrastructureFault, type EnvironmentSpec, type TestRunRequest } from "../../../pipeline/executors/types.ts";
import { HEARTBEAT_SECONDS } from "../../../pipeline/executors/queue-protocol.ts";
import { MirrorCache } from "../../../pipeline/git.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { refusingPort, startRedis } from "../../helpers/redis.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";
import { until } from "../../helpers/until.ts";
import { workersOn } from "../../helpers/fleet.ts";
import { runCli } from "../../helpers/cli-in-process.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const bin = join(root, "bin", "switch-swe.mjs");
const REPO = "demo-org/geometry";

/** A test file that sleeps, so a job is still running when its worker is killed. */
const slowTest = (name: string, seconds: number) => `diff --git a/tests/${name}.py b/tests/${name}.py
new file mode 100644
--- /dev/null
+++ b/tests/${name}.py
@@ -0,0 +1,4 @@
+import time
+
+def test_waits():
+    time.sleep(${seconds})
`;

interface Fleet {
  redis: string;
  prefix: string;
  workers: Map<string, ChildProcess>;
}

/** Starts a worker process (a "host" of its own: its own work directory, mirrors and environments). */
function startWorker(fleet: Fleet, name: string, workDir: string, lockSeconds = 2, executor: "local" | "docker" = "local"): ChildProcess {
  const sandbox = executor === "local" ? ["--allow-local"] : [];
  const child = spawn(
    process.execPath,
    [
      bin,
      "worker",
      "--redis",
      fleet.redis,
      "--prefix",
      fleet.prefix,
      "--executor",
      executor,
      ...sandbox,
      "--work-dir",
      workDir,
      "--name",
      name,
      "--lock-seconds",
      String(lockSeconds),
    ],
    { stdio: "ignore" },
  );
  fleet.workers.set(name, child);
  return child;
}

async function stopWorker(fleet: Fleet, name: string, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  const child = fleet.workers.get(name);
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill(signal);
  });
}

/** A connection for BullMQ in a test, its errors (the server stopped at the end) not reported as unhandled. */
function quietRedis(url: string): Redis {
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  redis.on("error", () => undefined);
  return redis;
}

const workerInfo = (redisUrl: string, prefix: string) => workersOn(redisUrl, prefix, "live");

describe("the queue executor (BullMQ on Redis, workers on other hosts)", () => {
  let server: Awaited<ReturnType<typeof startRedis>>;
  let request: (patches: { name: string; text: string }[], tests: string[]) => Promise<TestRunRequest>;
  let base: BaseRevision;
  let env: EnvironmentSpec;
  const fleets: Fleet[] = [];
  const fleet = (prefix: string): Fleet => {
    const made = { redis: server!.url, prefix, workers: new Map<string, ChildProcess>() };
    fleets.push(made);
    return made;
  };

  beforeAll(async () => {
    server = await startRedis();
    if (!server) return;
    const dir = fileTempDir();
    const corpus = await demoCorpus(join(root, "data", "demo", "corpus.yaml"), join(dir, "corpus"));
    const records = readFileSync(corpus.recordsFile, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .filter((r) => r.repo === REPO);
    const profileFile = join(root, "data", "demo", "repos", "demo-org__geometry.json");
    const profile = loadProfiles([{ path: profileFile, text: readFileSync(profileFile, "utf8") }]).profiles.get(REPO)!.profile;
    const first = records[0]!;
    env = planEnvironments(
      records.map((r) => ({ id: r.instance_id, repo: REPO, recipe: recipeFor(profile, { id: r.instance_id }), createdAt: r.created_at })),
    ).get(first.instance_id)!;
    const mirror = await new MirrorCache(join(dir, "git")).ensure(REPO, join(corpus.dir, "repos", "demo-org__geometry"), first.base_commit);
    base = baseRevision(mirror, first.base_commit, dir);
    request = async (patches, tests) => {
      const checkout = await freshCheckout(mirror, first.base_commit, patches, dir);
      return { env, checkoutDir: checkout.dir, source: checkout.origin, tests, timeoutSeconds: 300, baseCommit: first.base_commit };
    };
  }, 600_000);

  afterAll(async () => {
    for (const f of fleets) for (const name of f.workers.keys()) await stopWorker(f, name, "SIGKILL");
    await server?.stop();
  });

  // The demo's qualify and oracle through a fleet, byte for byte, with verify and `workers`: test/pipeline/executors/fleet.test.ts (workers in containers of their own).

  it("gives a killed worker's job to another worker, which finishes it once, with the same result", async (context) => {
    if (!server) return context.skip();
    const f = fleet("kill");
    const dir = tempDir();
    // The same run on this machine's local executor, for the result to compare with.
    const slow = await request([{ name: "slow test", text: slowTest("test_slow", 6) }], ["tests/test_slow.py"]);
    const local = new LocalExecutor(join(dir, "reference-envs"), silentLogger);
    await local.ensureEnvironment(env, base);
    const reference = await local.run(slow);
    expect(
      parseJunitReport(reference.junitXml!, { runner: env.recipe.test_runner, python: env.recipe.python }).results.map((r) => [r.nodeId, r.status]),
    ).toEqual([["tests/test_slow.py::test_waits", "passed"]]);

    startWorker(f, "doomed", join(dir, "doomed"));
    const limits = { memoryBytes: 1024 ** 3, pids: 256, cpus: 1 };
    const executor = await QueueExecutor.connect({
      redis: f.redis,
      prefix: f.prefix,
      workerExecutor: "local",
      waitForWorkerSeconds: 120,
      limits,
      log: silentLogger,
      progressSeconds: 0,
    });
    const queue = new Queue(queueNameFor("local", env.recipe.python), { connection: quietRedis(f.redis), prefix: f.prefix });
    try {
      const pending = executor.run(slow);
      // Killed while the job is in its hands (building its environment or running the tests).
      await until("the job to be active", async () => (await queue.getActiveCount()) > 0);
      await new Promise((r) => setTimeout(r, 1500));
      await stopWorker(f, "doomed", "SIGKILL");
      startWorker(f, "rescuer", join(dir, "rescuer"));
      const result = await pending;
      const outcomes = (xml: string) =>
        parseJunitReport(xml, { runner: env.recipe.test_runner, python: env.recipe.python }).results.map((r) => [r.nodeId, r.status]);
      expect(outcomes(result.junitXml!)).toEqual(outcomes(reference.junitXml!));
      expect(result.exitCode).toBe(reference.exitCode);
      // Done once, by the second worker; the killed one never answered.
      const [job] = await queue.getJobs(["completed"]);
      expect(await queue.getJobCounts("completed", "failed", "active", "waiting")).toMatchObject({ completed: 1, failed: 0, active: 0, waiting: 0 });
      expect(job!.returnvalue.worker).toBe("rescuer");
      // The job said everything the worker needed, the coordinator's limits too; no secret.
      expect(job!.data).toMatchObject({ type: "run", tests: ["tests/test_slow.py"], limits, source: { repo: REPO, commit: slow.source!.commit } });
      // From the coordinator's git service, by name: never a path of the coordinator.
      expect(job!.data.source).toMatchObject({ clone_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/demo-org__geometry\.git$/), served: true });
      await new Promise((r) => setTimeout(r, (HEARTBEAT_SECONDS + 1) * 1000));
      const rescuer = (await workerInfo(f.redis, f.prefix)).find((w) => w.id === "rescuer")!;
      expect(rescuer.jobs_done).toBe(1);
    } finally {
      await executor.close();
      await queue.close();
      await stopWorker(f, "rescuer");
    }
  }, 600_000);

  it("reuses the jobs a killed coordinator finished when it is started again", async (context) => {
    if (!server) return context.skip();
    const f = fleet("restart");
    const dir = tempDir();
    startWorker(f, "steady", join(dir, "steady"), 30);
    const runs = [];
    for (let i = 0; i < 4; i++) runs.push(await request([{ name: "slow test", text: slowTest(`test_step_${i}`, 2) }], [`tests/test_step_${i}.py`]));
    writeFileSync(join(dir, "runs.json"), JSON.stringify({ redis: f.redis, prefix: f.prefix, runs }));
    const coordinator = () =>
      spawn(process.execPath, ["--import", "tsx", join(root, "test", "helpers", "queue-coordinator.ts"), join(dir, "runs.json"), join(dir, "done.jsonl")], {
        cwd: root,
        stdio: "ignore",
      });
    const lines = () => (existsSync(join(dir, "done.jsonl")) ? readFileSync(join(dir, "done.jsonl"), "utf8").trim().split("\n").filter(Boolean) : []);
    const first = coordinator();
    await until("two runs to finish", async () => lines().length >= 2, 300);
    first.kill("SIGKILL");
    await new Promise((r) => first.once("exit", r));
    const before = lines().length;
    expect(before).toBeLessThan(4);
    const second = coordinator();
    const code = await new Promise<number | null>((r) => second.once("exit", r));
    expect(code).toBe(0);
    expect(
      lines()
        .slice(before)
        .map((l) => JSON.parse(l).index),
    ).toEqual([0, 1, 2, 3]);
    // Four runs were asked for twice, and each ran once: the restart took the finished ones' results.
    const queue = new Queue(queueNameFor("local", env.recipe.python), { connection: quietRedis(f.redis), prefix: f.prefix });
    // Once the coordinator recorded them and closed, the finished jobs are gone from Redis: no later run takes them.
    expect(await queue.getJobCounts("completed", "failed", "active", "waiting")).toMatchObject({ completed: 0, failed: 0, active: 0, waiting: 0 });
    await queue.close();
    await new Promise((r) => setTimeout(r, (HEARTBEAT_SECONDS + 1) * 1000));
    const steady = (await workerInfo(f.redis, f.prefix)).find((w) => w.id === "steady")!;
    expect(steady.jobs_done).toBe(4);
    await stopWorker(f, "steady");
  }, 600_000);

  it("sends again, never replays, a fault a killed coordinator was answered with", async (context) => {
    if (!server) return context.skip();
    const f = fleet("replay");
    const run = await request([{ name: "slow test", text: slowTest("test_after_fault", 0) }], ["tests/test_after_fault.py"]);
    // A worker that answers every job with a fault (a host whose engine just died, say).
    const announce = quietRedis(f.redis);
    const info: WorkerInfo = {
      id: "faulty",
      host: "here",
      pid: process.pid,
      executor: "local",
      pythons: [env.recipe.python],
      python_downloads: false,
      concurrency: 1,
      free_disk_bytes: 1e12,
      started_at: new Date().toISOString(),
      jobs_done: 0,
      jobs_failed: 0,
      active: 0,
    };
    await announce.set(workerKey(f.prefix, "faulty"), JSON.stringify(info), "EX", 60);
    const faulty = new Worker(
      queueNameFor("local", env.recipe.python),
      async () => ({ worker: "faulty", ok: false, error: { name: "InfrastructureFault", message: "the engine went away" } }),
      { connection: quietRedis(f.redis), prefix: f.prefix },
    );
    const killed = await QueueExecutor.connect({
      redis: f.redis,
      prefix: f.prefix,
      workerExecutor: "local",
      waitForWorkerSeconds: 60,
      log: silentLogger,
      progressSeconds: 0,
    });
    await expect(killed.run(run)).rejects.toThrow("the engine went away");
    // That coordinator dies without closing (its answered job stays in Redis); the faulty host goes away, a good one comes.
    await faulty.close();
    await announce.del(workerKey(f.prefix, "faulty"));
    announce.disconnect();
    startWorker(f, "healthy", join(tempDir(), "healthy"), 30);
    const restarted = await QueueExecutor.connect({
      redis: f.redis,
      prefix: f.prefix,
      workerExecutor: "local",
      waitForWorkerSeconds: 120,
      log: silentLogger,
      progressSeconds: 0,
    });
    try {
      const result = await restarted.run(run);
      expect(
        parseJunitReport(result.junitXml!, { runner: env.recipe.test_runner, python: env.recipe.python }).results.map((r) => [r.nodeId, r.status]),
      ).toEqual([["tests/test_after_fault.py::test_waits", "passed"]]);
    } finally {
      await restarted.close();
      await stopWorker(f, "healthy");
    }
  }, 600_000);

  it("does not wait forever for a job that vanished from Redis, and sends it again", async (context) => {
    if (!server) return context.skip();
    const f = fleet("vanish");
    startWorker(f, "survivor", join(tempDir(), "survivor"), 30);
    const executor = await QueueExecutor.connect({
      redis: f.redis,
      prefix: f.prefix,
      workerExecutor: "local",
      waitForWorkerSeconds: 120,
      log: silentLogger,
      progressSeconds: 0,
    });
    const queue = new Queue(queueNameFor("local", env.recipe.python), { connection: quietRedis(f.redis), prefix: f.prefix });
    const admin = quietRedis(f.redis);
    try {
      const slow = await request([{ name: "slow test", text: slowTest("test_lost", 8) }], ["tests/test_lost.py"]);
      const pending = executor.run(slow).then(
        () => undefined,
        (e: Error) => e,
      );
      await until("the job to be active", async () => (await queue.getActiveCount()) > 0, 300);
      // Redis restarted without persistence: every key is gone, the job with them.
      await admin.flushall();
      const error = await pending;
      expect(error).toBeInstanceOf(InfrastructureFault);
      expect(error!.message).toMatch(/^job \S+ vanished from Redis while it waited or ran/);
      // The same run sent again (as the caller's infrastructure retry does) finishes on the same worker.
      const again = await executor.run(slow);
      expect(parseJunitReport(again.junitXml!, { runner: env.recipe.test_runner, python: env.recipe.python }).results.map((r) => [r.nodeId, r.status])).toEqual(
        [["tests/test_lost.py::test_waits", "passed"]],
      );
    } finally {
      await executor.close();
      await queue.close();
      admin.disconnect();
      await stopWorker(f, "survivor");
    }
  }, 600_000);

  it("runs jobs on a worker with the Docker executor, in the image of the environment's key", async (context) => {
    if (!server || !(await dockerForTests())) return context.skip();
    const f = fleet("docker");
    startWorker(f, "boxed", join(tempDir(), "boxed"), 30, "docker");
    const executor = await QueueExecutor.connect({
      redis: f.redis,
      prefix: f.prefix,
      workerExecutor: "docker",
      waitForWorkerSeconds: 120,
      log: silentLogger,
      progressSeconds: 0,
    });
    try {
      await executor.ensureEnvironment(env, base);
      const failing = `diff --git a/tests/test_boxed.py b/tests/test_boxed.py
new file mode 100644
--- /dev/null
+++ b/tests/test_boxed.py
@@ -0,0 +1,5 @@
+def test_holds():
+    assert 1 + 1 == 2
+
+def test_breaks():
+    assert 1 + 1 == 3
`;
      const result = await executor.run(await request([{ name: "two tests", text: failing }], ["tests/test_boxed.py"]));
      const outcomes = parseJunitReport(result.junitXml!, { runner: env.recipe.test_runner, python: env.recipe.python }).results.map((r) => [
        r.nodeId,
        r.status,
      ]);
      expect(outcomes.sort()).toEqual([
        ["tests/test_boxed.py::test_breaks", "failed"],
        ["tests/test_boxed.py::test_holds", "passed"],
      ]);
      // The worker's engine (this machine's) holds the environment under its key's tag.
      expect((await new Docker().getImage(DockerExecutor.imageTag(env)).inspect()).RepoTags).toContain(DockerExecutor.imageTag(env));
      const [boxed] = await workerInfo(f.redis, f.prefix);
      expect(boxed).toMatchObject({ id: "boxed", executor: "docker" });
      expect(boxed!.pythons).toContain(env.recipe.python);

      // A recipe that installs from the checkout: the worker builds the base revision's layer from its
      // own mirror, told how by the base revision's origin; the coordinator makes no checkout for it.
      const installing = environmentSpec(env.repo, { ...env.recipe, install: ["test -f pyproject.toml && touch .installed-from-checkout"] }, env.asOf);
      const noCheckoutHere = { ...base, checkout: () => Promise.reject(new Error("the coordinator made a checkout to learn the base revision's origin")) };
      await executor.ensureEnvironment(installing, noCheckoutHere);
      const installed = await executor.run({ ...(await request([{ name: "two tests", text: failing }], ["tests/test_boxed.py"])), env: installing });
      expect(
        parseJunitReport(installed.junitXml!, { runner: env.recipe.test_runner, python: env.recipe.python })
          .results.map((r) => r.status)
          .sort(),
      ).toEqual(["failed", "passed"]);
    } finally {
      await executor.close();
      await stopWorker(f, "boxed");
    }
  }, 1_200_000);

  it("says in one line, within a bounded wait, when Redis is down, no Docker engine answers, or no worker can run a recipe", async (context) => {
    if (!server) return context.skip();
    const dead = `redis://127.0.0.1:${await refusingPort()}`;
    await expect(QueueExecutor.connect({ redis: dead, prefix: "x", workerExecutor: "local", waitForWorkerSeconds: 5, log: silentLogger })).rejects.toThrow(
      `cannot reach Redis at ${dead} (waited at most 5 s)`,
    );
    const down = await runCli(["workers", "--redis", dead]);
    expect(down.code).not.toBe(0);
    expect(down.stderr.trim().split("\n")).toHaveLength(1);
    expect(down.stderr).toContain(`cannot reach Redis at ${dead}`);
    // A fact about the machine, not a bug of ours.
    expect(down.stderr).not.toContain("internal error");

    // A worker asked for Docker where no engine answers, and a local worker not allowed to run tests unsandboxed.
    const noEngine = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [bin, "worker", "--redis", server!.url, "--executor", "docker", "--work-dir", tempDir()], {
        env: { ...process.env, DOCKER_HOST: "unix:///nonexistent/docker.sock" },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr!.on("data", (c) => (stderr += c));
      child.once("exit", (code) => resolve({ code, stderr }));
    });
    expect(noEngine.code).not.toBe(0);
    expect(noEngine.stderr.trim().split("\n")).toHaveLength(1);
    expect(noEngine.stderr).toContain("no Docker engine answers on this machine");
    expect(noEngine.stderr).not.toContain("internal error");
    const unsandboxed = await runCli(["worker", "--redis", server.url, "--executor", "local", "--work-dir", tempDir()]);
    expect(unsandboxed.code).not.toBe(0);
    expect(unsandboxed.stderr).toContain("start it with --allow-local");

    // A recipe no connected worker supports fails as an infrastructure fault after the stated wait.
    const f = fleet("unsupported");
    startWorker(f, "py-here", tempDir(), 30);
    await until("the worker to announce itself", async () => (await workerInfo(f.redis, f.prefix)).length > 0);
    const executor = await QueueExecutor.connect({
      redis: f.redis,
      prefix: f.prefix,
      workerExecutor: "local",
      waitForWorkerSeconds: 2,
      log: silentLogger,
      progressSeconds: 0,
    });
    try {
      const run = await request([], ["tests"]);
      const old = { ...run, env: { ...run.env, recipe: { ...run.env.recipe, python: "3.6" } } };
      const error = await executor.run(old).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(error).toBeInstanceOf(InfrastructureFault);
      expect(error!.message).toMatch(
        /^no connected worker runs Python 3\.6 with the local executor \(waited 2 s; connected: py-here \(local: Python [\d., ]+\)\)$/,
      );
    } finally {
      await executor.close();
      await stopWorker(f, "py-here");
    }
  }, 600_000);
});
