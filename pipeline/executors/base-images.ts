import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import type Docker from "dockerode";
import { RunAbort } from "../failures.ts";
import type { Logger } from "../logger.ts";
import { dockerEngine } from "./docker-engine.ts";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough } from "node:stream";

/** Debian releases whose python3 gives each Python version; base images are named after them. */
export const DEBIAN_FOR_PYTHON: Record<string, string> = { "3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie" };
export const BASE_REPOSITORY = "switch-swe-base";

/**
 * Builds a base image from a Debian root filesystem made with debootstrap and imported into
 * Docker, so no image registry is needed. Needs root, debootstrap and a reachable Debian mirror.
 */
export async function buildBaseImage(options: { suite: string; mirror: string; log: Logger; workDir: string; docker?: Docker }): Promise<string> {
  const tag = `${BASE_REPOSITORY}:${options.suite}`;
  const rootfs = await mkdtemp(join(options.workDir, "rootfs-"));
  try {
    options.log.info(`debootstrap ${options.suite} from ${options.mirror} (a few minutes)`);
    await new Promise<void>((resolve, reject) => {
      const child = spawn(
        "debootstrap",
        ["--variant=minbase", "--include=python3,python3-venv,python3-pip,ca-certificates,git", options.suite, rootfs, options.mirror],
        { stdio: ["ignore", "ignore", "pipe"] },
      );
      let err = "";
      child.stderr.on("data", (d) => (err = (err + d).slice(-4000)));
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`debootstrap exited ${code}: ${err.trim().split("\n").slice(-3).join(" | ")}`))));
    });
    options.log.info(`importing the root filesystem as ${tag}`);
    await importRootfs(options.docker ?? dockerEngine(), rootfs, tag, ["ENV PATH=/usr/local/bin:/usr/bin:/bin", `LABEL org.switch-swe.base=${options.suite}`]);
    return tag;
  } finally {
    await rm(rootfs, { recursive: true, force: true });
  }
}

/**
 * A directory imported as an image's one layer through the process's Docker client (the engine's
 * POST /images/create?fromSrc=-, what `docker import` sends), with Dockerfile `changes`: the
 * directory is streamed as a tar archive, never written whole to disk.
 */
export async function importRootfs(docker: Docker, dir: string, tag: string, changes: string[]): Promise<void> {
  const tar = spawn("tar", ["-C", dir, "-c", "."], { stdio: ["ignore", "pipe", "pipe"] });
  // Piped at once: the client sends the body a few ticks later, and Node discards the output of a
  // child that exits before anything reads it (a small directory's tar can), which the engine
  // then imports, without a word, as an empty layer.
  const archive = tar.stdout.pipe(new PassThrough());
  let err = "";
  tar.stderr.on("data", (d) => (err = (err + d).slice(-4000)));
  const tarDone = new Promise<void>((resolve, reject) => {
    tar.on("error", reject);
    tar.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`tar of ${dir} exited ${code}: ${err.trim().split("\n").slice(-3).join(" | ")}`))));
  });
  const [repo, version] = tag.split(":") as [string, string | undefined];
  const imported = (async () => {
    const progress = (await docker.importImage(archive, { repo, tag: version ?? "latest", changes })) as NodeJS.ReadableStream;
    // The engine answers with a progress stream whose last message carries any error.
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(progress, (error: Error | null, events: { error?: string }[]) => {
        const failed = error?.message ?? events.find((e) => e.error)?.error;
        if (failed) reject(new Error(`importing ${dir} as ${tag}: ${failed}`));
        else resolve();
      }),
    );
  })();
  // Both settle before anything is said: a tar that failed is the cause, and whatever the engine
  // made of its cut stream is removed.
  const [archived, made] = await Promise.allSettled([tarDone, imported]);
  if (archived.status === "rejected") {
    await docker
      .getImage(tag)
      .remove({ force: true })
      .catch(() => undefined);
    throw archived.reason;
  }
  if (made.status === "rejected") throw made.reason;
}

/**
 * What makes a Debian image of `suite` a base image (a pulled one, or a Dockerfile's FROM): python3
 * with venv and pip, git and CA certificates, installed with apt where the image lacks them, and
 * its python3 checked to be the suite's.
 */
