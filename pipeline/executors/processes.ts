import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { constants } from "node:os";
import { RUN_OUTPUT_LIMIT } from "./types.ts";

/** The variables every process of ours starts from (a run adds its own). */
export const BASE_ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C.UTF-8", PYTHONDONTWRITEBYTECODE: "1", PIP_DISABLE_PIP_VERSION_CHECK: "1" };

/**
 * Processes of ours on this machine: run in a group of their own with a time limit and a bounded
 * output, killed with whatever they left behind (marked by an environment variable), and with us.
 */

export interface Completed {
  /** The exit status; 128 + the signal's number when a signal ended the process, as a shell says. */
  code: number;
  /** The signal that ended the process, if one did. */
  signal?: string;
  timedOut: boolean;
  output: string;
  seconds: number;
}

/** Every process started by a run carries this variable, with the run's own id, unless it drops its environment. */
const RUN_MARKER = "SWITCH_SWE_RUN";
/** How long output may still arrive after the process exited, before its pipes are closed on it. */
const OUTPUT_GRACE_MS = 1000;

/**
 * Kills every process that carries the run's marker: descendants that left the process group
 * (`setsid`, a daemonised helper) keep the variable, and with it would keep the run's pipes open.
 */
export function killMarkedProcesses(runId: string): number {
  let killed = 0;
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return 0; // no /proc: the process group is all we can reach
  }
  const needle = `${RUN_MARKER}=${runId}`;
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(needle)) continue;
      process.kill(Number(pid), "SIGKILL");
      killed++;
    } catch {
      // gone already, or not ours to read
    }
  }
  return killed;
}

/**
 * What kills a run's processes if we die first (SIGKILL, OOM): a watcher outside the run's group
 * holding one end of a pipe from us. At our death the pipe closes; the watcher then kills the
 * run's group and every process carrying its marker. A run that ends first says "done" on the
 * pipe, and the watcher leaves without killing anything (the group's id may be reused by then).
 */
const ORPHAN_WATCHER = [
  "IFS= read -r line",
  '[ "$line" = done ] && exit 0',
  'kill -KILL -- "-$1" 2>/dev/null',
  'for p in /proc/[0-9]*; do grep -qxzF -- "$2" "$p/environ" 2>/dev/null && kill -KILL "${p#/proc/}" 2>/dev/null; done',
  "exit 0",
].join("\n");

function watchForOrphans(group: number, runId: string): { release: () => void } {
  const watcher = spawn("sh", ["-c", ORPHAN_WATCHER, "orphan-watcher", String(group), `${RUN_MARKER}=${runId}`], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
    env: BASE_ENV,
  });
  watcher.on("error", () => undefined);
  watcher.stdin.on("error", () => undefined);
  watcher.unref();
  return { release: () => watcher.stdin.end("done\n") };
}

/**
 * The last `limit` bytes of a stream, kept as chunks and joined only when they grow past twice
 * the limit (appending to one string would copy it on every chunk), decoded once at the end.
 */
