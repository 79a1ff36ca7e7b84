import { isNoSpace, NoSpaceLeft, writingTo } from "../failures.ts";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync, writeSync } from "node:fs";
import { mkdirSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { removeContainersLabelled } from "../executors/containers.ts";
import { WORK_LABEL } from "../executors/index.ts";
import type { Logger } from "../logger.ts";
import type { WorkLayout } from "../work-layout.ts";
import { processAlive } from "../process-alive.ts";

export class RunLockError extends Error {
  override name = "RunLockError";
}

/** Who holds a run lock: a process id is reused, so its start time (and the boot) names the process. */
interface LockHolder {
  pid: number;
  /** Clock ticks since boot at which the process started (/proc/<pid>/stat, field 22); null where there is no /proc. */
  start: string | null;
  boot: string | null;
}

/** A field of `/proc/<pid>/stat`, counted from 3 (the state); null when the process is gone. */
function statField(pid: number | string, field: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[field - 3] ?? null;
  } catch {
    return null;
  }
}

/** Clock ticks since boot at which the process started (field 22). */
const processStart = (pid: number) => statField(pid, 22);

function bootId(): string | null {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return null;
  }
}

/** Whether the process a lock names is still the one that took it (not a later process given the same id). */
function holderAlive(holder: LockHolder): boolean {
  if (!processAlive(holder.pid)) return false;
  if (holder.boot && bootId() && holder.boot !== bootId()) return false;
  if (holder.start !== null) return processStart(holder.pid) === holder.start;
  return true;
}

function readHolder(path: string): LockHolder | undefined {
  const text = readFileSync(path, "utf8").trim();
  try {
    const value = JSON.parse(text) as LockHolder | number;
    // Locks written by earlier versions hold the bare process id.
    return typeof value === "number" ? { pid: value, start: null, boot: null } : value;
  } catch {
    return undefined;
  }
}

/**
 * One run at a time per work directory: two runs writing the same lock file would each believe
 * the other's outputs. A lock whose process has exited, or whose process id now names another
 * process, is taken over.
 */
export function acquireRunLock(layout: WorkLayout): () => void {
  const workDir = layout.root;
  const path = layout.runLock;
  writingTo(workDir, () => mkdirSync(workDir, { recursive: true }));
  const me: LockHolder = { pid: process.pid, start: processStart(process.pid), boot: bootId() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx");
      try {
        writeSync(fd, JSON.stringify(me));
      } catch (error) {
        // never a lock file that names nobody: a full disk takes it away again, and says so
        closeSync(fd);
        rmSync(path, { force: true });
        throw isNoSpace(error) ? new NoSpaceLeft(path) : error;
      }
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (error) {
      if (isNoSpace(error)) throw new NoSpaceLeft(path);
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = readHolder(path);
      if (holder && holderAlive(holder)) throw new RunLockError(`another switch-swe run (pid ${holder.pid}) is using ${workDir}; wait for it, or stop it`);
      rmSync(path, { force: true });
    }
  }
  throw new RunLockError(`could not lock ${workDir}`);
}

/**
 * What a killed run leaves in its work directory, removed by the next run once it holds the lock
 * (so nothing else is using them): partial environments and mirror clones (`*.partial-<pid>`),
 * scratch checkouts, and test containers labelled with this work directory. Returns what it removed.
 */
export async function removeLeftovers(layout: WorkLayout, log: Logger): Promise<string[]> {
  const removed: string[] = [];
  for (const { name: sub, dir } of layout.partialHolders) {
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      if (/\.partial-\d+$/.test(name)) {
        const partial = join(dir, name);
        // A SIGKILLed run's git clone is not killed with it, and goes on writing into its partial
        // clone: stopped first, or the removal races its writes (ENOTEMPTY).
        stopProcessesWorkingIn(partial);
        rmSync(partial, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
        removed.push(`${sub}/${name}`);
      }
    }
  }
  const scratch = layout.scratch("run");
  if (existsSync(scratch)) {
    for (const name of readdirSync(scratch)) {
      rmSync(join(scratch, name), { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
      removed.push(`${basename(scratch)}/${name}`);
    }
  }
  removed.push(...(await removeContainersLabelled(WORK_LABEL, layout.root, log)));
  return removed;
}

/**
 * Kills the processes whose command line names `path` or whose working directory lies in it, and
 * every descendant of one (a git clone's helpers; a container's `runc init` under its shim), never
 * this process or its ancestors (Linux /proc; elsewhere nothing is found). Only called for what a dead run or a
 * stopped engine left, when nothing else uses `path`.
 */
export function stopProcessesWorkingIn(path: string): void {
  const absolute = resolve(path);
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid);
  } catch {
    return;
  }
  const uses = (pid: string) => {
    try {
      if (
        readFileSync(`/proc/${pid}/cmdline`, "utf8")
          .split("\0")
          .some((arg) => arg.includes(path))
      )
        return true;
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      return cwd === absolute || cwd.startsWith(`${absolute}/`);
    } catch {
      return false; // gone, or not ours to read
    }
  };
  const parents = new Map(pids.map((pid) => [pid, statField(pid, 4)]));
  // Nor those this process runs under (a test runner whose command line happens to name the path).
  const ours = new Set<string>();
  for (let pid = statField(process.pid, 4); pid && pid !== "0" && !ours.has(pid); pid = parents.get(pid) ?? null) ours.add(pid);
  const doomed = new Set(pids.filter((pid) => !ours.has(pid) && uses(pid)));
  for (let grew = doomed.size > 0; grew;) {
    grew = false;
    for (const [pid, parent] of parents)
      if (parent && !doomed.has(pid) && doomed.has(parent)) {
        doomed.add(pid);
        grew = true;
      }
  }
  for (const pid of doomed) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // already gone
    }
  }
}
