import { existsSync } from "node:fs";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { Writable } from "node:stream";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type Docker from "dockerode";
import type { Logger } from "../logger.ts";
import { ChannelReader, channelToken } from "./guarded.ts";
import { hashValue } from "../canonical.ts";
import {
  environmentLayerKey,
  environmentScript,
  needsRevisionLayer,
  revisionKey,
  revisionScript,
  revisionVersion,
  SYNC_SCRIPT_NAME,
} from "./recipe-scripts.ts";
import { fromDirectory, readCheckoutPins } from "./checkout-pins.ts";
import { prepareRunFiles, REPORT_NAME, runScript } from "./runners.ts";
import { type PythonDownloads, pythonOffer } from "./python-offer.ts";
import {
  assertNotKilled,
  RUN_OUTPUT_LIMIT,
  BuildOnce,
  InfrastructureFault,
  type EnvironmentSpec,
  type Executor,
  type PythonOffer,
  type TestRunRequest,
  type TestRunResult,
} from "./types.ts";
import { type BaseRevision } from "../checkouts/checkout.ts";

import { BASE_REPOSITORY, BaseImages, DEBIAN_FOR_PYTHON } from "./base-images.ts";
import { demultiplex, engineFault, holdLifeline, waitOrKill, withLifeline } from "./containers.ts";
import { buildLayer, describeSuites, type LayerSettings } from "./docker-layers.ts";
import { GUARDED_RUN_ENV, IN_IMAGE, RUN_ENV, RUN_USER } from "./in-image.ts";
export { demultiplex, dockerAvailable } from "./containers.ts";
export { BASE_REPOSITORY, buildBaseImage, DEBIAN_FOR_PYTHON } from "./base-images.ts";
export const ENV_REPOSITORY = "switch-swe-env";
export const REVISION_REPOSITORY = "switch-swe-rev";
const LABEL = "org.switch-swe.environment";

/**
 * The base image for a Python version, and the interpreter in it: the Debian suite whose python3 is
 * that version, or else bookworm with no interpreter, so the build asks uv for a managed Python
 * (downloaded; where that cannot be reached the build fails naming the versions Debian gives).
 */
export function baseImageFor(python: string): { image: string; interpreter: string | null } {
  const suite = DEBIAN_FOR_PYTHON[python];
  return suite ? { image: `${BASE_REPOSITORY}:${suite}`, interpreter: "python3" } : { image: `${BASE_REPOSITORY}:bookworm`, interpreter: null };
}

export interface DockerLimits {
  memoryBytes: number;
  pids: number;
  cpus: number;
}

export const DEFAULT_LIMITS: DockerLimits = { memoryBytes: 2 * 1024 ** 3, pids: 512, cpus: 1 };

/** Where an environment's pieces sit inside its image, who a guarded run runs as, a run's environment (in-image.ts). */
export { GUARDED_RUN_ENV, IN_IMAGE, RUN_ENV, RUN_USER };

export interface DockerExecutorOptions {
  limits?: DockerLimits;
  /** Labels on every test container, so a caller can find (and check it removed) its own. */
  labels?: Record<string, string>;
  /** A host directory for uv's download and wheel cache, shared by every build. */
  cacheDir?: string;
  /** A host directory for the whole log of every build. */
  logDir?: string;
  /** Whether uv's managed Pythons may be downloaded for versions no base image gives (default auto: if reachable). */
  pythonDownloads?: PythonDownloads;
  /** Where a missing base image is made from, once (default: pulled from Docker Hub's debian, else debootstrap). */
  baseImages?: BaseImages;
}

/**
 * One container per test run, from an image per environment (repository, recipe, as-of date)
 * built on a Debian base image, and, when the recipe installs from the checkout, an image per
 * (environment, base revision) on top of it. Runs have no network, memory / process / CPU limits,
 * no variable from the host, a wall-clock timeout that kills the container, and the container is
 * removed afterwards whatever happened.
 */
