import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import type Docker from "dockerode";
import { lowDiskSpace } from "../failures.ts";
import { DEBIAN_FOR_PYTHON } from "./base-images.ts";
import { demultiplex, engineFault, holdLifeline, withLifeline } from "./containers.ts";
import { BuildFailed, buildFailure, buildNetworkSettings, InfrastructureFault, saveBuildLog } from "./types.ts";

import { IN_IMAGE, RUN_PATH } from "./in-image.ts";
export { IN_IMAGE, RUN_PATH };

/** The Python versions the Debian base images give, for messages. */
export const describeSuites = () =>
  Object.entries(DEBIAN_FOR_PYTHON)
    .map(([v, suite]) => `${v} (${suite})`)
    .join(", ");

/** What every build of one executor shares: uv's cache on the host, where build logs go, the work directory's labels. */
export interface LayerSettings {
  cacheDir?: string;
  logDir?: string;
  labels: Record<string, string>;
}

/** One layer to build: the image it starts from, its tag, the script, what it is (for messages), its labels and mounts. */
export interface Layer {
  from: string;
  tag: string;
  script: string;
  what: string;
  labels: Record<string, string>;
  binds?: string[];
}

/**
 * Runs a build script in a container from `layer.from` and commits it as `layer.tag`. Building is
 * the one time a container may reach the network (the package indexes). The whole log is saved.
 */
export async function buildLayer(docker: Docker, settings: LayerSettings, layer: Layer): Promise<void> {
  let container: Docker.Container | undefined;
  let lifeline: { release: () => void } | undefined;
  try {
    const network = buildNetworkSettings();
    const ca = network.caBundle ? ["SSL_CERT_FILE=/run/host-ca.crt", "PIP_CERT=/run/host-ca.crt"] : [];
    const binds = [
      ...(layer.binds ?? []),
      ...(network.caBundle ? [`${network.caBundle}:/run/host-ca.crt:ro`] : []),
      ...(settings.cacheDir ? [`${resolve(settings.cacheDir)}:${IN_IMAGE.cache}`] : []),
    ];
    if (settings.cacheDir) await mkdir(settings.cacheDir, { recursive: true });
    container = await docker.createContainer({
      Image: layer.from,
      ...withLifeline(layer.script, "plain"),
      Env: ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8", ...Object.entries(network.vars).map(([k, v]) => `${k}=${v}`), ...ca],
      HostConfig: { Binds: binds },
      // The work directory's labels too, so that a build we did not live to finish is among the
      // containers the next run removes.
      Labels: { ...layer.labels, ...settings.labels },
    });
    lifeline = await holdLifeline(container);
    await container.start();
    const result = (await container.wait()) as { StatusCode: number };
    const logs = demultiplex(await container.logs({ stdout: true, stderr: true }));
    const logPath = settings.logDir ? await saveBuildLog(settings.logDir, layer.tag.replace(":", "-"), logs) : undefined;
    if (result.StatusCode !== 0) {
      // The engine's data root filling up is the machine's moment, whatever the build printed.
      const root = ((await docker.info().catch(() => ({}))) as { DockerRootDir?: string }).DockerRootDir;
      buildFailure(
        `${layer.what} failed (exit ${result.StatusCode})`,
        logs,
        result.StatusCode === 137 || result.StatusCode === 143,
        root ? lowDiskSpace(root) : undefined,
        logPath,
        `the docker executor's base images give ${describeSuites()}`,
      );
    }
    const [repository, tag] = layer.tag.split(":") as [string, string];
    // An image carries its container's labels: the work directory's are emptied, its own set;
    // its command is the base image's again, not our init.
    const labels = [...Object.keys(settings.labels).map((k) => `LABEL ${k}=""`), ...Object.entries(layer.labels).map(([k, v]) => `LABEL ${k}=${v}`)];
    await container.commit({ repo: repository, tag, changes: [...labels, `ENV ${RUN_PATH}`, 'CMD ["sh"]'] });
  } catch (error) {
    if (error instanceof BuildFailed || error instanceof InfrastructureFault) throw error;
    throw engineFault(error, `building ${layer.tag}`);
  } finally {
    lifeline?.release();
    await container?.remove({ force: true }).catch(() => undefined);
  }
}
