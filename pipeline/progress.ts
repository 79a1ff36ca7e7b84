/**
 * Progress for long stages: a redrawn bar on a terminal, and on anything else (CI logs, pipes)
 * a plain line at most every `intervalMs`, so logs stay readable.
 */
export interface Progress {
  start(label: string, total: number): void;
  tick(detail?: string): void;
  done(): void;
}

export interface ProgressOptions {
  stream?: NodeJS.WriteStream | { isTTY?: boolean; write(chunk: string): boolean };
  intervalMs?: number;
  now?: () => number;
}

export function createProgress(options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  const interval = options.intervalMs ?? 5000;
  const now = options.now ?? Date.now;
  const tty = Boolean(stream.isTTY);
  let label = "";
  let total = 0;
  let count = 0;
  let startedAt = 0;
  let lastLine = 0;
  let printedCount = -1;

  const line = (detail?: string) => {
    const pct = total ? Math.floor((count / total) * 100) : 100;
    const elapsed = ((now() - startedAt) / 1000).toFixed(1);
    if (tty) {
      const width = 28;
      const filled = total ? Math.round((count / total) * width) : width;
      const bar = "█".repeat(filled) + "░".repeat(width - filled);
      stream.write(`\r${label} ${bar} ${count}/${total} ${pct}% ${elapsed}s${detail ? " " + detail.slice(0, 40) : ""}\x1b[K`);
    } else {
      stream.write(`${label}: ${count}/${total} (${pct}%) after ${elapsed}s\n`);
      printedCount = count;
    }
  };

  return {
    start(l, t) {
      label = l;
      total = t;
      count = 0;
      printedCount = -1;
      startedAt = now();
      lastLine = startedAt;
      if (tty && total > 0) line();
    },
    tick(detail) {
      count++;
      const t = now();
      if (tty) line(detail);
      else if (t - lastLine >= interval) {
        lastLine = t;
        line();
      }
    },
    done() {
      if (total === 0) return;
      if (tty) {
        line();
        stream.write("\n");
      } else if (count > 0 && printedCount !== count) line();
    },
  };
}

export const silentProgress: Progress = { start() {}, tick() {}, done() {} };
