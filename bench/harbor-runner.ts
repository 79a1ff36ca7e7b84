// Harbor itself, for bench/harbor.ts: Harbor 0.26 needs Python 3.12 or later, so it runs in a
// container of switch-swe's Debian trixie base image (Python 3.13) with trixie's docker-cli,
// docker-compose (compose 2.26) and docker-buildx and `pip install harbor==0.26.0`, talking to this machine's Docker
// engine through its socket; Harbor's local Docker environment then starts the tasks' containers
// beside it. The host's CA bundle goes in so pip reaches PyPI through a TLS-intercepting proxy.
// Paths are mounted at their own paths, because the engine resolves the bind mounts Harbor asks
// for (a trial's agent/ and verifier/) on this machine.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync, copyFileSync } from "node:fs";
import { createServer, createConnection, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const HARBOR_VERSION = "0.26.0";
export const HARBOR_IMAGE = `switch-swe-harbor:${HARBOR_VERSION}`;
const BASE = "switch-swe-base:trixie";

const dockerfile = `FROM ${BASE}
COPY host-ca.crt /etc/ssl/certs/switch-swe-host-ca.crt
ENV PIP_CERT=/etc/ssl/certs/switch-swe-host-ca.crt REQUESTS_CA_BUNDLE=/etc/ssl/certs/switch-swe-host-ca.crt SSL_CERT_FILE=/etc/ssl/certs/switch-swe-host-ca.crt
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-cli docker-compose docker-buildx procps >/dev/null && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/harbor && /opt/harbor/bin/pip install --quiet --disable-pip-version-check harbor==${HARBOR_VERSION}
ENV PATH=/opt/harbor/bin:/usr/local/bin:/usr/bin:/bin HARBOR_TELEMETRY=0
`;

const imageExists = (image: string) => spawnSync("docker", ["image", "inspect", image], { stdio: "ignore" }).status === 0;

/** Builds the Harbor image once (seconds it took, or 0 when it was there); the trixie base image must exist (switch-swe images base --suite trixie). */
export function ensureHarborImage(caBundle: string): number {
  if (imageExists(HARBOR_IMAGE)) return 0;
  if (!imageExists(BASE)) throw new Error(`${BASE} is missing: npx switch-swe images base --suite trixie`);
  const context = mkdtempSync(join(tmpdir(), "switch-swe-harbor-image-"));
  try {
    writeFileSync(join(context, "Dockerfile"), dockerfile);
    copyFileSync(caBundle, join(context, "host-ca.crt"));
    const started = Date.now();
    // The engine here has no BuildKit plugin: the classic builder.
    const built = spawnSync("docker", ["build", "--quiet", "-t", HARBOR_IMAGE, context], { env: { ...process.env, DOCKER_BUILDKIT: "0" }, encoding: "utf8" });
    if (built.status !== 0) throw new Error(`building ${HARBOR_IMAGE} failed: ${built.stderr.slice(-2000)}`);
    return (Date.now() - started) / 1000;
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

/**
 * Runs a command in the Harbor container; `mounts` are mounted at their own paths. Resolves to its
 * exit status and output. `uid`: Harbor runs as that user (with the Docker socket's group), as a
 * researcher's Harbor runs as theirs. It matters: after every step Harbor's local Docker
 * environment gives the trial's log directories (the agent's conversation among them) to the user
 * it runs as, so an agent of another uid cannot read its own conversation at the next step.
 */
export function harbor(
  args: string[],
  options: { mounts: string[]; cwd: string; env?: Record<string, string>; log?: string; uid?: number },
): Promise<{ code: number; output: string; seconds: number }> {
  const started = Date.now();
  const user =
    options.uid === undefined
      ? []
      : ["--user", `${options.uid}:${options.uid}`, "--group-add", String(statSync("/var/run/docker.sock").gid), "-e", "HOME=/tmp"];
  const argv = [
    "run",
    "--rm",
    ...user,
    "-v",
    "/var/run/docker.sock:/var/run/docker.sock",
    ...options.mounts.flatMap((m) => ["-v", `${m}:${m}`]),
    "-w",
    options.cwd,
    ...Object.entries(options.env ?? {}).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
    HARBOR_IMAGE,
    ...args,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn("docker", argv, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("close", (code) => {
      if (options.log) writeFileSync(options.log, output);
      resolve({ code: code ?? -1, output, seconds: (Date.now() - started) / 1000 });
    });
  });
}

// What Harbor's local Docker environment needs to enforce a task's `no-network` (its egress-control
// sidecar, harbor/environments/docker/): a kernel probe image and the sidecar's base image, both on Docker Hub.
const EGRESS_CONTROL_IMAGES = [
  "alpine:3.23.4@sha256:5b10f432ef3da1b8d4c7eb6c487f2f5a8f096bc91145e68878dd4a5019afde11",
  "gogost/gost:3.2.7-nightly.20260602@sha256:afc0137758ab4ce399d47a299f9abbacbf522b52a17e59cbb4b4e7a1a66e9196",
];

/** Whether this engine has (or can pull) the images Harbor's Docker environment enforces no-network with. */
export function egressControlAvailable(): boolean {
  return EGRESS_CONTROL_IMAGES.every(
    (image) => imageExists(image) || spawnSync("docker", ["pull", "--quiet", image], { stdio: "ignore", timeout: 300_000 }).status === 0,
  );
}

/**
 * The address of this machine on Docker's default bridge: where a task's container reaches this
 * machine. The bridge's IPAM says it, or (an engine that records only the subnet, as 20.10 may)
 * the subnet's first address is the bridge's, as Docker assigns it.
 */
export function bridgeGateway(): string {
  const out = spawnSync("docker", ["network", "inspect", "bridge", "--format", "{{json (index .IPAM.Config 0)}}"], { encoding: "utf8" });
  const config = out.status === 0 ? (JSON.parse(out.stdout) as { Gateway?: string; Subnet?: string }) : {};
  const subnet = /^(\d+\.\d+\.\d+)\.0\/\d+$/.exec(config.Subnet ?? "");
  const gateway = config.Gateway || (subnet ? `${subnet[1]}.1` : "");
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(gateway)) throw new Error(`cannot read the bridge network's gateway: ${out.stdout}${out.stderr}`);
  return gateway;
}

/**
 * A TCP forwarder from the bridge's gateway to a loopback port: the model endpoint stays on
 * loopback, and the tasks' containers (on Harbor's compose networks) reach it at the gateway.
 */
export async function forwardFromBridge(host: string, loopbackPort: number): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((socket) => {
    const upstream = createConnection({ host: "127.0.0.1", port: loopbackPort });
    socket.pipe(upstream).pipe(socket);
    const end = () => (socket.destroy(), upstream.destroy());
    socket.on("error", end);
    upstream.on("error", end);
  });
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, host, () => resolve()));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("the forwarder has no port");
  return { url: `http://${host}:${address.port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** The images Harbor's Docker environment built for tasks (named hb__<task>). */
export function harborTaskImages(): Set<string> {
  const out = spawnSync("docker", ["images", "--format", "{{.Repository}}:{{.Tag}}", "--filter", "reference=hb__*"], { encoding: "utf8" });
  return new Set(out.stdout.split("\n").filter(Boolean));
}

/** Removes the task images built since `before`. */
export function removeImagesSince(before: Set<string>): void {
  const added = [...harborTaskImages()].filter((i) => !before.has(i));
  if (added.length) spawnSync("docker", ["rmi", "--force", ...added], { stdio: "ignore" });
}