class OutputTail {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly limit: number) {}

  add(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size > 2 * this.limit) this.trim();
  }

  private trim(): void {
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined.subarray(Math.max(0, joined.length - this.limit))];
    this.size = this.chunks[0]!.length;
  }

  text(): string {
    if (this.size > this.limit) this.trim();
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

/**
 * Once the run's first process has exited: kills what it left behind, and calls `done` when the
 * pipes close or OUTPUT_GRACE_MS has passed. A descendant caught in the middle of an exec shows no
 * environment, so one look can miss it (2 runs in 1,000 on a loaded machine): it looks again
 * until then.
 */
function afterExit(child: ChildProcess, runId: string, killAll: () => void, done: () => void): void {
  killAll();
  const again = setInterval(() => killMarkedProcesses(runId), OUTPUT_GRACE_MS / 10);
  const end = () => {
    clearInterval(again);
    clearTimeout(grace);
    done();
  };
  const grace = setTimeout(end, OUTPUT_GRACE_MS);
  child.on("close", end);
}

/** The PID namespace a process lives in (`pid:[inode]`), or undefined once it is gone or unreadable. */
function pidNamespaceOf(pid: number | "self", link: "pid" | "pid_for_children" = "pid"): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/${link}`);
  } catch {
    return undefined;
  }
}

/** How long a killed run's PID namespace may take to empty before the run is returned anyway. */
const NAMESPACE_EMPTY_MS = 10_000;

/**
 * Waits until no process is left in the PID namespace `namespace` (at most NAMESPACE_EMPTY_MS).
 * Killing `unshare` kills its namespace's first process, and the kernel then kills every other
 * process in it; but `unshare` is gone at once, while the namespace's others may still be dying.
 * A process whose namespace can no longer be read has released it (and its memory before that).
 */
function whenNamespaceEmpty(namespace: string | undefined, done: () => void): void {
  if (!namespace) return done();
  const deadline = performance.now() + NAMESPACE_EMPTY_MS;
  const look = () => {
    let pids: string[] = [];
    try {
      pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
    } catch {
      // no /proc: nothing to wait for
    }
    const left = pids.some((pid) => pidNamespaceOf(Number(pid)) === namespace);
    if (!left || performance.now() > deadline) done();
    else setTimeout(look, 20);
  };
  look();
}

/**
 * Runs a command in its own process group and with a marker in its environment, so that a
 * timeout, or its end, kills everything it started, even what left its group. It returns once the
 * process has exited and its output is read, or at most OUTPUT_GRACE_MS later: a descendant that
 * escaped and holds the pipes open cannot keep the caller waiting. With `killWhenOrphaned` (builds
 * and test runs), the run also dies if this process is killed before it ends.
 */
export function runProcess(
  command: string,
  args: string[],
  options: {
    cwd: string;
    env: Record<string, string>;
    timeoutSeconds: number;
    input?: string;
    outputLimit?: number;
    channel?: (chunk: Buffer, stop: () => void) => void;
    ownPidNamespace?: boolean;
    killWhenOrphaned?: boolean;
  },
): Promise<Completed> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const runId = randomUUID();
    // In a PID namespace of its own, every descendant dies with the run's first process, whatever
    // session, group or environment it moved to.
    const ownNamespace = Boolean(options.ownPidNamespace && pidNamespaceAvailable());
    const [file, argv] = ownNamespace ? ["unshare", ["--pid", "--fork", "--kill-child", "--", command, ...args]] : [command, args];
    const child = spawn(file, argv, {
      cwd: options.cwd,
      env: { ...options.env, [RUN_MARKER]: runId },
      detached: true,
      stdio: options.channel ? ["pipe", "pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe"],
    });
    const orphans = options.killWhenOrphaned && child.pid ? watchForOrphans(child.pid, runId) : undefined;
    const output = new OutputTail(options.outputLimit ?? RUN_OUTPUT_LIMIT);
    const keep = (d: Buffer) => output.add(d);
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    // The run's own PID namespace, read from `unshare` before it is killed (once it has made it):
    // a run that ends by itself has emptied it, a killed one is returned once it is empty.
    let namespace: string | undefined;
    const killAll = () => {
      if (ownNamespace && namespace === undefined && child.pid) {
        const made = pidNamespaceOf(child.pid, "pid_for_children");
        if (made !== pidNamespaceOf("self")) namespace = made;
      }
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // the group is gone
      }
      killMarkedProcesses(runId);
    };
    const channel = options.channel ? (child.stdio[3] as NodeJS.ReadableStream & { destroy(): void }) : undefined;
    channel?.on("data", (chunk: Buffer) => options.channel!(chunk, killAll));
    channel?.on("error", () => undefined);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killAll();
    }, options.timeoutSeconds * 1000);
    let settled = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      orphans?.release();
      child.stdout.destroy();
      child.stderr.destroy();
      channel?.destroy();
      const status = code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : -1);
      resolve({ code: status, ...(signal ? { signal } : {}), timedOut, output: output.text(), seconds: (performance.now() - started) / 1000 });
    };
    child.on("error", (error) => {
      clearTimeout(timer);
      orphans?.release();
      reject(error);
    });
    // Whatever the run left behind goes too, in its group or out of it; then its output is read.
    child.on("exit", (code, signal) => afterExit(child, runId, killAll, () => whenNamespaceEmpty(namespace, () => finish(code, signal))));
    // A process that exits without reading its input (killed, or done early) closes the pipe:
    // that is not an error of ours, and its exit status says what happened.
    child.stdin.on("error", () => undefined);
    child.stdin.end(options.input ?? "");
  });
}

let pidNamespace: boolean | undefined;

/** Whether this machine lets us start a process in a PID namespace of its own (root, or user namespaces). */
export function pidNamespaceAvailable(): boolean {
  pidNamespace ??= spawnSync("unshare", ["--pid", "--fork", "--kill-child", "--", "true"], { stdio: "ignore", timeout: 10_000 }).status === 0;
  return pidNamespace;
}
