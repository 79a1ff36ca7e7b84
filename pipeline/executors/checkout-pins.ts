import { readFile } from "node:fs/promises";
import { dirname, join, normalize } from "node:path";
import { git, GitError } from "../git.ts";

/**
 * What a base revision itself fixes that the environment's as-of date yields to, for the revision
 * layer only. The environment is resolved as of the earliest task sharing it; a later task's base
 * revision may ask for more than that date offers:
 *
 * - its own date (`committedAt`): its requirement files and its project's dependencies were written
 *   against what was released when it was committed (pylint 2.15's `typing-extensions~=4.3`, added
 *   on 2022-07-04, three days after 4.3.0): the revision resolves as of the later of the two dates;
 * - exact pins (`name==version`) in its own requirement files, following `-r` and `-c` includes:
 *   projects released in lockstep (pylint and astroid) pin a sibling released after the commit,
 *   which no date before it can satisfy.
 */
export interface CheckoutPins {
  /** The base revision's committer date (ISO 8601, UTC), or null when the checkout has no git history. */
  committedAt: string | null;
  exact: CheckoutPin[];
}

export interface CheckoutPin {
  package: string;
  version: string;
  /** The requirement file that pins it, relative to the checkout. */
  file: string;
}

/** No revision to date and nothing pinned: the environment's own date holds. */
export const NO_CHECKOUT_PINS: CheckoutPins = { committedAt: null, exact: [] };

const PIN = /^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([A-Za-z0-9.+!_-]+)\s*(?:;.*)?$/;

/** A base revision's files by path (undefined when it has none), and its commit's date. */
export interface CheckoutSource {
  read: (path: string) => Promise<string | undefined>;
  committedAt: () => Promise<string | null>;
}

const undefinedOnGitError = (error: unknown): undefined => {
  if (error instanceof GitError) return undefined;
  throw error;
};

/** A commit's committer date in UTC, or null when there is no such repository or commit. */
async function commitDate(gitDir: string, revision: string): Promise<string | null> {
  const text = await git([`--git-dir=${gitDir}`, "show", "-s", "--format=%cI", revision]).catch(undefinedOnGitError);
  return text?.trim() ? new Date(text.trim()).toISOString() : null;
}

/** A checkout on disk (a clone at the base revision; one without .git has no date). */
export const fromDirectory = (dir: string): CheckoutSource => ({
  read: (path) => readFile(join(dir, path), "utf8").catch(() => undefined),
  // its own .git only: a directory without one must not be dated by a repository around it
  committedAt: () => commitDate(join(dir, ".git"), "HEAD"),
});

/** A commit of a bare mirror, without a checkout. */
export const fromCommit = (mirror: string, commit: string): CheckoutSource => ({
  read: (path) => git([`--git-dir=${mirror}`, "show", `${commit}:${path}`]).catch(undefinedOnGitError),
  committedAt: () => commitDate(mirror, commit),
});

export async function readCheckoutPins(source: CheckoutSource, files: readonly string[]): Promise<CheckoutPins> {
  const pins = new Map<string, CheckoutPin>();
  const seen = new Set<string>();
  const visit = async (file: string): Promise<void> => {
    const path = normalize(file);
    if (seen.has(path) || path.startsWith("..")) return;
    seen.add(path);
    const text = await source.read(path);
    // A file the recipe names that the revision lacks fails its install, which says so.
    if (text === undefined) return;
    for (const raw of text.split("\n")) {
      const line = raw.replace(/(^|\s)#.*$/, "").trim();
      const include = /^(?:-r|-c|--requirement|--constraint)\s*=?\s*(\S+)$/.exec(line);
      if (include) {
        await visit(join(dirname(path), include[1]!));
        continue;
      }
      const pin = PIN.exec(line);
      if (pin) {
        const name = pin[1]!.toLowerCase().replace(/[._]+/g, "-");
        if (!pins.has(name)) pins.set(name, { package: name, version: pin[2]!, file: path });
      }
    }
  };
  for (const file of files) await visit(file);
  return { committedAt: await source.committedAt(), exact: [...pins.values()].sort((a, b) => (a.package < b.package ? -1 : 1)) };
}