export class DockerExecutor implements Executor {
  readonly kind = "docker" as const;
  private readonly once: BuildOnce;
  readonly built: string[] = [];
  readonly buildSeconds = new Map<string, number>();
  private readonly limits: DockerLimits;
  private readonly labels: Record<string, string>;
  readonly baseImages: BaseImages;

  constructor(
    private readonly docker: Docker,
    private readonly log: Logger,
    private readonly options: DockerExecutorOptions = {},
  ) {
    this.once = new BuildOnce(docker);
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.labels = options.labels ?? {};
    this.baseImages = options.baseImages ?? new BaseImages(docker, log);
  }

  /** What every build of this executor shares: uv's cache, where logs go, the work directory's labels. */
  private get layerSettings(): LayerSettings {
    return { cacheDir: this.options.cacheDir, logDir: this.options.logDir, labels: this.labels };
  }

  static imageTag(env: EnvironmentSpec): string {
    return `${ENV_REPOSITORY}:${environmentLayerKey(env).slice(0, 16)}`;
  }

  /** The prepared checkout in a revision image belongs to the run user, so the tag names that user too. */
  static revisionTag(env: EnvironmentSpec, commit: string): string {
    return `${REVISION_REPOSITORY}:${hashValue({ revision: revisionKey(env, commit), run_user: RUN_USER }).slice(0, 16)}`;
  }

  /**
   * The versions of the Debian suites base images are made from, whether or not this engine has
   * built them yet (a missing one is reported when a build needs it): the same offer on every
   * Docker host, so the same recipe chooses the same Python everywhere.
   */
  pythonOffer(): Promise<PythonOffer> {
    return pythonOffer(Object.keys(DEBIAN_FOR_PYTHON), `Debian base images: ${describeSuites()}`, this.options.pythonDownloads ?? "auto");
  }

