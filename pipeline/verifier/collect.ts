import { existsSync } from "node:fs";
import { chmod, copyFile, lstat, mkdir, readdir, readlink, rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import { freshCheckout } from "../checkouts/checkout.ts";
import { git } from "../git.ts";
import { BUILD_DIRS, ignoredDir } from "../checkouts/ignored.ts";

/** Byte code, logs and coverage data. */
export const EXCLUDED_FILE = /(\.py[co]|\.log|\$py\.class)$|^\.coverage(\..+)?$|^coverage\.xml$|^\.DS_Store$/;

export interface CollectedArtifact {
  /** A git diff from the base commit to the checkout's final state (binary-safe). */
  patch: string;
  /** Untracked paths left out as environments, caches, logs or build outputs, for the record. */
  excluded: string[];
}

function excludedDir(rel: string, name: string, abs: string): boolean {
  if (ignoredDir(name)) return true;
  if (!rel.includes("/") && BUILD_DIRS.has(name)) return true;
  // Any virtual environment, whatever it is called.
  return existsSync(join(abs, "pyvenv.cfg"));
}

/**
 * The focus artifact of a checkout (SPEC §3): its committed and uncommitted changes, deletions and
 * new files, as one diff against `baseCommit`. The checkout's files are copied (symlinks as
 * symlinks, never followed) over a clean checkout of the base from our own mirror, and git runs
 * only there: the checkout's own .git (its hooks, filters and history) is never used. Untracked
 * environments, caches, logs and build outputs are left out; a tracked file is always taken.
 */
export async function collectCheckoutArtifact(checkoutDir: string, mirror: string, baseCommit: string, scratch: string): Promise<CollectedArtifact> {
  if (!existsSync(checkoutDir) || !(await lstat(checkoutDir)).isDirectory()) throw new Error(`${checkoutDir}: not a directory`);
  const clean = await freshCheckout(mirror, baseCommit, [], scratch);
  try {
    const tracked = new Set((await git(["ls-files", "-z"], { cwd: clean.dir })).split("\0").filter(Boolean));
    const trackedDirs = new Set(
      [...tracked].flatMap((p) =>
        p
          .split("/")
          .slice(0, -1)
          .map((_, i, parts) => parts.slice(0, i + 1).join("/")),
      ),
    );
    for (const entry of await readdir(clean.dir)) if (entry !== ".git") await rm(join(clean.dir, entry), { recursive: true, force: true });

    const excluded: string[] = [];
    const copyTree = async (rel: string, insideExcluded: boolean): Promise<void> => {
      const from = join(checkoutDir, rel);
      for (const name of (await readdir(from)).sort()) {
        const childRel = rel ? `${rel}/${name}` : name;
        const source = join(from, name);
        const target = join(clean.dir, childRel);
        const stat = await lstat(source);
        if (stat.isDirectory()) {
          if (name === ".git") continue;
          const skip = insideExcluded || excludedDir(childRel, name, source);
          if (skip && !trackedDirs.has(childRel)) {
            excluded.push(`${childRel}/`);
            continue;
          }
          await copyTree(childRel, skip);
        } else if (stat.isFile() || stat.isSymbolicLink()) {
          if ((insideExcluded || EXCLUDED_FILE.test(name)) && !tracked.has(childRel)) {
            excluded.push(childRel);
            continue;
          }
          await mkdir(join(clean.dir, rel), { recursive: true });
          if (stat.isSymbolicLink()) await symlink(await readlink(source), target);
          else {
            await copyFile(source, target);
            await chmod(target, stat.mode & 0o111 ? 0o755 : 0o644);
          }
        }
        // Sockets, pipes and devices are not part of any artifact.
      }
    };
    await copyTree("", false);
    await git(["add", "--all", "."], { cwd: clean.dir });
    const patch = await git(["diff", "--cached", "--binary", "--full-index", "--no-renames", "HEAD"], { cwd: clean.dir });
    return { patch, excluded };
  } finally {
    await clean.dispose();
  }
}
