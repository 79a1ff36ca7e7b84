import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Docker from "dockerode";
import { lowDiskSpace } from "../failures.ts";
import type { Logger } from "../logger.ts";
import { assertNotKilled, BuildFailed, buildFailure, BuildOnce, buildNetworkSettings, GUARD_REPORT_NAME, prepareGuardedRun, InfrastructureFault, type EnvironmentSpec, type Executor, type TestRunRequest, type TestRunResult, testScript } from "./types.ts";

/** Debian releases whose python3 gives each Python version; base images are named after them. */
export const DEBIAN_FOR_PYTHON: Record<string, string> = { "3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie" };
export const BASE_REPOSITORY = "switch-swe-base";
export const ENV_REPOSITORY = "switch-swe-env";
const LABEL = "org.switch-swe.environment";

export function baseImageFor(python: string): string {
  const suite = DEBIAN_FOR_PYTHON[python];
  if (!suite) throw new BuildFailed(`no Debian base image gives Python ${python}; the docker executor supports ${Object.keys(DEBIAN_FOR_PYTHON).join(", ")}`);
  return `${BASE_REPOSITORY}:${suite}`;
}

export interface DockerLimits {
  memoryBytes: number;
  pids: number;
  cpus: number;
}

export const DEFAULT_LIMITS: DockerLimits = { memoryBytes: 2 * 1024 ** 3, pids: 512, cpus: 1 };

/**
 * The text of a container's log as Docker sends it: stdout and stderr multiplexed in frames, each
 * behind an 8-byte header (stream, 0, 0, 0, length as 4 bytes), which must not leak into messages.
 */
export function demultiplex(raw: Buffer): string {
  const chunks: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= raw.length && raw[offset]! <= 2 && raw[offset + 1] === 0 && raw[offset + 2] === 0 && raw[offset + 3] === 0) {
    const length = raw.readUInt32BE(offset + 4);
    chunks.push(raw.subarray(offset + 8, offset + 8 + length));
    offset += 8 + length;
  }
  // A TTY log (or anything else) has no frames: taken as it is.
  return (offset === 0 ? raw : Buffer.concat(chunks)).toString("utf8");
}

/** How often a running test container's state is checked besides the engine's wait answer. */
const STATE_POLL_MS = 2000;

/**
 * The container's exit status. The engine's wait request alone is not enough: a wait sent around
 * an engine restart can stay unanswered after the container has exited (seen in the fault
 * matrix's engine-restart row), so the container's state is also checked every few seconds.
 * An engine that cannot answer either way is an engine fault, surfaced by the caller.
 */
async function exited(container: Docker.Container): Promise<{ StatusCode: number }> {
  let poll: NodeJS.Timeout | undefined;
  let settled = false;
  const polled = new Promise<{ StatusCode: number }>((resolve, reject) => {
    const check = () =>
      container.inspect().then((info) => {
        if (!info.State.Running && info.State.Status !== "created") resolve({ StatusCode: info.State.ExitCode });
        else if (!settled) poll = setTimeout(check, STATE_POLL_MS);
      }, reject);
    poll = setTimeout(check, STATE_POLL_MS);
  });
  try {
    return await Promise.race([container.wait() as Promise<{ StatusCode: number }>, polled]);
  } finally {
    settled = true;
    clearTimeout(poll);
  }
}

/**
 * An engine failure is an infrastructure fault (retried); a 4xx answer means we sent a bad
 * request, a bug that retrying would only repeat.
 */
function engineFault(error: unknown, what: string): Error {
  const status = (error as { statusCode?: number }).statusCode;
  const message = `Docker engine error while ${what}: ${(error as Error).message}`;
  return status && status >= 400 && status < 500 ? new Error(message) : new InfrastructureFault(message);
}

export async function dockerAvailable(docker = new Docker()): Promise<boolean> {
  try {
    await docker.ping();
    return true;
  } catch {
    return false;
  }
}

/**
 * One container per test run, from an environment image per (repository, recipe, as-of date)
 * built on a Debian base image. Runs have no network, memory / process / CPU limits, no variable
 * from the host, a wall-clock timeout that kills the container, and the container is removed
 * afterwards whatever happened.
 */
