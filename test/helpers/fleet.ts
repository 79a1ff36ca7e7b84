// Workers on "other hosts" of this machine: each in a container of its own (its own mount and
// network namespaces), sharing nothing with the coordinator but TCP to Redis and to the git
// service at the host's address on a network the run creates (createFleetNetwork). The container gets this Node binary and this
// checkout of switch-swe, read-only, as a worker's operator would install them; it sees none of
// the coordinator's files (its work directory, mirrors, the demo corpus live in the host's /tmp).
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { networkInterfaces } from "node:os";
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

/**
 * The fleet's own Docker network, and the address the host has on it: where the containers reach
 * the coordinator's Redis and git service. A network the run creates itself, rather than the
 * default bridge, because an engine just started (Debian's docker.io 20.10) reports no gateway
 * for its default `bridge`, while a created network's IPAM always has one.
 */
export interface FleetNetwork {
  name: string;
  /** The host's address on the network (its bridge interface's). */
  gateway: string;
  remove: () => Promise<void>;
}

/** Creates a bridge network for one test run's workers, labelled with the run's pid (see removeFleetLeftovers). */
export async function createFleetNetwork(docker: Docker = new Docker()): Promise<FleetNetwork> {
  const name = `switch-swe-fleet-${process.pid}-${randomBytes(3).toString("hex")}`;
  const network = await docker.createNetwork({ Name: name, Driver: "bridge", CheckDuplicate: true, Labels: { [FLEET_LABEL]: String(process.pid) } });
  try {
    const gateway = hostAddressOn(await network.inspect());
    return { name, gateway, remove: () => network.remove().catch(() => undefined) };
  } catch (error) {
    await network.remove().catch(() => undefined);
    throw error;
  }
}

/** What `docker network inspect` says of a bridge network, as far as the host's address goes. */
export interface BridgeNetworkInfo {
  Id: string;
  Name: string;
  Options?: Record<string, string>;
  IPAM?: { Config?: Array<{ Subnet?: string; Gateway?: string }> };
}

/**
 * The host's IPv4 address on a bridge network, on any engine: the gateway the engine reports,
 * else the address of the network's bridge interface on this machine, else the subnet's first
 * host (the address Docker gives a bridge by default). Throws, naming the network, when none fits.
 */
export function hostAddressOn(network: BridgeNetworkInfo, interfaces = networkInterfaces()): string {
  const configs = (network.IPAM?.Config ?? []).filter((c) => c.Subnet && !c.Subnet.includes(":"));
  const reported = configs.map((c) => c.Gateway).find((g): g is string => Boolean(g && !g.includes(":")));
  if (reported) return reported.replace(/\/\d+$/, "");
  const bridge = network.Options?.["com.docker.network.bridge.name"] ?? (network.Name === "bridge" ? "docker0" : `br-${network.Id.slice(0, 12)}`);
  const onInterface = (interfaces[bridge] ?? []).find((a) => a.family === "IPv4" && configs.some((c) => inSubnet(a.address, c.Subnet!)));
  if (onInterface) return onInterface.address;
  const first = configs.map((c) => firstHost(c.Subnet!)).find(Boolean);
  if (first) return first;
  throw new Error(`the Docker network ${network.Name} has no IPv4 subnet, so no address of this machine on it can be found`);
}

const ipv4ToNumber = (ip: string) => ip.split(".").reduce((n, part) => n * 256 + Number(part), 0);
const numberToIpv4 = (n: number) => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join(".");

function parseSubnet(subnet: string): { network: number; bits: number } | undefined {
  const match = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(subnet);
  if (!match) return undefined;
  const bits = Number(match[2]);
  const size = 2 ** (32 - bits);
  return { network: Math.floor(ipv4ToNumber(match[1]!) / size) * size, bits };
}

function inSubnet(ip: string, subnet: string): boolean {
  const parsed = parseSubnet(subnet);
  if (!parsed) return false;
  const size = 2 ** (32 - parsed.bits);
  return Math.floor(ipv4ToNumber(ip) / size) * size === parsed.network;
}

function firstHost(subnet: string): string | undefined {
  const parsed = parseSubnet(subnet);
  return parsed && parsed.bits <= 30 ? numberToIpv4(parsed.network + 1) : undefined;
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
  /** The fleet's network (createFleetNetwork): the worker reaches Redis and the git service at its gateway. */
  network: string;
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
    "--network",
    options.network,
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

/**
 * Removes the worker containers and networks that test runs which are gone left (a run killed
 * before its cleanup); live runs' stay.
 */
export function removeFleetLeftovers(): void {
  const alive = (pid: string | undefined) => {
    if (!pid || !/^\d+$/.test(pid)) return false;
    try {
      process.kill(Number(pid), 0);
      return true;
    } catch {
      return false;
    }
  };
  const leftovers = (kind: "ps" | "network") =>
    execFileSync(
      "docker",
      [...(kind === "ps" ? ["ps", "--all"] : ["network", "ls"]), "--filter", `label=${FLEET_LABEL}`, "--format", `{{.ID}} {{.Label "${FLEET_LABEL}"}}`],
      {
        encoding: "utf8",
      },
    )
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split(" "))
      .filter(([, pid]) => !alive(pid))
      .map(([id]) => id!);
  const containers = leftovers("ps");
  if (containers.length) execFileSync("docker", ["rm", "--force", ...containers], { stdio: "pipe" });
  const networks = leftovers("network");
  if (networks.length) execFileSync("docker", ["network", "rm", ...networks], { stdio: "pipe" });
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
