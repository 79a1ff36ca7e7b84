import { readFileSync } from "node:fs";

/** A daemon's pid file, and what a stale one does to the engine's start. */
export interface EnginePidfile {
  file: string;
  /** The daemon's process name (/proc/PID/comm). */
  process: string;
  effect: string;
}

/** Where dockerd and the containerd it supervises write their pid files by default. */
export const ENGINE_PIDFILES: readonly EnginePidfile[] = [
  { file: "/var/run/docker.pid", process: "dockerd", effect: "dockerd refuses to start (pid file found) while that process runs" },
  {
    file: "/var/run/docker/containerd/containerd.pid",
    process: "containerd",
    effect: "dockerd takes that process for its containerd and hangs waiting for it to answer",
  },
];

/**
 * The process that now has the PID a daemon's pid file names, when it is not that daemon: a
 * machine whose /run outlives the engine keeps the file, and the PID goes to another program.
 * A file naming no live process, or no PID, is harmless (dockerd overwrites it) and gives
 * undefined, as does the daemon's own.
 */
export function pidfileHeldByAnother(file: string, processName: string): { pid: number; holder: string } | undefined {
  let pid: string;
  try {
    pid = readFileSync(file, "utf8").trim();
  } catch {
    return undefined;
  }
  if (!/^\d+$/.test(pid)) return undefined;
  let holder: string;
  try {
    holder = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return undefined;
  }
  return holder === processName ? undefined : { pid: Number(pid), holder };
}