export class DockerExecutor implements Executor {
  readonly kind = "docker" as const;
  private readonly once = new BuildOnce();
  readonly built: string[] = [];

  /** `labels` mark every test container, so a caller can find (and check it removed) its own. */
  constructor(private readonly docker: Docker, private readonly log: Logger, private readonly limits: DockerLimits = DEFAULT_LIMITS, private readonly labels: Record<string, string> = {}) {}

  static imageTag(env: EnvironmentSpec): string {
    return `${ENV_REPOSITORY}:${env.key.slice(0, 16)}`;
  }

  ensureEnvironment(env: EnvironmentSpec): Promise<{ built: boolean }> {
    return this.once.run(env.key, () => this.build(env));
  }

  private async imageExists(tag: string): Promise<boolean> {
    try {
      await this.docker.getImage(tag).inspect();
      return true;
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return false;
      throw engineFault(error, `looking up image ${tag}`);
    }
  }

  private async build(env: EnvironmentSpec): Promise<{ built: boolean }> {
    const tag = DockerExecutor.imageTag(env);
    if (await this.imageExists(tag)) return { built: false };
    const base = baseImageFor(env.recipe.python);
    if (!(await this.imageExists(base))) throw new InfrastructureFault(`base image ${base} is missing; build it with 'switch-swe images base --suite ${base.split(":")[1]}'`);
    this.log.info(`building image ${tag} for ${env.repo} (Python ${env.recipe.python}, as of ${env.asOf ?? "today"})`);
    const exclude = env.asOf ? `--exclude-newer '${env.asOf}' ` : "";
    const requirements = [...new Set(["pytest", ...env.recipe.pip_requirements])].map((r) => `'${r.replaceAll("'", "")}'`).join(" ");
    const packages = env.recipe.debian_packages.length ? `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${env.recipe.debian_packages.join(" ")} && ` : "";
    const script = `set -e\n${packages}python3 -m venv /env\n/env/bin/python -m pip install --quiet --disable-pip-version-check uv\n/env/bin/uv pip install --quiet --python /env/bin/python ${exclude}${requirements}\n`;
    let container: Docker.Container | undefined;
    try {
      // Building is the one time a container may reach the network (the package indexes).
      const network = buildNetworkSettings();
      const ca = network.caBundle ? ["SSL_CERT_FILE=/run/host-ca.crt", "PIP_CERT=/run/host-ca.crt"] : [];
      container = await this.docker.createContainer({
        Image: base,
        Cmd: ["sh", "-c", script],
        Env: ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8", ...Object.entries(network.vars).map(([k, v]) => `${k}=${v}`), ...ca],
        HostConfig: network.caBundle ? { Binds: [`${network.caBundle}:/run/host-ca.crt:ro`] } : {},
        Labels: { [LABEL]: env.key },
      });
      await container.start();
      const result = (await container.wait()) as { StatusCode: number };
      if (result.StatusCode !== 0) {
        const logs = demultiplex(await container.logs({ stdout: true, stderr: true, tail: 200 }));
        // The engine's data root filling up is the machine's moment, whatever the build printed.
        const root = ((await this.docker.info().catch(() => ({}))) as { DockerRootDir?: string }).DockerRootDir;
        buildFailure(`building the environment of ${env.repo} failed (exit ${result.StatusCode})`, logs, result.StatusCode === 137 || result.StatusCode === 143, root ? lowDiskSpace(root) : undefined);
      }
      await container.commit({ repo: ENV_REPOSITORY, tag: tag.split(":")[1], changes: [`LABEL ${LABEL}=${env.key}`, `LABEL org.switch-swe.repo=${env.repo}`, "ENV PATH=/env/bin:/usr/local/bin:/usr/bin:/bin"] });
      this.built.push(env.key);
      return { built: true };
    } catch (error) {
      if (error instanceof BuildFailed || error instanceof InfrastructureFault) throw error;
      throw engineFault(error, `building ${tag}`);
    } finally {
      await container?.remove({ force: true }).catch(() => undefined);
    }
  }

