import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { git } from "../git.ts";
import { InputError } from "../validation.ts";

/**
 * A snapshot of a repository without its large files (a partial clone, a host that drops blobs
 * over a size) has every commit but not every file's contents, and no checkout of such a commit
 * can be made (IncompleteSource). The same files are often published elsewhere: a release's
 * source archive holds a package's data files. A file is the one a commit names when its git blob
 * id is that commit's, so such a file can be written into the mirror with no trust in where it
 * came from: the id is the check.
 */

/** The git blob id of a file's contents: what `git hash-object --no-filters` gives. */
export function blobId(content: Buffer): string {
  return createHash("sha1").update(`blob ${content.length}\0`).update(content).digest("hex");
}

/** The blobs that `commits` name and `mirror` lacks, each with the paths it is found at. */
export async function missingBlobs(mirror: string, commits: readonly string[]): Promise<Map<string, Set<string>>> {
  const pathsOf = new Map<string, Set<string>>();
  for (const commit of commits) {
    const listing = await git([`--git-dir=${mirror}`, "ls-tree", "-r", "-z", "--full-tree", commit]);
    for (const entry of listing.split("\0")) {
      const match = /^\d+ blob ([0-9a-f]{40})\t(.*)$/s.exec(entry);
      if (!match) continue; // a submodule's commit, or the listing's end
      const paths = pathsOf.get(match[1]!) ?? new Set<string>();
      paths.add(match[2]!);
      pathsOf.set(match[1]!, paths);
    }
  }
  if (!pathsOf.size) return new Map();
  // One batch for every id: a missing object is a line of its own ("<id> missing"), never an error.
  const answers = await git([`--git-dir=${mirror}`, "cat-file", "--batch-check"], { input: [...pathsOf.keys()].join("\n") + "\n" });
  const missing = new Map<string, Set<string>>();
  for (const line of answers.split("\n")) {
    const [id, state] = line.split(" ");
    if (state === "missing" && id) missing.set(id, pathsOf.get(id)!);
  }
  return missing;
}

const execFileAsync = promisify(execFile);

const ARCHIVE = /\.(tar|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz)$/;

/** Every regular file under a directory (symbolic links not followed: a link's target is not a file of the archive). */
async function* filesUnder(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* filesUnder(path);
    else if (entry.isFile()) yield path;
  }
}

/** A source of files: a directory as it is, a tar archive unpacked (by tar, which reads its compression) into scratch. */
async function filesOf(source: string, scratch: string): Promise<string> {
  const info = await stat(source).catch(() => undefined);
  if (!info) throw new InputError(`--from ${source}: no such file or directory`);
  if (info.isDirectory()) return source;
  if (!ARCHIVE.test(source))
    throw new InputError(`--from ${source}: not a directory or a tar archive (.tar, .tar.gz, .tgz, .tar.bz2, .tar.xz); unpack it and give the directory`);
  const into = await mkdtemp(join(scratch, "archive-"));
  try {
    await execFileAsync("tar", ["-xf", source, "-C", into, "--no-same-owner", "--no-same-permissions"]);
  } catch (error) {
    await rm(into, { recursive: true, force: true });
    const said = (error as { stderr?: string }).stderr?.trim().split("\n")[0];
    throw new InputError(`--from ${source}: tar could not unpack it: ${said || (error as Error).message}`);
  }
  return into;
}

/** What completing one mirror did: the blobs it lacked, those written from a source, those still missing. */
export interface SourceCompletion {
  mirror: string;
  missing: number;
  filled: { id: string; paths: string[]; from: string }[];
  left: { id: string; paths: string[] }[];
}

/**
 * Writes into each mirror every blob of its commits it lacks that a file under `sources` holds
 * (matched by blob id, wherever the file lies). The sources are unpacked and read once for all
 * the mirrors, and not at all when none lacks anything. Nothing else is written.
 */
export async function completeSources(
  mirrors: readonly { mirror: string; commits: readonly string[] }[],
  sources: readonly string[],
): Promise<SourceCompletion[]> {
  const lacking = await Promise.all(mirrors.map(async ({ mirror, commits }) => ({ mirror, missing: await missingBlobs(mirror, commits) })));
  const wanted = new Set(lacking.flatMap(({ missing }) => [...missing.keys()]));
  if (!wanted.size) return lacking.map(({ mirror }) => ({ mirror, missing: 0, filled: [], left: [] }));
  const found = new Map<string, { file: string; from: string }>();
  const scratch = await mkdtemp(join(tmpdir(), "switch-swe-complete-"));
  try {
    for (const source of sources)
      for await (const file of filesUnder(await filesOf(source, scratch))) {
        const id = blobId(await readFile(file));
        if (wanted.has(id) && !found.has(id)) found.set(id, { file, from: source });
      }
    const byPath = (a: { paths: string[] }, b: { paths: string[] }) => a.paths[0]!.localeCompare(b.paths[0]!);
    const done: SourceCompletion[] = [];
    for (const { mirror, missing } of lacking) {
      const filled: SourceCompletion["filled"] = [];
      for (const [id, paths] of missing) {
        const at = found.get(id);
        if (!at) continue;
        const written = (await git([`--git-dir=${mirror}`, "hash-object", "-w", "--no-filters", "--stdin"], { input: await readFile(at.file) })).trim();
        if (written !== id) throw new Error(`git wrote ${at.file} as ${written}, not as ${id}`);
        missing.delete(id);
        filled.push({ id, paths: [...paths].sort(), from: at.from });
      }
      const left = [...missing].map(([id, paths]) => ({ id, paths: [...paths].sort() }));
      done.push({ mirror, missing: filled.length + left.length, filled: filled.sort(byPath), left: left.sort(byPath) });
    }
    return done;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
