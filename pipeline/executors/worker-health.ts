import { statfsSync } from "node:fs";
import type Docker from "dockerode";
import { dockerEngine } from "./docker-engine.ts";
import { git } from "../git.ts";
import type { Logger } from "../logger.ts";
import { BASE_REPOSITORY, DEBIAN_FOR_PYTHON, dockerAvailable } from "./docker.ts";
import { redactUrl } from "./queue.ts";

/** Python versions whose base image this engine has (for a Docker worker). */
export async function imagePythons(docker: Docker): Promise<string[]> {
  const found: string[] = [];
  for (const [python, suite] of Object.entries(DEBIAN_FOR_PYTHON)) {
    if (
      await docker
        .getImage(`${BASE_REPOSITORY}:${suite}`)
        .inspect()
        .then(
          () => true,
          () => false,
        )
    )
      found.push(python);
  }
  return found.sort();
}

export function freeDisk(dir: string): number {
  try {
    const stats = statfsSync(dir);
    return stats.bavail * stats.bsize;
  } catch {
    return 0;
  }
}

/**
 * Why this worker cannot work now, in one line, or undefined when it can: too little disk, no
 * Docker engine or base image (a Docker worker), or no way to fetch from the job's source.
 */
export async function selfCheck(context: {
  executor: "docker" | "local";
  pythons: string[];
  workDir: string;
  minFree: number;
  source?: { url: string };
  fetchEnv: (source: string) => Record<string, string>;
}): Promise<string | undefined> {
  const free = freeDisk(context.workDir);
  if (free < context.minFree)
    return `the disk holding ${context.workDir} has ${(free / 2 ** 20).toFixed(0)} MiB free (this worker needs ${(context.minFree / 2 ** 20).toFixed(0)} MiB)`;
  if (context.executor === "docker") {
    const docker = dockerEngine();
    if (!(await dockerAvailable(docker))) return "its Docker engine does not answer";
    const images = await imagePythons(docker);
    const gone = context.pythons.filter((p) => !images.includes(p));
    if (gone.length) return `its base image of Python ${gone.join(", ")} is gone (${gone.map((p) => `${BASE_REPOSITORY}:${DEBIAN_FOR_PYTHON[p]}`).join(", ")})`;
  }
  if (context.source) {
    const { url } = context.source;
    try {
      await withTimeout(git(["ls-remote", "--heads", url], { env: context.fetchEnv(url) }), 60_000, "no answer in 60 s");
    } catch (error) {
      const words = (error as Error).message;
      if (/could not read Username|Authentication failed|401/i.test(words))
        return `cannot fetch from ${redactUrl(url)}: it refuses this worker's credentials (HTTP 401; start the worker with the coordinator's git service token in SWITCH_SWE_GIT_TOKEN)`;
      return `cannot fetch from ${redactUrl(url)}: ${words.replace(/^git ls-remote failed \(exit -?\d+\): /, "")}`;
    }
  }
  return undefined;
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(what)), ms)))]).finally(() => clearTimeout(timer));
}

/**
 * A worker's service state. A failure a check of the worker confirms takes it out of service: it
 * pauses (takes no job), says why, and checks itself again every `recheckSeconds`, resuming when
 * the checks pass.
 */
export class WorkerHealth {
  state: { reason: string; since: string; source?: { url: string } } | undefined;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly options: {
      id: string;
      log: Logger;
      recheckSeconds: number;
      check: (source: { url: string } | undefined) => Promise<string | undefined>;
      pause: () => Promise<void>;
      resume: () => Promise<void>;
    },
  ) {}

  /** After a job failed: why the worker is at fault (and now out of service), or undefined when its checks pass. */
  async confirm(source: { url: string } | undefined): Promise<string | undefined> {
    const reason = await this.options.check(source);
    if (!reason) return undefined;
    if (this.state) return this.state.reason;
    this.state = { reason, since: new Date().toISOString(), ...(source ? { source } : {}) };
    this.options.log.warn(`worker ${this.options.id}: out of service, taking no jobs: ${reason}`);
    await this.options.pause();
    this.schedule();
    return reason;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.recheck(), this.options.recheckSeconds * 1000);
  }

  private async recheck(): Promise<void> {
    if (!this.state || this.stopped) return;
    const still = await this.options.check(this.state.source);
    if (still) {
      this.state = { ...this.state, reason: still };
      this.schedule();
      return;
    }
    this.options.log.info(`worker ${this.options.id}: back in service (its checks pass again)`);
    this.state = undefined;
    await this.options.resume();
  }
}
