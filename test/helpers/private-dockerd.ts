import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import Docker from "dockerode";
import { stopProcessesWorkingIn } from "../../pipeline/engine/leftovers.ts";

/** The private engines' bridge (made once, shared by them all): never the host's docker0. */
const PRIVATE_BRIDGE = "sswe-test0";

const run = promisify(execFile);

/**
 * A Docker engine of the test's own, on its own socket and data root, so a test can restart it
 * without disturbing the engine other tests are using. Needs root, like dockerd.
 */
export class PrivateDockerd {
  readonly socket: string;
  private readonly pidfile: string;

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.socket = join(dir, "docker.sock");
    this.pidfile = join(dir, "docker.pid");
  }

  get client(): Docker {
    return new Docker({ socketPath: this.socket });
  }

  async start(): Promise<void> {
    // A bridge of its own: with `--bridge none` dockerd deletes the host's docker0 at start-up,
    // which breaks every container the machine's own engine starts on its default network.
    await run("ip", ["link", "add", "name", PRIVATE_BRIDGE, "type", "bridge"]).catch(() => undefined);
    const child = spawn(
      "dockerd",
      [
        "--host",
        `unix://${this.socket}`,
        "--data-root",
        join(this.dir, "data"),
        "--exec-root",
        join(this.dir, "exec"),
        "--pidfile",
        this.pidfile,
        "--bridge",
        PRIVATE_BRIDGE,
        "--iptables=false",
        "--ip-masq=false",
      ],
      { stdio: "ignore", detached: true },
    );
    child.unref();
    for (let i = 0; i < 120; i++) {
      try {
        await this.client.ping();
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    throw new Error(`the private dockerd at ${this.socket} did not start`);
  }

  /**
   * Stops the engine the way a service manager does (SIGTERM) and waits until it is gone. An
   * engine stopped while a container ran can leave that container's file systems mounted under its
   * data root; they are unmounted, so the directory can be removed.
   */
  async stop(): Promise<void> {
    if (existsSync(this.pidfile)) {
      const pid = Number(readFileSync(this.pidfile, "utf8"));
      try {
        process.kill(pid, "SIGTERM");
        for (let i = 0; i < 240 && existsSync(this.pidfile); i++) await new Promise((r) => setTimeout(r, 250));
      } catch {
        // already gone
      }
    }
    // A container that was starting when the engine went can leave its shim and a `runc init`
    // waiting for ever (one outlived a CI run): the processes that name this engine's directories,
    // and theirs, go with it.
    stopProcessesWorkingIn(this.dir);
    const mounts = readFileSync("/proc/mounts", "utf8")
      .split("\n")
      .map((line) => line.split(" ")[1] ?? "")
      .filter((point) => point.startsWith(this.dir + "/"));
    for (const point of mounts.sort().reverse()) await run("umount", ["-l", point]).catch(() => undefined);
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Copies an image from the machine's engine into this one. */
  async loadImage(tag: string): Promise<void> {
    await run("sh", ["-c", `docker save '${tag}' | docker -H 'unix://${this.socket}' load -q`]);
  }
}