  async run(request: TestRunRequest): Promise<TestRunResult> {
    const results = await mkdtemp(join(tmpdir(), "switch-swe-results-"));
    let container: Docker.Container | undefined;
    try {
      if (request.guarded) await prepareGuardedRun(results, request.guarded);
      await writeFile(join(results, "run.sh"), testScript(request.env.recipe, "/env/bin/python", request.tests, "/results/report.xml", request.guarded ? { resultsDir: "/results" } : undefined));
      const started = performance.now();
      try {
        container = await this.docker.createContainer({
          Image: DockerExecutor.imageTag(request.env),
          Cmd: ["sh", "/results/run.sh"],
          WorkingDir: "/work",
          // Nothing from the host's environment: GITHUB_TOKEN and friends never reach the tests.
          Env: ["PATH=/env/bin:/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"],
          NetworkDisabled: true,
          HostConfig: {
            NetworkMode: "none",
            // Bind mounts take absolute host paths only.
            Binds: [`${resolve(request.checkoutDir)}:/work`, `${results}:/results`],
            Memory: this.limits.memoryBytes,
            MemorySwap: this.limits.memoryBytes,
            PidsLimit: this.limits.pids,
            NanoCpus: Math.round(this.limits.cpus * 1e9),
          },
          Labels: { [LABEL]: request.env.key, ...this.labels },
        });
        await container.start();
      } catch (error) {
        throw engineFault(error, "starting a test container");
      }
      let timedOut = false;
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), request.timeoutSeconds * 1000)));
      let exitCode = -1;
      try {
        const outcome = await Promise.race([exited(container), deadline]);
        if (outcome === "timeout") {
          timedOut = true;
          await container.kill().catch(() => undefined);
        } else exitCode = outcome.StatusCode;
      } catch (error) {
        throw engineFault(error, "waiting for a test container");
      } finally {
        clearTimeout(timer);
      }
      const state = (await container.inspect().catch((error) => { throw engineFault(error, "inspecting a test container"); })).State;
      if (state.OOMKilled) throw new InfrastructureFault(`the test container ran out of memory (${this.limits.memoryBytes} bytes)`);
      if (!timedOut && !request.guarded) assertNotKilled(exitCode);
      const logs = demultiplex(await container.logs({ stdout: true, stderr: true, tail: 200 }).catch(() => Buffer.from("")));
      const junit = join(results, "report.xml");
      const junitXml = !timedOut && existsSync(junit) ? await readFile(junit, "utf8") : undefined;
      const guard = join(results, GUARD_REPORT_NAME);
      const guardJson = request.guarded && !timedOut && existsSync(guard) ? await readFile(guard, "utf8") : undefined;
      return { timedOut, junitXml, exitCode, wallSeconds: (performance.now() - started) / 1000, outputTail: logs.slice(-4000), ...(guardJson ? { guardJson } : {}) };
    } finally {
      await container?.remove({ force: true }).catch(() => undefined);
      // Files the container created are root's; the host user (root here) removes them.
      await rm(results, { recursive: true, force: true });
    }
  }
}

/**
 * Builds a base image from a Debian root filesystem made with debootstrap and imported into
 * Docker, so no image registry is needed. Needs root, debootstrap and a reachable Debian mirror.
 */
export async function buildBaseImage(options: { suite: string; mirror: string; log: Logger; workDir: string }): Promise<string> {
  const tag = `${BASE_REPOSITORY}:${options.suite}`;
  const rootfs = await mkdtemp(join(options.workDir, "rootfs-"));
  const run = (command: string, args: string[]) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] });
      let err = "";
      child.stderr.on("data", (d) => (err = (err + d).slice(-4000)));
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${err.trim().split("\n").slice(-3).join(" | ")}`))));
    });
  try {
    options.log.info(`debootstrap ${options.suite} from ${options.mirror} (a few minutes)`);
    await run("debootstrap", ["--variant=minbase", "--include=python3,python3-venv,python3-pip,ca-certificates", options.suite, rootfs, options.mirror]);
    options.log.info(`importing the root filesystem as ${tag}`);
    await run("sh", ["-c", `tar -C '${rootfs}' -c . | docker import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'LABEL org.switch-swe.base=${options.suite}' - '${tag}'`]);
    return tag;
  } finally {
    await rm(rootfs, { recursive: true, force: true });
  }
}
