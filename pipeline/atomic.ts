import { readdirSync, renameSync, rmSync } from "node:fs";
import { link as linkFile, mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { writingTo } from "./failures.ts";

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
  return writingTo(path, () => writeWhole(path, data));
}

async function writeWhole(path: string, data: string | Buffer | Iterable<string>): Promise<void> {
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

/** Written into every published directory: which files it holds, so a later publish may replace it. */
export const PUBLISH_MARKER = ".switch-swe-published.json";

function siblingMark(dir: string, kind: "staging" | "replaced"): string {
  return join(dirname(dir), `.${basename(dir)}.${kind}-`);
}

/** Every file below `dir`, as paths relative to it, sorted. */
export function listTree(dir: string, prefix = ""): string[] {
  let entries;
  try {
    entries = readdirSync(join(dir, prefix), { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => (e.isDirectory() ? listTree(dir, prefix ? `${prefix}/${e.name}` : e.name) : [prefix ? `${prefix}/${e.name}` : e.name])).sort();
}

/**
 * Replaces the directory `dir` with exactly `files` (relative path → content), so that nothing of
 * an earlier publish survives: the new tree is written and fsynced beside it, then swapped in by
 * two renames. A process killed between the renames leaves the old tree under a marked name,
 * which `recoverPublishedDirectory` puts back on the next start; readers never see a mix.
 * `mayReplace` says whether an existing directory is ours to replace.
 */
export async function replaceDirectoryAtomic(dir: string, files: ReadonlyMap<string, string>, mayReplace: (existing: string[]) => boolean): Promise<void> {
  await replaceDirectoryWith(
    dir,
    async (write) => {
      for (const [path, content] of files) await write(path, content);
    },
    mayReplace,
  );
}

/**
 * `replaceDirectoryAtomic` for a tree too large to hold in memory: `fill` writes each file through
 * the `write` it is given (each written and fsynced as it comes), and the tree is swapped in whole.
 */
export async function replaceDirectoryWith(
  dir: string,
  fill: (
    write: (path: string, content: string | Uint8Array, mode?: number) => Promise<void>,
    link: (path: string, existing: string) => Promise<void>,
  ) => Promise<void>,
  mayReplace: (existing: string[]) => boolean,
): Promise<void> {
  const existing = listTree(dir);
  if (existing.length && !existing.includes(PUBLISH_MARKER) && !mayReplace(existing)) {
    throw new Error(
      `${dir} holds files switch-swe did not publish (${existing.slice(0, 3).join(", ")}${existing.length > 3 ? ", …" : ""}); give this output a directory of its own`,
    );
  }
  const staging = `${siblingMark(dir, "staging")}${process.pid}-${Math.random().toString(36).slice(2)}`;
  await mkdir(staging, { recursive: true });
  try {
    const written = new Set<string>();
    const write = async (path: string, content: string | Uint8Array, mode = 0o644) => {
      const target = join(staging, path);
      await mkdir(dirname(target), { recursive: true });
      const handle = await open(target, "w", mode);
      try {
        await handle.writeFile(content);
        await handle.sync();
      } finally {
        await handle.close();
      }
      written.add(path);
    };
    // A file the tree holds in several places, stored once: `path` is made a hard link to `existing`, written before.
    const link = async (path: string, existing: string) => {
      if (!written.has(existing)) throw new Error(`${existing}: not written before ${path} links to it`);
      const target = join(staging, path);
      await mkdir(dirname(target), { recursive: true });
      await linkFile(join(staging, existing), target);
      written.add(path);
    };
    await fill(write, link);
    await write(PUBLISH_MARKER, JSON.stringify({ files: [...written].sort() }, null, 2) + "\n");
    for (const sub of new Set([...written].map((p) => dirname(join(staging, p))))) await fsyncDirectory(sub);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
  const replaced = `${siblingMark(dir, "replaced")}${process.pid}-${Math.random().toString(36).slice(2)}`;
  let moved = false;
  try {
    await rename(dir, replaced);
    moved = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
      await rm(staging, { recursive: true, force: true });
      throw error;
    }
  }
  await rename(staging, dir);
  await fsyncDirectory(dirname(dir));
  if (moved) await rm(replaced, { recursive: true, force: true });
}

/**
 * Finishes or undoes a directory swap that a killed process left half done: a missing directory
 * gets its replaced tree back, and leftover staging or replaced trees beside it are removed.
 * Returns how many leftovers it removed or restored.
 */
export function recoverPublishedDirectory(dir: string): number {
  const parent = dirname(dir);
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return 0;
  }
  const staging = basename(siblingMark(dir, "staging"));
  const replaced = basename(siblingMark(dir, "replaced"));
  let count = 0;
  const present = (() => {
    try {
      return readdirSync(dir) !== undefined;
    } catch {
      return false;
    }
  })();
  let restored = present;
  for (const name of names.sort()) {
    if (name.startsWith(replaced) && !restored) {
      renameSync(join(parent, name), dir);
      restored = true;
      count++;
    } else if (name.startsWith(staging) || name.startsWith(replaced)) {
      rmSync(join(parent, name), { recursive: true, force: true });
      count++;
    }
  }
  return count;
}
