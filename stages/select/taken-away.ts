import type { TreeReader } from "../../pipeline/answers/tree-reader.ts";
import { pythonDefinitions } from "../../pipeline/changes/python-definitions.ts";

/** A definition a rolled-back file no longer has, and a file of the checkout that still names it. */
export interface TakenAwayUse {
  name: string;
  /** The rolled-back file that had it at the base. */
  definedIn: string;
  usedIn: string;
}

/**
 * Whether setting `paths` back to an older version (the derived checkout `derived`, made from
 * `base`) takes away a definition that the rest of the checkout still uses: every function, class
 * and method the files define at `base` but no longer do in `derived`, searched by name (a whole
 * word) in every other Python file of `derived`. The first use found, in path order, else
 * undefined. Dunder names are not searched (every class has them); nor is a name the file still
 * defines elsewhere (a method moved between classes). A static check: a use by a name built at
 * run time (a printer's `_print_<Class>` dispatch) is not found, which the interruption's own
 * re-qualification must catch.
 */
export async function takenAwayUse(reader: TreeReader, base: string, derived: string, paths: readonly string[]): Promise<TakenAwayUse | undefined> {
  const lost = new Map<string, string>();
  for (const path of [...paths].sort()) {
    const before = await reader.file(base, path);
    if (before === undefined) continue;
    const kept = new Set(pythonDefinitions((await reader.file(derived, path)) ?? "").map((d) => d.qualifiedName.split(".").at(-1)!));
    for (const { qualifiedName } of pythonDefinitions(before)) {
      const name = qualifiedName.split(".").at(-1)!;
      if (!kept.has(name) && !/^__\w+__$/.test(name) && !lost.has(name)) lost.set(name, path);
    }
  }
  const where = await reader.whereNames(derived, [...lost.keys()], ["*.py", ...paths.map((p) => `:(exclude)${p}`)]);
  const uses = [...where].flatMap(([name, usedIn]) => (usedIn ? [{ name, usedIn }] : []));
  uses.sort((a, b) => (a.usedIn !== b.usedIn ? (a.usedIn < b.usedIn ? -1 : 1) : a.name < b.name ? -1 : 1));
  const first = uses[0];
  return first ? { name: first.name, definedIn: lost.get(first.name)!, usedIn: first.usedIn } : undefined;
}
