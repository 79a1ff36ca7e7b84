// Workers on "other hosts" of this machine: each in a container of its own (its own mount and
// network namespaces), sharing nothing with the coordinator but TCP to Redis and to the git
// service on the Docker bridge's gateway address. The container gets this Node binary and this
// checkout of switch-swe, read-only, as a worker's operator would install them; it sees none of
// the coordinator's files (its work directory, mirrors, the demo corpus live in the host's /tmp).
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { BASE_REPOSITORY } from "../../pipeline/executors/docker.ts";
import { announcedWorkers, connectRedis, liveWorkers } from "../../pipeline/executors/queue.ts";
import type { WorkerInfo } from "../../pipeline/executors/queue-protocol.ts";
import { buildNetworkSettings } from "../../pipeline/executors/types.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
/** Labels every worker container, so a test run's leftovers can be found and removed. */
export const FLEET_LABEL = "org.switch-swe.test-fleet";

/** The address of this machine on the default Docker bridge: where containers reach the coordinator. */
export async function bridgeGateway(docker = new Docker()): Promise<string> {
  const bridge = await docker.getNetwork("bridge").inspect();
  const gateway = (bridge.IPAM?.Config ?? []).map((c: { Gateway?: string }) => c.Gateway).find(Boolean);
  if (!gateway) throw new Error("the Docker bridge network has no gateway address");
  return gateway;
}

export interface WorkerContainer {
  name: string;
  /** SIGKILL of everything in the container (a host lost mid-job). */
  kill: () => void;
  remove: () => void;
  logs: () => string;
}

/**
 * A `switch-swe worker` in a container of the bookworm base image. With the local executor it
 * runs the tests in the container. With the Docker executor it drives this machine's engine
 * through its socket (standing in for the worker host's own engine), and its work directory is a
 * directory of the host private to it, mounted at the same path: the engine resolves the bind
 * mounts of its test containers on the host.
 */
export function startWorkerContainer(options: {
  name: string;
  executor?: "local" | "docker";
  /** With the Docker executor: the host directory the worker keeps its mirrors and checkouts in. */
  workDir?: string;
  redis: string;
  prefix: string;
  gitToken?: string;
  lockSeconds?: number;
  recheckSeconds?: number;
  concurrency?: number;
}): WorkerContainer {
  const container = `switch-swe-fleet-${options.name}-${randomBytes(4).toString("hex")}`;
  // The builds reach the package index as this machine's do: its proxy settings and CA bundle.
  const network = buildNetworkSettings();
  // The CA bundle goes where the system's is, so that a Docker worker's builds find it at the same path on the host.
  const networkArgs = [
    ...Object.entries(network.vars).flatMap(([k, v]) => ["--env", `${k}=${v}`]),
    ...(network.caBundle ? ["--volume", `${network.caBundle}:/etc/ssl/certs/ca-certificates.crt:ro`] : []),
  ];
  const executor = options.executor ?? "local";
  const workDir = options.workDir ?? "/var/lib/switch-swe-worker";
  if (executor === "docker" && !options.workDir) throw new Error("a Docker worker in a container needs a host work directory");
  // The engine resolves bind mounts on the host: the work directory, and the temporary directory
  // the executor keeps each run's results in, are the host's, at the same paths.
  if (executor === "docker") mkdirSync(join(workDir, "tmp"), { recursive: true });
  const executorArgs =
    executor === "docker"
      ? ["--volume", "/var/run/docker.sock:/var/run/docker.sock", "--volume", `${workDir}:${workDir}`, "--env", `TMPDIR=${join(workDir, "tmp")}`]
      : [];
  const args = [
    "run",
    "--detach",
    "--name",
    container,
    "--label",
    `${FLEET_LABEL}=${process.pid}`,
    "--volume",
    `${process.execPath}:/usr/local/bin/node:ro`,
    "--volume",
    `${root}:/opt/switch-swe:ro`,
    "--workdir",
    "/opt/switch-swe",
    ...networkArgs,
    ...executorArgs,
    ...(options.gitToken ? ["--env", `SWITCH_SWE_GIT_TOKEN=${options.gitToken}`] : []),
    `${BASE_REPOSITORY}:bookworm`,
    "/usr/local/bin/node",
    "bin/switch-swe.mjs",
    "worker",
    "--redis",
    options.redis,
    "--prefix",
    options.prefix,
    "--executor",
    executor,
    ...(executor === "local" ? ["--allow-local"] : []),
    "--work-dir",
    workDir,
    "--name",
    options.name,
    "--lock-seconds",
    String(options.lockSeconds ?? 10),
    "--recheck-seconds",
    String(options.recheckSeconds ?? 30),
    "--concurrency",
    String(options.concurrency ?? 1),
  ];
  execFileSync("docker", args, { stdio: "pipe" });
  const quiet = (argv: string[]) => {
    try {
      return execFileSync("docker", argv, { stdio: "pipe", encoding: "utf8" });
    } catch {
      return "";
    }
  };
  return {
    name: container,
    kill: () => void quiet(["kill", "--signal", "KILL", container]),
    remove: () => void quiet(["rm", "--force", container]),
    logs: () => {
      // The worker writes to standard error, which `docker logs` gives back as its own.
      const result = spawnSync("docker", ["logs", container], { encoding: "utf8" });
      return `${result.stdout ?? ""}${result.stderr ?? ""}`;
    },
  };
}

/** Removes the worker containers that test runs which are gone left (a run killed before its cleanup); live runs' stay. */
export function removeFleetLeftovers(): void {
  const rows = execFileSync("docker", ["ps", "--all", "--filter", `label=${FLEET_LABEL}`, "--format", `{{.ID}} {{.Label "${FLEET_LABEL}"}}`], {
    encoding: "utf8",
  })
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split(" "));
  const alive = (pid: string) => {
    try {
      process.kill(Number(pid), 0);
      return true;
    } catch {
      return false;
    }
  };
  const gone = rows.filter(([, pid]) => !pid || !/^\d+$/.test(pid) || !alive(pid)).map(([id]) => id!);
  if (gone.length) execFileSync("docker", ["rm", "--force", ...gone], { stdio: "pipe" });
}

/** The workers connected to a queue: those in service (`live`), or every one that announced itself. */
export async function workersOn(redisUrl: string, prefix: string, which: "live" | "announced" = "announced"): Promise<WorkerInfo[]> {
  const redis = await connectRedis(redisUrl);
  try {
    return await (which === "live" ? liveWorkers : announcedWorkers)(redis, prefix);
  } finally {
    redis.disconnect();
  }
}
