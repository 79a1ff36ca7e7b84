import { readFile } from "node:fs/promises";
import { dirname, join, normalize } from "node:path";
import { git, GitError } from "../git.ts";

/**
 * Exact pins (`name==version`) in the checkout's own requirement files, following `-r` and `-c`
 * includes. Such a pin wins over the environment's as-of date for its package: projects released
 * in lockstep (pylint and astroid) pin a sibling released after the commit, and no release before
 * the date can satisfy it.
 */
export interface CheckoutPin {
  package: string;
  version: string;
  /** The requirement file that pins it, relative to the checkout. */
  file: string;
}

const PIN = /^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([A-Za-z0-9.+!_-]+)\s*(?:;.*)?$/;

/** A file of the checkout by its path, or undefined when it has none. */
export type ReadCheckoutFile = (path: string) => Promise<string | undefined>;

/** The files of a checkout on disk. */
export const fromDirectory =
  (dir: string): ReadCheckoutFile =>
  (path) =>
    readFile(join(dir, path), "utf8").catch(() => undefined);

/** The files of a commit in a bare mirror, without a checkout. */
export const fromCommit =
  (mirror: string, commit: string): ReadCheckoutFile =>
  (path) =>
    git([`--git-dir=${mirror}`, "show", `${commit}:${path}`]).catch((error: unknown) => {
      if (error instanceof GitError) return undefined;
      throw error;
    });

export async function readCheckoutPins(read: ReadCheckoutFile, files: readonly string[]): Promise<CheckoutPin[]> {
  const pins = new Map<string, CheckoutPin>();
  const seen = new Set<string>();
  const visit = async (file: string): Promise<void> => {
    const path = normalize(file);
    if (seen.has(path) || path.startsWith("..")) return;
    seen.add(path);
    const text = await read(path);
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
  return [...pins.values()].sort((a, b) => (a.package < b.package ? -1 : 1));
}
