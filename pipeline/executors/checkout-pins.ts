import { readFile } from "node:fs/promises";
import { dirname, join, normalize } from "node:path";

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

export async function readCheckoutPins(checkoutDir: string, files: readonly string[]): Promise<CheckoutPin[]> {
  const pins = new Map<string, CheckoutPin>();
  const seen = new Set<string>();
  const visit = async (file: string): Promise<void> => {
    const path = normalize(file);
    if (seen.has(path) || path.startsWith("..")) return;
    seen.add(path);
    let text: string;
    try {
      text = await readFile(join(checkoutDir, path), "utf8");
    } catch {
      // A file the recipe names that the revision lacks fails its install, which says so.
      return;
    }
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
