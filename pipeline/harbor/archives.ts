import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import { freshCheckout } from "../checkouts/checkout.ts";
import { git } from "../git.ts";
import type { SessionSpec } from "../schemas/session.ts";
import { provisionSessionCheckouts } from "../session/run.ts";

/**
 * The archives an exported task's images are built from, each the same bytes for the same
 * content (so that the dataset stores each once and an engine's build cache reuses its layer):
 * the session's checkouts as the session runner makes them, and the focus base revision for the
 * verifier.
 */

const execFileAsync = promisify(execFile);

/** The date every archived file carries: the date of the checkouts' one commit. */
const ARCHIVE_DATE = "@946684800";

/** A directory as a tar archive whose bytes depend on its content alone: sorted, dated, owned by `owner`; `exclude` left out. */
export async function reproducibleTar(dir: string, owner: { uid: number; gid: number }, exclude: string[] = []): Promise<Buffer> {
  const { stdout } = await execFileAsync(
    "tar",
    [
      "--create",
      "--file=-",
      "--format=gnu",
      "--sort=name",
      `--mtime=${ARCHIVE_DATE}`,
      `--owner=${owner.uid}`,
      `--group=${owner.gid}`,
      "--numeric-owner",
      "--mode=go-w,a+rX",
      ...exclude.map((e) => `--exclude=${e}`),
      "-C",
      dir,
      ".",
    ],
    { encoding: "buffer", maxBuffer: 2 ** 31 },
  );
  return stdout;
}

/**
 * Each checkout of the session, archived as the agent gets it: made by the session runner's own
 * provisioning (provisionSessionCheckouts, from the commits sessionCheckoutCommits gives, a derived
 * checkout's among them), its index then written without this machine's file stats (git
 * refreshes them on the first look), owned by the agent's user. By session path.
 */
export async function checkoutArchives(
  spec: SessionSpec,
  mirror: string,
  commits: ReadonlyMap<string, string>,
  scratch: string,
  owner: { uid: number; gid: number },
): Promise<Map<string, Buffer>> {
  const dir = await mkdtemp(join(scratch, "harbor-checkouts-"));
  try {
    const dirOf = (path: string) => join(dir, basename(path));
    await provisionSessionCheckouts(spec, mirror, commits, dirOf);
    const archives = new Map<string, Buffer>();
    for (const checkout of spec.checkouts) {
      await git(["read-tree", "HEAD"], { cwd: dirOf(checkout.path) });
      archives.set(checkout.path, await reproducibleTar(dirOf(checkout.path), owner));
    }
    return archives;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A bare repository of `commit` alone (shallow: its tree, no history), archived: the verifier's clean base, as verify's mirror. */
export async function commitMirrorArchive(mirror: string, commit: string, scratch: string): Promise<Buffer> {
  const dir = await mkdtemp(join(scratch, "harbor-mirror-"));
  try {
    const bare = join(dir, "focus.git");
    await git(["init", "--quiet", "--bare", "--initial-branch=main", bare]);
    const objects = await git([`--git-dir=${mirror}`, "rev-list", "--objects", "--no-walk", commit]);
    // One thread: the pack's deltas, and so its bytes, do not depend on scheduling.
    await git([`--git-dir=${mirror}`, "-c", "pack.threads=1", "pack-objects", "-q", join(bare, "objects", "pack", "pack")], { input: objects });
    // Its parents are not there: git takes the commit as a shallow clone's boundary.
    await writeFile(join(bare, "shallow"), `${commit}\n`);
    await git([`--git-dir=${bare}`, "update-ref", "refs/heads/main", commit]);
    return await reproducibleTar(dir, { uid: 0, gid: 0 });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The files of `commit` as a fresh checkout of it has them (.git left out): the revision layer's source, as the executors' revision images take it. */
export async function revisionArchive(mirror: string, commit: string, scratch: string): Promise<Buffer> {
  const checkout = await freshCheckout(mirror, commit, [], scratch);
  try {
    return await reproducibleTar(checkout.dir, { uid: 0, gid: 0 }, ["./.git"]);
  } finally {
    await checkout.dispose();
  }
}
