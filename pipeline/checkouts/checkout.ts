import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { git, GitError, IncompleteSource } from "../git.ts";

/**
 * How a prepared checkout was made: a mirror (whose clone source its git config records), a
 * commit and the patches applied in order. What another machine needs to make the same checkout.
 */
export interface CheckoutOrigin {
  mirror: string;
  commit: string;
  patches: { name: string; text: string }[];
}

/** A base revision, and how to get a clean checkout of it (for the revision layer of an environment). */
export interface BaseRevision {
  commit: string;
  /** How `checkout` makes it (the mirror and the commit, no patches): what the queue's workers need to make the same one. */
  origin?: CheckoutOrigin;
  checkout: () => Promise<{ dir: string; dispose: () => Promise<void>; origin?: CheckoutOrigin }>;
}

export class PatchDoesNotApply extends Error {
  override name = "PatchDoesNotApply";
}

/**
 * A fresh checkout of `commit` from a bare mirror (sharing its objects, so it is cheap), with the
 * patches applied in order. The caller removes it with `dispose`.
 */
export async function freshCheckout(
  mirror: string,
  commit: string,
  patches: { name: string; text: string }[],
  parent: string,
): Promise<{ dir: string; dispose: () => Promise<void>; origin: CheckoutOrigin }> {
  const root = await mkdtemp(join(parent, "checkout-"));
  const dir = join(root, "repo");
  const dispose = () => rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  try {
    await git(["clone", "--quiet", "--shared", "--no-checkout", mirror, dir]);
    await git(["checkout", "--quiet", "--detach", commit], { cwd: dir });
    // git checks out a tree whose blobs the mirror lacks (a partial clone, a snapshot without its
    // large files) without a word, leaving those files out: a checkout that is not the commit.
    const absent = (await git(["ls-files", "--deleted", "-z"], { cwd: dir })).split("\0").filter(Boolean);
    if (absent.length) throw new IncompleteSource(commit, absent, mirror);
    for (const patch of patches) {
      if (!patch.text) continue;
      try {
        await git(["apply", "--whitespace=nowarn", "--binary", "-"], { cwd: dir, input: patch.text });
      } catch (error) {
        throw new PatchDoesNotApply(
          `the ${patch.name} patch does not apply to ${commit}: ${error instanceof GitError ? error.stderr.trim().split("\n").slice(0, 2).join(" | ") : (error as Error).message}`,
        );
      }
    }
    return { dir, dispose, origin: { mirror, commit, patches } };
  } catch (error) {
    await dispose();
    throw error;
  }
}

/** A base revision of a mirror, checked out on demand under `parent` (for an environment's revision layer). */
export function baseRevision(mirror: string, commit: string, parent: string): BaseRevision {
  return { commit, origin: { mirror, commit, patches: [] }, checkout: () => freshCheckout(mirror, commit, [], parent) };
}