export function baseImageScript(suite: string): string {
  const python = PYTHON_FOR_SUITE[suite];
  return [
    "set -e",
    "if command -v python3 >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null && python3 -m pip --version >/dev/null 2>&1 && command -v git >/dev/null && [ -e /etc/ssl/certs/ca-certificates.crt ]; then",
    "  echo 'switch-swe: python3, venv, pip, git and CA certificates are in the image'",
    "else",
    "  export DEBIAN_FRONTEND=noninteractive",
    "  apt-get update -qq",
    "  apt-get install -y -qq --no-install-recommends python3 python3-venv python3-pip ca-certificates git >/dev/null",
    "  rm -rf /var/lib/apt/lists/*",
    "fi",
    ...(python
      ? [
          `python3 -c 'import sys; v = "%d.%d" % sys.version_info[:2]; sys.exit(0 if v == "${python}" else "python3 is " + v + ", not ${python}: not a ${suite} image")'`,
        ]
      : []),
  ].join("\n");
}

/** Where a missing base image may come from: an image registry's Debian image, else debootstrap. */
export interface BaseImageSources {
  /** A repository of official-style Debian images, tagged by suite (`debian:bookworm`); empty: never pull. */
  registry: string;
  /** Build from a Debian root filesystem when no registry gives one (needs root and debootstrap). */
  debootstrap: boolean;
  /** The Debian mirror debootstrap, and apt in a pulled image, install from. */
  mirror: string;
}

export const DEFAULT_BASE_IMAGE_SOURCES: BaseImageSources = {
  registry: "docker.io/library/debian",
  debootstrap: true,
  mirror: "http://deb.debian.org/debian",
};

/**
 * No base image of a suite can be had on this machine: a fact of the machine, checked once for the
 * run and never retried per task (RunAbort stops the stage at once), with the ways to fix it.
 */
export class BaseImageUnavailable extends RunAbort {
  override name = "BaseImageUnavailable";
}

/** A pull that shows no progress for this long has stalled (a registry that hangs). */
const PULL_STALL_SECONDS = 60;
/** Installing what a pulled image lacks (apt from a Debian mirror) takes a minute or two; a mirror that hangs is given up. */
const DERIVE_SECONDS = 900;

const PYTHON_FOR_SUITE = Object.fromEntries(Object.entries(DEBIAN_FOR_PYTHON).map(([python, suite]) => [suite, python]));

/**
 * The base images of one Docker engine: each suite's image made, when missing, at most once per
 * run, before the first build that needs it: pulled from a registry (the fast path where one
 * answers), else built by debootstrap where it can be (root, debootstrap installed); else
 * BaseImageUnavailable, saying how to get one.
 */
export class BaseImages {
  private readonly pending = new Map<string, Promise<string>>();

  constructor(
    private readonly docker: Docker,
    private readonly log: Logger,
    private readonly sources: BaseImageSources = DEFAULT_BASE_IMAGE_SOURCES,
  ) {}

  static tagOf(suite: string): string {
    return `${BASE_REPOSITORY}:${suite}`;
  }

  /** Whether this engine has any switch-swe base image. */
  async anyPresent(): Promise<boolean> {
    for (const suite of Object.values(DEBIAN_FOR_PYTHON)) if (await this.present(suite)) return true;
    return false;
  }

  async present(suite: string): Promise<boolean> {
    try {
      await this.docker.getImage(BaseImages.tagOf(suite)).inspect();
      return true;
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return false;
      throw error;
    }
  }

  /** The suite's base image, made once if missing; its tag. */
  ensure(suite: string): Promise<string> {
    let pending = this.pending.get(suite);
    if (!pending) {
      pending = this.make(suite);
      this.pending.set(suite, pending);
    }
    return pending;
  }

