import { closeSync, fsyncSync, openSync, readdirSync, renameSync, rmSync, writeSync } from "node:fs";
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

const TEMP_MARK = ".tmp-";

function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}${TEMP_MARK}${process.pid}-${Math.random().toString(36).slice(2)}`);
}

/**
 * Writes `data` so that a reader, or a process killed at any instant, sees either the old file or
 * the whole new one: write a temporary file in the same directory, fsync it, rename it over the
 * target (atomic on POSIX), then fsync the directory so the rename itself survives a crash.
 */
export async function writeFileAtomic(path: string, data: string | Buffer | Iterable<string>): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = tempPathFor(path);
  const handle = await open(temp, "w", 0o644);
  try {
    if (typeof data === "string" || Buffer.isBuffer(data)) {
      await handle.writeFile(data);
    } else {
      // Streamed in chunks so a large table never has to exist as one string.
      let buffered = "";
      for (const chunk of data) {
        buffered += chunk;
        if (buffered.length >= 1 << 20) {
          await handle.write(buffered);
          buffered = "";
        }
      }
      if (buffered) await handle.write(buffered);
    }
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(temp, { force: true });
    throw error;
  }
  await handle.close();
  await rename(temp, path);
  await fsyncDirectory(dirname(path));
}

/** Synchronous twin, for the few places (exit handlers, lock files) that cannot await. */
export function writeFileAtomicSync(path: string, data: string): void {
  const temp = tempPathFor(path);
  const fd = openSync(temp, "w", 0o644);
  try {
    writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
}

async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Removes temporary files a killed writer left behind; the targets themselves are intact by construction. */
export function removeStaleTempFiles(dir: string): number {
  let removed = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) removed += removeStaleTempFiles(full);
    else if (entry.name.startsWith(".") && entry.name.includes(TEMP_MARK)) {
      rmSync(full, { force: true });
      removed++;
    }
  }
  return removed;
}
