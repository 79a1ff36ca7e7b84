import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { lstat, mkdir, readdir, readFile, readlink, rm } from "node:fs/promises";
import { join } from "node:path";
import { git } from "../git.ts";
import { ignoredDir } from "./ignored.ts";
import type { CheckoutChanges } from "../schemas/agent.ts";

/**
 * A checkout of `commit` at `dir` with no history: the tree exported from our mirror and committed
 * once ("base"), so the agent has a git repository to work in but no commit of the future (the
 * reference fix, its tests) is reachable from it, and nothing in it names a task or a role.
 */
export async function provisionCheckout(mirror: string, commit: string, dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  await exportTree(mirror, commit, dir);
  const env = {
    GIT_AUTHOR_NAME: "switch-swe",
    GIT_AUTHOR_EMAIL: "switch-swe@localhost",
    GIT_COMMITTER_NAME: "switch-swe",
    GIT_COMMITTER_EMAIL: "switch-swe@localhost",
    GIT_AUTHOR_DATE: "2000-01-01T00:00:00Z",
    GIT_COMMITTER_DATE: "2000-01-01T00:00:00Z",
  };
  await git(["init", "--quiet", "--initial-branch=main"], { cwd: dir });
  await git(["add", "--all", "--force"], { cwd: dir });
  await git(["commit", "--quiet", "--no-gpg-sign", "--allow-empty", "-m", "base"], { cwd: dir, env });
}

/**
 * Writes a commit's tree into `dir` as a checkout would (through a throwaway index), not through
 * `git archive`, which drops `export-ignore` files and expands `export-subst`: the agent's files
 * must be exactly the base revision's, or the collected artifact would show them as changes.
 */
async function exportTree(mirror: string, commit: string, dir: string): Promise<void> {
  const index = join(dir, ".git-export-index");
  const env = { GIT_INDEX_FILE: index };
  try {
    await git([`--git-dir=${mirror}`, `--work-tree=${dir}`, "read-tree", commit], { env });
    await git([`--git-dir=${mirror}`, `--work-tree=${dir}`, "checkout-index", "--all", "--force"], { env });
  } catch (error) {
    throw new Error(`cannot write ${commit} into ${dir}: ${(error as Error).message}`);
  } finally {
    await rm(index, { force: true });
  }
}

/** Path → content hash (a symlink by its target) of every file of a checkout but caches and .git. */
export type Snapshot = Map<string, string>;

/**
 * Hashes already computed, by absolute path: reused while a file's size, mtime and ctime are all
 * unchanged (ctime moves on every write and cannot be set back), so a snapshot after a request
 * reads only what the request touched. One per session run.
 */
export type HashCache = Map<string, { size: number; mtimeMs: number; ctimeMs: number; hash: string }>;

/** `undefined` for a path that went away since it was listed: a file written by rename (an editor's, a harness's) is there, then not. */
async function unlessGone<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Every file of a checkout, hashed. The checkout may be changing while it is read (the runner
 * watches a focus checkout while the agent works): an entry gone between its listing and its
 * reading is left out, as if it had never been there.
 */
export async function snapshot(dir: string, cache?: HashCache): Promise<Snapshot> {
  const files: Snapshot = new Map();
  const walk = async (rel: string): Promise<void> => {
    const abs = rel ? join(dir, rel) : dir;
    for (const name of ((await unlessGone(readdir(abs))) ?? []).sort()) {
      const childRel = rel ? `${rel}/${name}` : name;
      const path = join(dir, childRel);
      const stat = await unlessGone(lstat(path));
      if (!stat) continue;
      if (stat.isDirectory()) {
        if (!ignoredDir(name)) await walk(childRel);
      } else if (stat.isSymbolicLink()) {
        const target = await unlessGone(readlink(path));
        if (target !== undefined) files.set(childRel, `link:${target}`);
      } else if (stat.isFile() && !/\.py[co]$/.test(name)) {
        const known = cache?.get(path);
        if (known && known.size === stat.size && known.mtimeMs === stat.mtimeMs && known.ctimeMs === stat.ctimeMs) {
          files.set(childRel, known.hash);
          continue;
        }
        const content = await unlessGone(readFile(path));
        if (content === undefined) continue;
        const hash = createHash("sha1").update(content).digest("hex");
        cache?.set(path, { size: stat.size, mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs, hash });
        files.set(childRel, hash);
      }
    }
  };
  if (existsSync(dir)) await walk("");
  return files;
}

/** What changed from one snapshot to the next; undefined when nothing did. */
export function changesBetween(before: Snapshot, after: Snapshot): CheckoutChanges | undefined {
  const added = [...after.keys()].filter((p) => !before.has(p)).sort();
  const deleted = [...before.keys()].filter((p) => !after.has(p)).sort();
  const modified = [...after.keys()].filter((p) => before.has(p) && before.get(p) !== after.get(p)).sort();
  return added.length || deleted.length || modified.length ? { added, modified, deleted } : undefined;
}
