import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Queue } from "bullmq";
import Docker from "dockerode";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE_REPOSITORY } from "../../../pipeline/executors/docker.ts";
import { queueNameFor } from "../../../pipeline/executors/queue-protocol.ts";
import { UV_MANAGED_PYTHONS } from "../../../pipeline/executors/python-offer.ts";
import { runProjectOnce } from "../../../pipeline/project/project.ts";
import { prepareDemoCopy, withExecution } from "../../helpers/demo-copy.ts";
import { demoOutputsDigest } from "../../helpers/demo-digest.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { createFleetNetwork, type FleetNetwork, removeFleetLeftovers, startWorkerContainer, type WorkerContainer, workersOn } from "../../helpers/fleet.ts";
import { freePort, startRedis } from "../../helpers/redis.ts";
import { runCli } from "../../helpers/cli-in-process.ts";
import { tempDir } from "../../helpers/tmp.ts";
import { until } from "../../helpers/until.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const TOKEN = "fleet-test-token";
const REDIS_PASSWORD = "fleet-test-redis";
/** The fleet's queue (the second test has one of its own). */
const FLEET = "fleet";

/** Every job the coordinator put on the queues while `work` ran (jobs stay in Redis until the run closes). */
async function watchJobs<T>(redisUrl: string, prefix: string, work: () => Promise<T>): Promise<{ value: T; jobs: Map<string, unknown> }> {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  connection.on("error", () => undefined);
  const queues = UV_MANAGED_PYTHONS.map((python) => new Queue(queueNameFor("local", python), { connection, prefix }));
  const jobs = new Map<string, unknown>();
  let watching = true;
  const poll = async () => {
    while (watching) {
      for (const queue of queues)
        for (const job of await queue.getJobs(["waiting", "active", "completed", "failed", "delayed", "prioritized"]).catch(() => []))
          if (job) jobs.set(`${queue.name}/${job.id}`, job.data);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const polling = poll();
  try {
    return { value: await work(), jobs };
  } finally {
    watching = false;
    await polling;
    for (const queue of queues) await queue.close();
    connection.disconnect();
  }
}

const workersOf = (redisUrl: string, prefix: string) => workersOn(redisUrl, prefix, "announced");

describe("a fleet that shares only the network (each worker in a container of its own, the coordinator reached over TCP)", () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let gateway = "";
  let network: FleetNetwork | undefined;
  /** Redis as the containers reach it (the fleet network's gateway), and as the coordinator does (loopback). */
  let workerRedis = "";
  let gitPort = 0;
  const containers: WorkerContainer[] = [];
  let skip = false;

  beforeAll(async () => {
    if (!(await dockerForTests())) {
      skip = true;
      return;
    }
    await new Docker().getImage(`${BASE_REPOSITORY}:bookworm`).inspect();
    removeFleetLeftovers();
    network = await createFleetNetwork();
    gateway = network.gateway;
    redis = await startRedis({ bind: ["127.0.0.1", gateway], password: REDIS_PASSWORD });
    if (!redis) {
      skip = true;
      return;
    }
    workerRedis = `redis://:${REDIS_PASSWORD}@${gateway}:${redis.port}`;
    gitPort = await freePort();
  }, 120_000);

  afterAll(async () => {
    for (const c of containers) c.remove();
    await redis?.stop();
    await network?.remove();
  });

  const demoRun = async (dir: string, prefix: string) => {
    const demo = await prepareDemoCopy(dir);
    process.env.SWITCH_SWE_FLEET_TEST_TOKEN = TOKEN;
    const started = Date.now();
    const watched = await watchJobs(redis!.url, prefix, () =>
      runProjectOnce(
        withExecution(demo.options, {
          executor: "queue",
          queue_executor: "local",
          jobs: 4,
          infrastructure_backoff_seconds: [1, 1],
          queue: {
            redis: redis!.url,
            name: prefix,
            wait_for_worker_seconds: 120,
            git_service: { listen: `${gateway}:${gitPort}`, token_env: "SWITCH_SWE_FLEET_TEST_TOKEN", serve: "local" },
          },
        }),
      ).finally(() => demo.server.stop()),
    );
    const digest = demoOutputsDigest({
      artifacts: join(demo.workDir, "artifacts"),
      manifests: join(demo.workDir, "..", "..", "manifests", "demo"),
      audits: join(demo.workDir, "..", "..", "audits", "demo"),
    });
    return { ...watched, demo, digest, seconds: (Date.now() - started) / 1000 };
  };
  /** A misconfigured host: it has the wrong token for the coordinator's git service. */
  const misconfigured = (prefix: string) =>
    startWorkerContainer({
      name: "host-broken",
      network: network!.name,
      redis: workerRedis,
      prefix,
      gitToken: "not-the-token",
      recheckSeconds: 600,
      concurrency: 2,
    });
  const fixture = () => JSON.parse(readFileSync(join(root, "test", "fixtures", "demo-outputs.json"), "utf8"));

  it("runs the demo's qualify and oracle on isolated workers, one killed mid-run and one that cannot fetch: the local executor's artifacts byte for byte, the broken one out of service, and no job holds a path of the coordinator", async (context) => {
    if (skip) return context.skip();
    const prefix = FLEET;
    const a = startWorkerContainer({ name: "host-a", network: network!.name, redis: workerRedis, prefix, gitToken: TOKEN, concurrency: 2 });
    const b = startWorkerContainer({ name: "host-b", network: network!.name, redis: workerRedis, prefix, gitToken: TOKEN, concurrency: 2 });
    // Beside them from the start, a misconfigured host: it has the wrong token for the git service.
    const broken = misconfigured(prefix);
    containers.push(a, b, broken);
    await until("the three workers", async () => (await workersOf(redis!.url, prefix)).length === 3, 120);
    const dir = tempDir();
    // The first good worker to have done some work is killed (its whole container): which one
    // takes the jobs first depends on how fast each builds its environment on a loaded machine.
    // Waiting ends with the run: a run that ends with no kill fails below, saying so.
    let killedAfter = -1;
    let killed = "";
    let finished = false;
    const killer = until(
      "a good worker to do some work, or the run to end",
      async () => {
        if (finished) return true;
        const busy = (await workersOf(redis!.url, prefix)).find((w) => (w.id === "host-a" || w.id === "host-b") && w.jobs_done >= 8);
        if (!busy) return false;
        killedAfter = busy.jobs_done;
        killed = busy.id;
        (busy.id === "host-a" ? a : b).kill();
        return true;
      },
      3600,
    );
    const run = await demoRun(dir, prefix).finally(() => (finished = true));
    await killer;
    const survivorName = killed === "host-a" ? "host-b" : "host-a";
    const survivorLogs = (killed === "host-a" ? b : a).logs();
    expect(run.value.ok, `${survivorLogs.slice(-3000)}\n${broken.logs().slice(-3000)}`).toBe(true);
    expect(killedAfter, "no worker was killed before the run ended").toBeGreaterThanOrEqual(8);
    expect(run.digest).toEqual({ files: fixture().files, digest: fixture().digest });
    // Every job: its sources are URLs of the git service, and nothing in it names the coordinator's files.
    expect(run.jobs.size).toBeGreaterThan(20);
    const coordinatorPaths = [dir, root.replace(/\/$/, ""), tmpdir()];
    for (const [id, data] of run.jobs) {
      const text = JSON.stringify(data);
      for (const path of coordinatorPaths) expect(text.includes(path), `${id} holds ${path}`).toBe(false);
      const source = (data as { source?: { clone_url: string; served: boolean } }).source;
      if (source)
        expect(source, id).toMatchObject({
          clone_url: expect.stringMatching(new RegExp(`^http://${gateway.replaceAll(".", "\\.")}:${gitPort}/`)),
          served: true,
        });
    }
    // The survivor took over: with the broken one, it is the one left, and it did the work. The
    // broken one went out of service at its first fetch and was fed nothing more: it failed only
    // what it held then.
    const workers = await workersOf(redis!.url, prefix);
    expect(workers.map((w) => w.id).sort()).toEqual([survivorName, "host-broken"].sort());
    const survivor = workers.find((w) => w.id === survivorName)!;
    const beside = workers.find((w) => w.id === "host-broken")!;
    expect(survivor.out_of_service).toBeUndefined();
    expect(survivor.jobs_done).toBeGreaterThan(20);
    expect(beside.out_of_service?.reason).toMatch(/refuses this worker's credentials \(HTTP 401/);
    expect(beside.jobs_failed).toBeGreaterThan(0);
    expect(beside.jobs_failed).toBeLessThanOrEqual(4);
    console.log(`fleet: demo pipeline on 2 good workers (one killed after ${killedAfter} jobs) and a broken one in ${run.seconds.toFixed(0)} s`);
    // verify from the command line through the same fleet: the reference resolves, an empty artifact does not.
    const manifests = join(run.demo.workDir, "..", "..", "manifests", "demo");
    const session = readdirSync(join(manifests, "sessions"))
      .filter((n) => n.startsWith("session-"))
      .sort()[0]!;
    const focus = JSON.parse(readFileSync(join(manifests, "sessions", session), "utf8")).focus as string;
    writeFileSync(join(dir, "reference.patch"), JSON.parse(readFileSync(join(manifests, "heldout", `${focus}.json`), "utf8")).implementation_patch);
    writeFileSync(join(dir, "empty.patch"), "");
    writeFileSync(
      run.demo.configPath,
      readFileSync(run.demo.configPath, "utf8").replace(
        /^execution:\n/m,
        `execution:\n  queue_executor: local\n  queue:\n    name: ${prefix}\n    git_service: { listen: "${gateway}:${gitPort}", token_env: SWITCH_SWE_FLEET_TEST_TOKEN }\n`,
      ),
    );
    const verify = (artifact: string) =>
      runCli([
        "verify",
        "-c",
        run.demo.configPath,
        "--session",
        join(manifests, "sessions", session),
        "--artifact",
        join(dir, artifact),
        "--condition",
        "control",
        "--executor",
        "queue",
        "--redis",
        redis!.url,
        "--json",
      ]);
    const resolved = await verify("reference.patch");
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(JSON.parse(resolved.stdout)).toMatchObject({ task_id: focus, resolved: true });
    expect((await verify("empty.patch")).code).toBe(1);
  }, 2_400_000);

  it("stops at once, naming why, when the only worker cannot fetch, and lists it out of service", async (context) => {
    if (skip) return context.skip();
    const prefix = "fleet-broken-alone";
    containers.push(misconfigured(prefix));
    await until("the broken worker", async () => (await workersOf(redis!.url, prefix)).length === 1, 120);
    // Alone, it gets the run nowhere: the run stops at its first fetch, with its reason, instead of failing every task.
    const alone = await demoRun(tempDir(), prefix);
    expect(alone.value.ok).toBe(false);
    const qualify = alone.value.stages.find((s) => s.stage === "qualify")!;
    expect(qualify.status).toBe("incomplete");
    expect(qualify.transient?.join("\n")).toMatch(/host-broken is out of service since .*: cannot fetch from http:\/\/.*refuses this worker's credentials/);
    expect(qualify.transient?.join("\n")).toMatch(/the stage stopped: \d+ record\(s\) not started/);
    const [out] = await workersOf(redis!.url, prefix);
    expect(out!.out_of_service?.reason).toMatch(/refuses this worker's credentials \(HTTP 401/);
    // Fed no more after it went out: only what it held when it did.
    expect(out!.jobs_failed).toBeLessThanOrEqual(4);
    const listed = await runCli(["workers", "--redis", redis!.url, "--prefix", prefix]);
    expect(listed.stdout).toMatch(
      /^host-broken {2}local .*\n {2}OUT OF SERVICE since \S+: cannot fetch from http:\/\/\S+: it refuses this worker's credentials/m,
    );
  }, 2_400_000);
});
