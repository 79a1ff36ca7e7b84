import { join } from "node:path";
import Docker from "dockerode";
import type { Logger } from "../logger.ts";
import { DEFAULT_LIMITS, DockerExecutor, dockerAvailable, type DockerLimits } from "./docker.ts";
import { LocalExecutor } from "./local.ts";
import type { PythonDownloads } from "./python-offer.ts";
import type { Executor } from "./types.ts";

export * from "./types.ts";
export { DockerExecutor, LocalExecutor };

/**
 * The executor a run asked for. `auto` takes Docker when an engine answers and otherwise the local
 * executor, saying loudly that the repository's code will run unsandboxed.
 */
/** The label naming the work directory a test container ran for. */
export const WORK_LABEL = "org.switch-swe.work";

export async function createExecutor(kind: "auto" | "docker" | "local", options: { envRoot: string; log: Logger; limits?: DockerLimits; workDir?: string; pythonDownloads?: PythonDownloads }): Promise<Executor> {
  const docker = new Docker();
  const labels: Record<string, string> = options.workDir ? { [WORK_LABEL]: options.workDir } : {};
  // Builds share one download and wheel cache, and keep every build's whole log, beside the environments.
  const dockerOptions = { limits: options.limits ?? DEFAULT_LIMITS, labels, cacheDir: join(options.envRoot, "uv-cache"), logDir: join(options.envRoot, "build-logs"), ...(options.pythonDownloads ? { pythonDownloads: options.pythonDownloads } : {}) };
  if (kind === "docker") return new DockerExecutor(docker, options.log, dockerOptions);
  if (kind === "auto" && (await dockerAvailable(docker))) return new DockerExecutor(docker, options.log, dockerOptions);
  if (kind === "auto") options.log.warn("no Docker engine answers: using the local executor, which runs the repositories' tests UNSANDBOXED on this machine");
  return new LocalExecutor(options.envRoot, options.log, options.pythonDownloads ? { pythonDownloads: options.pythonDownloads } : {});
}
