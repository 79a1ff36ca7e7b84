import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import { InputError } from "../pipeline/validation.ts";

/** Where a command writes: its results (standard output) and its messages (standard error). */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

/** Bad usage of the command line: one line, exit 2. */
export class UsageError extends InputError {}

/** The task or run could not be done (not the user's input): one line, exit 1. */
export class RunFailed extends Error {}

/** A path option must name what it says before any work starts: a file, or a directory. */
export function requirePath(option: string, path: string | undefined, kind: "file" | "directory"): void {
  if (path === undefined) return;
  let stat;
  try {
    stat = statSync(path);
  } catch {
    throw new UsageError(`${option} ${path}: no such ${kind}`);
  }
  // Not only regular files: /dev/null is a fine empty artifact, a pipe a fine diff.
  if (kind === "file" && stat.isDirectory()) throw new UsageError(`${option} ${path}: is a directory, expected a file`);
  if (kind === "directory" && !stat.isDirectory()) throw new UsageError(`${option} ${path}: is a file, expected a directory`);
}

/** The work directory must be one this user can create and write, before the first log line goes there. */
export function requireWritableDir(configPath: string, dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
  } catch (error) {
    throw new UsageError(
      `${configPath}: key work_dir: ${dir} cannot be created or written (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
}

/**
 * Commander discards what an action returns, so each action hands its exit code to this holder,
 * one per program: `main` reads it once the command finished.
 */
export class ExitCode {
  value = 0;

  act<A extends unknown[]>(fn: (...args: A) => Promise<number> | number): (...args: A) => Promise<void> {
    return async (...args: A) => {
      this.value = await fn(...args);
    };
  }
}
