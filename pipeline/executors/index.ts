import { dockerEngine } from "./docker-engine.ts";
import type { Logger } from "../logger.ts";
import { WorkLayout } from "../work-layout.ts";
import { BaseImages, type BaseImageSources, BaseImageUnavailable, DEFAULT_BASE_IMAGE_SOURCES } from "./base-images.ts";
import { DEFAULT_LIMITS, DockerExecutor, dockerAvailable, type DockerLimits } from "./docker.ts";

/** The suite auto makes first on an engine without base images: Python 3.11's, and the one uv-managed Pythons build on. */
const DEFAULT_SUITE = "bookworm";
import { LocalExecutor } from "./local.ts";
import type { PythonDownloads } from "./python-offer.ts";
import { QueueExecutor } from "./queue.ts";
import type { Executor } from "./types.ts";
import { DEFAULT_GIT_SERVICE, type GitServiceSettings } from "./git-service.ts";

export * from "./types.ts";
export { DockerExecutor, LocalExecutor };

/** The label naming the work directory a test container ran for. */
export const WORK_LABEL = "org.switch-swe.work";

/** What an executor is made from: the execution settings' executor part (the engine's ExecutionSettings is one). */
export interface ExecutorSettings {
  executor: "auto" | "docker" | "local" | "queue";
  limits: { memory_mb: number; pids: number; cpus: number };
  queue?: {
    redis: string;
    name: string;
    wait_for_worker_seconds: number;
    git_service?: GitServiceSettings;
  };
  /** With `executor: queue`: what the workers run tests with. */
  queue_executor?: "docker" | "local";
  python_downloads?: PythonDownloads;
  /** Where a missing base image is made from (the Docker executor, and `auto`'s choice of it). */
  base_images?: BaseImageSources;
}

const DEFAULT_QUEUE = { redis: "redis://127.0.0.1:6379", name: "switch-swe", wait_for_worker_seconds: 60, git_service: DEFAULT_GIT_SERVICE };

/**
 * The one place executors are made. `auto` takes Docker when an engine answers and otherwise the
 * local executor, saying loudly that the repository's code will run unsandboxed; `queue` connects
 * to the workers' queue in Redis. Environments live in the work directory's `envs/`,
 * builds share one uv download and wheel cache there and keep every build's whole log, and test
 * containers carry a label naming `workDir`.
 */
export async function createExecutor(settings: ExecutorSettings, place: { workDir: string; log: Logger }): Promise<Executor> {
  const l = settings.limits;
  const limits: DockerLimits = { memoryBytes: l.memory_mb * 2 ** 20, pids: l.pids, cpus: l.cpus };
  const pythonDownloads = settings.python_downloads ?? "auto";
  if (settings.executor === "queue") {
    const queue = settings.queue ?? DEFAULT_QUEUE;
    return QueueExecutor.connect({
      redis: queue.redis,
      prefix: queue.name,
      workerExecutor: settings.queue_executor ?? "docker",
      waitForWorkerSeconds: queue.wait_for_worker_seconds,
      limits,
      log: place.log,
      pythonDownloads,
      gitService: queue.git_service ?? DEFAULT_GIT_SERVICE,
    });
  }
  const layout = new WorkLayout(place.workDir);
  const envRoot = layout.environments;
  const docker = dockerEngine();
  const dockerOptions = {
    limits,
    labels: { [WORK_LABEL]: place.workDir },
    cacheDir: layout.uvCache,
    logDir: layout.buildLogs,
    pythonDownloads,
  };
  const baseImages = new BaseImages(docker, place.log, settings.base_images ?? DEFAULT_BASE_IMAGE_SOURCES);
  if (settings.executor === "docker") return new DockerExecutor(docker, place.log, { ...dockerOptions, baseImages });
  if (settings.executor === "auto" && (await dockerAvailable(docker))) {
    // An engine without any base image gets the default suite's (bookworm: Python 3.11 and
    // uv-managed Pythons) now, before any build; where none can be had, auto runs locally.
    const ready = await baseImages.anyPresent().catch(() => false);
    try {
      if (!ready) await baseImages.ensure(DEFAULT_SUITE);
      return new DockerExecutor(docker, place.log, { ...dockerOptions, baseImages });
    } catch (error) {
      if (!(error instanceof BaseImageUnavailable)) throw error;
      place.log.warn(
        `a Docker engine answers but ${error.message.replace(/^base image/, "its base image")}: using the local executor, which runs the repositories' tests UNSANDBOXED on this machine`,
      );
      return new LocalExecutor(envRoot, place.log, { pythonDownloads });
    }
  }
  if (settings.executor === "auto")
    place.log.warn(
      "no Docker engine answers (`switch-swe doctor` says why): using the local executor, which runs the repositories' tests UNSANDBOXED on this machine",
    );
  return new LocalExecutor(envRoot, place.log, { pythonDownloads });
}

/** The default container limits, as execution settings spell them. */
export const DEFAULT_LIMIT_SETTINGS = { memory_mb: DEFAULT_LIMITS.memoryBytes / 2 ** 20, pids: DEFAULT_LIMITS.pids, cpus: DEFAULT_LIMITS.cpus };
