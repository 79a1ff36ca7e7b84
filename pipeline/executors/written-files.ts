import { lstat, mkdir, readFile, readlink, rm, symlink, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { changesBetween, snapshot, type Snapshot } from "../checkouts/snapshot.ts";
import { MAX_WRITTEN_BYTES, type WrittenFile } from "./queue-protocol.ts";
import { InfrastructureFault } from "./types.ts";

/** `path` inside `dir`, or an error: a written file's path comes from another machine. */
function inside(dir: string, path: string): string {
  const full = resolve(dir, path);
  if (relative(dir, full).startsWith("..") || full === resolve(dir)) throw new InfrastructureFault(`a written file's path leaves its checkout: ${path}`);
  return full;
}

/** Lays written files over a checkout (each replaces what is there; null content deletes). */
export async function applyWrittenFiles(dir: string, files: WrittenFile[]): Promise<void> {
  for (const file of files) {
    const target = inside(dir, file.path);
    await rm(target, { force: true, recursive: true });
    if (file.content_base64 === null) continue;
    await mkdir(dirname(target), { recursive: true });
    if (file.link !== undefined) await symlink(file.link, target);
    else await writeFile(target, Buffer.from(file.content_base64, "base64"));
  }
}

/** A checkout's state before a run, to see afterwards what the run wrote (caches and byte code left out). */
export const checkoutState = (dir: string): Promise<Snapshot> => snapshot(dir);

/** The files a run wrote in its checkout, with their content, from its state before the run. */
export async function writtenSince(dir: string, before: Snapshot): Promise<WrittenFile[]> {
  const changes = changesBetween(before, await snapshot(dir));
  if (!changes) return [];
  const files: WrittenFile[] = changes.deleted.map((path) => ({ path, content_base64: null }));
  let bytes = 0;
  for (const path of [...changes.added, ...changes.modified].sort()) {
    const full = join(dir, path);
    // Removed since the snapshot was taken (by a process the run left behind): nothing to carry.
    const stat = await lstat(full).catch(() => undefined);
    if (!stat) continue;
    if (stat.isSymbolicLink()) {
      files.push({ path, content_base64: "", link: await readlink(full) });
      continue;
    }
    const content = (await readFile(full)).toString("base64");
    bytes += content.length;
    if (bytes > MAX_WRITTEN_BYTES)
      throw new InfrastructureFault(`the run wrote more than ${MAX_WRITTEN_BYTES / 2 ** 20} MiB of files in its checkout, more than the queue carries back`);
    files.push({ path, content_base64: content });
  }
  return files.sort((a, b) => (a.path < b.path ? -1 : 1));
}
