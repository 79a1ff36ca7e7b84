import { spawnSync } from "node:child_process";
import type { PythonOffer } from "./types.ts";

/**
 * Whether uv's managed Python downloads can be had from here: `yes` and `no` say so; `auto` asks
 * the download host once per process (uv's mirror when UV_PYTHON_INSTALL_MIRROR names one). Any
 * HTTP answer means reachable; a refused connection, a failed name lookup or no answer within a
 * few seconds means not. Behind a proxy the host cannot be asked directly, so the proxy is trusted
 * to reach it (a build that then cannot download says so).
 */
export type PythonDownloads = "auto" | "yes" | "no";

/** Versions uv offers as managed downloads that a worker which can download serves too. */
export const UV_MANAGED_PYTHONS = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14"];

const DEFAULT_DOWNLOAD_HOST = "https://github.com/astral-sh/python-build-standalone/releases";
const PROBE_TIMEOUT_MS = 5000;
const probes = new Map<string, Promise<boolean>>();

export function uvDownloadsReachable(setting: PythonDownloads, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (setting !== "auto") return Promise.resolve(setting === "yes");
  if (env.HTTPS_PROXY || env.https_proxy) return Promise.resolve(true);
  const url = env.UV_PYTHON_INSTALL_MIRROR || DEFAULT_DOWNLOAD_HOST;
  let probe = probes.get(url);
  if (!probe) {
    probe = fetch(url, { method: "HEAD", redirect: "manual", signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) }).then(
      () => true,
      () => false,
    );
    probes.set(url, probe);
  }
  return probe;
}

/** The offer of an executor with these interpreters installed, given the download setting. */
export async function pythonOffer(installed: string[], describe: string, downloads: PythonDownloads): Promise<PythonOffer> {
  return { installed: [...installed].sort(), downloads: await uvDownloadsReachable(downloads), describe };
}

/** Python versions this machine's interpreters give (python3, python3.X on the PATH). */
export function hostPythons(): string[] {
  const found = new Set<string>();
  for (const candidate of ["python3", ...["3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14"].map((v) => `python${v}`)]) {
    const result = spawnSync(candidate, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], { encoding: "utf8" });
    if (result.status === 0) found.add(result.stdout.trim());
  }
  return [...found].sort();
}
