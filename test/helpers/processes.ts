import { readdirSync, readFileSync } from "node:fs";

/** The pids of this machine's processes whose command line is exactly `argv` (words joined by spaces). */
export function processesRunning(argv: string): string[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ") === argv;
      } catch {
        return false;
      }
    });
}