  private async make(suite: string): Promise<string> {
    const tag = BaseImages.tagOf(suite);
    if (await this.present(suite)) return tag;
    const tried: string[] = [];
    if (this.sources.registry) {
      const ref = `${this.sources.registry}:${suite}`;
      try {
        this.log.info(`base image ${tag} is missing: pulling ${ref} (once for this engine)`);
        const started = performance.now();
        await this.pull(ref);
        await this.derive(ref, suite);
        this.log.info(`built ${tag} from ${ref} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
        return tag;
      } catch (error) {
        const why = (error as Error).message.split("\n")[0]!;
        tried.push(`pulling ${ref}: ${why}`);
        this.log.warn(`base image ${tag}: pulling ${ref} failed: ${why}`);
      }
    } else tried.push("no registry is configured (execution.base_images.registry)");
    const cannot = this.debootstrapUnavailable();
    if (!cannot) {
      try {
        this.log.info(`base image ${tag} is missing: building it by debootstrap from ${this.sources.mirror} (a few minutes, once for this engine)`);
        await buildBaseImage({ suite, mirror: this.sources.mirror, log: this.log, workDir: tmpdir() });
        return tag;
      } catch (error) {
        tried.push(`debootstrap: ${(error as Error).message.split("\n")[0]}`);
      }
    } else tried.push(`debootstrap: ${cannot}`);
    throw new BaseImageUnavailable(
      `base image ${tag} is missing and cannot be made here (${tried.join("; ")}). Fix: let the Docker engine reach a registry with Debian's ${suite} image ` +
        `(execution.base_images.registry), or build it as root with debootstrap installed: 'switch-swe images base --suite ${suite}'; or run with --executor local`,
    );
  }

  private debootstrapUnavailable(): string | undefined {
    if (!this.sources.debootstrap) return "turned off (execution.base_images.debootstrap: false)";
    if (process.getuid?.() !== 0) return "needs root";
    if (spawnSync("debootstrap", ["--version"], { stdio: "ignore" }).error) return "not installed (apt-get install debootstrap)";
    return undefined;
  }

  /** Pulls an image, logging its progress now and then; a pull without progress for a minute is given up. */
  private async pull(ref: string): Promise<void> {
    const stream = (await this.docker.pull(ref)) as NodeJS.ReadableStream & { destroy?: () => void };
    await new Promise<void>((resolve, reject) => {
      let lastLog = 0;
      let stall = setTimeout(() => onStall(), PULL_STALL_SECONDS * 1000);
      const onStall = () => {
        stream.destroy?.();
        reject(new Error(`no progress for ${PULL_STALL_SECONDS} s`));
      };
      this.docker.modem.followProgress(
        stream,
        (error: Error | null) => {
          clearTimeout(stall);
          if (error) reject(error);
          else resolve();
        },
        (event: { status?: string; progress?: string; id?: string; error?: string }) => {
          clearTimeout(stall);
          stall = setTimeout(() => onStall(), PULL_STALL_SECONDS * 1000);
          if (event.error) return;
          if (Date.now() - lastLog > 5000) {
            lastLog = Date.now();
            this.log.info(`pulling ${ref}: ${[event.id, event.status, event.progress].filter(Boolean).join(" ")}`);
          }
        },
      );
    });
  }

  /**
   * A pulled Debian image made into the suite's base image: what the debootstrap image holds
   * (python3 with venv and pip, git, CA certificates), installed with apt where the image lacks it,
   * and its python3 checked to be the suite's.
   */
  private async derive(ref: string, suite: string): Promise<void> {
    const script = baseImageScript(suite);
    const container = await this.docker.createContainer({
      Image: ref,
      Cmd: ["sh", "-c", script],
      Env: ["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"],
      Labels: { "org.switch-swe.base-build": suite },
    });
    try {
      await container.start();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        void container.kill().catch(() => undefined);
      }, DERIVE_SECONDS * 1000);
      const { StatusCode } = (await container.wait().finally(() => clearTimeout(timer))) as { StatusCode: number };
      if (timedOut) throw new Error(`making ${ref} a base image took over ${DERIVE_SECONDS} s (a Debian mirror that does not answer?); it was stopped`);
      if (StatusCode !== 0) {
        const logs = (await container.logs({ stdout: true, stderr: true })).toString("utf8");
        const tail = logs
          .split("\n")
          .map((l) => l.replace(/[\x00-\x08]/g, "").trim())
          .filter(Boolean)
          .slice(-3)
          .join(" | ");
        throw new Error(`making ${ref} a base image failed (exit ${StatusCode}): ${tail}`);
      }
      await container.commit({
        repo: BASE_REPOSITORY,
        tag: suite,
        changes: ["ENV PATH=/usr/local/bin:/usr/bin:/bin", `LABEL org.switch-swe.base=${suite}`, `LABEL org.switch-swe.base-source=${ref}`, 'CMD ["sh"]'],
      });
    } finally {
      await container.remove({ force: true }).catch(() => undefined);
    }
  }
}