  async ensureEnvironment(env: EnvironmentSpec, base?: BaseRevision): Promise<{ built: boolean }> {
    const layer = await this.once.run(environmentLayerKey(env), () => this.buildEnvironment(env));
    if (!needsRevisionLayer(env.recipe)) return layer;
    if (!base) throw new Error(`the recipe of ${env.repo} installs from the checkout, so its environment needs a base revision`);
    const revision = await this.once.run(revisionKey(env, base.commit), () => this.buildRevision(env, base));
    return { built: layer.built || revision.built };
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

  private async buildEnvironment(env: EnvironmentSpec): Promise<{ built: boolean }> {
    const tag = DockerExecutor.imageTag(env);
    if (await this.imageExists(tag)) return { built: false };
    const { image: base, interpreter } = baseImageFor(env.recipe.python);
    // Made once if missing (pulled, or built by debootstrap); if it cannot be, that is a fact of
    // this machine (BaseImageUnavailable stops the stage), never a fault retried per task.
    await this.baseImages.ensure(base.split(":")[1]!);
    this.log.info(`building image ${tag} for ${env.repo} (Python ${env.recipe.python}${interpreter ? "" : ", uv-managed"}, as of ${env.asOf ?? "today"})`);
    const packages = env.recipe.debian_packages.length
      ? `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${env.recipe.debian_packages.join(" ")}\n`
      : "";
    const script = packages + environmentScript(env, { ...IN_IMAGE, interpreter });
    const started = performance.now();
    const key = environmentLayerKey(env);
    await buildLayer(this.docker, this.layerSettings, {
      from: base,
      tag,
      script,
      what: `building the environment of ${env.repo}`,
      labels: { [LABEL]: key, "org.switch-swe.repo": env.repo },
    });
    this.built.push(key);
    this.buildSeconds.set(key, (performance.now() - started) / 1000);
    return { built: true };
  }

  private async buildRevision(env: EnvironmentSpec, base: BaseRevision): Promise<{ built: boolean }> {
    const tag = DockerExecutor.revisionTag(env, base.commit);
    if (await this.imageExists(tag)) return { built: false };
    this.log.info(`building image ${tag}: ${env.repo} at ${base.commit.slice(0, 12)} installed into ${DockerExecutor.imageTag(env)}`);
    const checkout = await base.checkout();
    const started = performance.now();
    try {
      const copy = `mkdir -p ${IN_IMAGE.work} && /env/bin/python ${IN_IMAGE.config}/${SYNC_SCRIPT_NAME} overlay /checkout ${IN_IMAGE.work} /dev/null\n`;
      // The tests, run as RUN_USER, may write in their checkout (many do), so it is theirs.
      const script =
        copy +
        revisionScript(
          env,
          { ...IN_IMAGE, python: "/env/bin/python" },
          await revisionVersion(checkout.dir),
          await readCheckoutPins(fromDirectory(checkout.dir), env.recipe.requirements_files),
        ) +
        `chown -R ${RUN_USER} ${IN_IMAGE.work}\n`;
      await buildLayer(this.docker, this.layerSettings, {
        from: DockerExecutor.imageTag(env),
        tag,
        script,
        what: `installing ${env.repo} at ${base.commit.slice(0, 12)}`,
        labels: { [LABEL]: revisionKey(env, base.commit), "org.switch-swe.repo": env.repo, "org.switch-swe.base-commit": base.commit },
        binds: [`${resolve(checkout.dir)}:/checkout:ro`],
      });
    } finally {
      await checkout.dispose();
    }
    this.built.push(revisionKey(env, base.commit));
    this.buildSeconds.set(revisionKey(env, base.commit), (performance.now() - started) / 1000);
    return { built: true };
  }

  async run(request: TestRunRequest): Promise<TestRunResult> {
    const results = await mkdtemp(join(tmpdir(), "switch-swe-results-"));
    const { recipe } = request.env;
    const revision = needsRevisionLayer(recipe);
    const guarded = request.guarded;
    if (revision && !request.baseCommit) throw new Error(`the recipe of ${request.env.repo} installs from the checkout: a run must name its base commit`);
    let container: Docker.Container | undefined;
    let lifeline: { release: () => void } | undefined;
    try {
      // A guarded run (a submission) gets the checkout read-only and its own copy of it (over the
      // prepared revision, or in /tmp/work), prepared as root and then run as RUN_USER with no
      // capabilities. An unguarded run (qualification: the reference patches) runs as root in the
      // checkout itself, mounted at /work, as it always has: runs of one checkout see each other's
      // files, on both executors. The oracle then checks each task under the verifier's conditions.
      const prepared = revision ? { prepared: { checkout: "/checkout", work: IN_IMAGE.work, baseFiles: IN_IMAGE.baseFiles, config: IN_IMAGE.config } } : {};
      const layout = guarded
        ? {
            python: "/env/bin/python",
            resultsDir: "/results",
            channelOnStdout: true,
            runAs: RUN_USER,
            ...(revision ? prepared : { copyFrom: { from: "/checkout", to: "/tmp/work" } }),
          }
        : { python: "/env/bin/python", resultsDir: "/results", ...prepared };
      await prepareRunFiles(results, recipe, layout, guarded);
      await writeFile(join(results, "run.sh"), runScript(recipe, request.tests, layout, Boolean(guarded)));
      // The runner's directory is read-only to a guarded run (it reports on its channel).
      if (guarded) await chmod(results, 0o755);
      const started = performance.now();
      let channel: AttachedChannel | undefined;
      try {
        container = await this.docker.createContainer(this.testContainer(request, results, revision));
        if (guarded) channel = await this.attachChannel(container);
        else lifeline = await holdLifeline(container);
        await container.start();
        channel?.sendToken();
      } catch (error) {
        throw engineFault(error, "starting a test container");
      }
      const { timedOut, exitCode } = await waitOrKill(container, request.timeoutSeconds);
      // What the container wrote before it exited is still on its way: wait for the stream's end (a few seconds at most).
      if (channel && !timedOut) await Promise.race([channel.ended, new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
      const state = (
        await container.inspect().catch((error) => {
          throw engineFault(error, "inspecting a test container");
        })
      ).State;
      if (state.OOMKilled) throw new InfrastructureFault(`the test container ran out of memory (${this.limits.memoryBytes} bytes)`);
      if (!timedOut && !guarded) assertNotKilled(exitCode);
      const logs = demultiplex(await container.logs({ stdout: true, stderr: true }).catch(() => Buffer.from("")));
      const wallSeconds = (performance.now() - started) / 1000;
      if (channel)
        return { timedOut, exitCode, wallSeconds, outputTail: logs.slice(-RUN_OUTPUT_LIMIT), ...(timedOut ? {} : { channel: channel.reader.channel }) };
      // A timed-out run's files are never read: whatever they say was not finished.
      const junit = join(results, REPORT_NAME);
      const junitXml = !timedOut && existsSync(junit) ? await readFile(junit, "utf8") : undefined;
      return { timedOut, junitXml, exitCode, wallSeconds, outputTail: logs.slice(-RUN_OUTPUT_LIMIT) };
    } finally {
      lifeline?.release();
      await container?.remove({ force: true }).catch(() => undefined);
      // Files the container created are root's; the host user (root here) removes them.
      await rm(results, { recursive: true, force: true });
    }
  }

  /** The container of one test run (see `run`). */
  private testContainer(request: TestRunRequest, results: string, revision: boolean): Docker.ContainerCreateOptions {
    const guarded = Boolean(request.guarded);
    return {
      Image: revision ? DockerExecutor.revisionTag(request.env, request.baseCommit!) : DockerExecutor.imageTag(request.env),
      ...withLifeline("sh /results/run.sh", guarded ? "token" : "plain"),
      WorkingDir: "/work",
      // Nothing from the host's environment: GITHUB_TOKEN and friends never reach the tests.
      Env: guarded ? GUARDED_RUN_ENV : RUN_ENV,
      NetworkDisabled: true,
      ...(guarded ? { AttachStdout: true, AttachStderr: true } : {}),
      HostConfig: {
        NetworkMode: "none",
        // Bind mounts take absolute host paths only.
        Binds: [
          revision || guarded ? `${resolve(request.checkoutDir)}:/checkout:ro` : `${resolve(request.checkoutDir)}:/work`,
          `${results}:/results${guarded ? ":ro" : ""}`,
        ],
        // What preparing a guarded run's checkout as root takes, and nothing once it runs as RUN_USER.
        ...(guarded
          ? { CapDrop: ["ALL"], CapAdd: ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "SETPCAP"], SecurityOpt: ["no-new-privileges"] }
          : {}),
        Memory: this.limits.memoryBytes,
        MemorySwap: this.limits.memoryBytes,
        PidsLimit: this.limits.pids,
        NanoCpus: Math.round(this.limits.cpus * 1e9),
      },
      Labels: { [LABEL]: request.env.key, ...this.labels },
    };
  }

  /**
   * A guarded run's channel: the container's standard output (run.sh moves fd 3 there; the tests'
   * own output goes to standard error), read as it arrives; the container is killed at the
   * runner's finish record. The token goes in on standard input once the container has started.
   */
  private async attachChannel(container: Docker.Container): Promise<AttachedChannel> {
    const token = channelToken();
    const stream = (await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as NodeJS.ReadWriteStream;
    const reader = new ChannelReader(token, () => void container.kill().catch(() => undefined));
    const channelSink = new Writable({ write: (chunk: Buffer, _encoding, done) => (reader.push(chunk), done()) });
    const ignore = new Writable({ write: (_chunk, _encoding, done) => done() });
    this.docker.modem.demuxStream(stream, channelSink, ignore);
    const ended = new Promise<void>((resolve) => (stream.once("end", resolve), stream.once("close", resolve)));
    return { reader, ended, sendToken: () => void stream.write(`${token}\n`) };
  }
}

interface AttachedChannel {
  reader: ChannelReader;
  ended: Promise<void>;
  sendToken: () => void;
}
