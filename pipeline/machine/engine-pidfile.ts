import { readFileSync } from "node:fs";

/** Where dockerd and the containerd it supervises write their pid files by default. */
export const ENGINE_PIDFILES = [
  { file: "/var/run/docker.pid", process: "dockerd" },
  { file: "/var/run/docker/containerd/containerd.pid", process: "containerd" },
] as const;

/**
 * Why a pid file would stop its daemon from starting, or undefined when it would not. A machine
 * whose /run outlives the engine keeps the file; dockerd refuses to start ("pid file found") while
 * any process has the PID it names, and a reused PID is another program's.
 */
export function stalePidfile(file: string, processName: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  const pid = text.trim();
  if (!/^\d+$/.test(pid)) return `${file} holds no PID ("${pid.slice(0, 20)}")`;
  let running: string | undefined;
  try {
    running = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return `${file} names PID ${pid}, which no process has`;
  }
  if (running === processName) return undefined;
  return `${file} names PID ${pid}, which is ${running}, not ${processName}`;
}
