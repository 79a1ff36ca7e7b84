import { pythonDefinitions } from "../changes/python-definitions.ts";
import { git, GitError } from "../git.ts";
import { type DerivedCommit, derivedCommit } from "./derived.ts";

/**
 * A task's upstream reference reversed out of `base`, and where `rollBackTo` is given (the commit
 * before its fix), each Python source file whose reverse conflicts set back whole to its version
 * there, one file at a time in the order the reverse meets them, until the rest reverses or a
 * file that cannot be set back stops it: a file that is not Python, or not of `sourceFiles` (the
 * task's implementation files as split classified them with the repository's profile: astroid's
 * `unittest_*.py` are tests there, not sources). `rolled` names the files set back, in that order.
 */
export async function derivedSettingBack(
  mirror: string,
  base: string,
  reference: { taskId: string; patch: string; sourceFiles: ReadonlySet<string> },
  rollBackTo: string | undefined,
): Promise<{ made: DerivedCommit; rolled: string[] }> {
  const rolled: string[] = [];
  const { taskId, patch, sourceFiles } = reference;
  const attempt = () => derivedCommit(mirror, base, [{ taskId, patch, ...(rolled.length ? { rolledBack: { to: rollBackTo!, paths: [...rolled] } } : {}) }]);
  let made = await attempt();
  while (!made.ok && rollBackTo && made.path?.endsWith(".py") && sourceFiles.has(made.path) && !rolled.includes(made.path)) {
    rolled.push(made.path);
    made = await attempt();
  }
  return { made, rolled };
}

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
export async function takenAwayUse(mirror: string, base: string, derived: string, paths: readonly string[]): Promise<TakenAwayUse | undefined> {
  const run = (args: string[]) => git([`--git-dir=${mirror}`, ...args]);
  const lost = new Map<string, string>();
  for (const path of [...paths].sort()) {
    const before = await fileAt(run, base, path);
    if (before === undefined) continue;
    const after = pythonDefinitions((await fileAt(run, derived, path)) ?? "").map((d) => d.qualifiedName);
    const kept = new Set(after.map((n) => n.split(".").at(-1)!));
    for (const { qualifiedName } of pythonDefinitions(before)) {
      const name = qualifiedName.split(".").at(-1)!;
      if (after.includes(qualifiedName) || kept.has(name) || /^__\w+__$/.test(name) || lost.has(name)) continue;
      lost.set(name, path);
    }
  }
  if (!lost.size) return undefined;
  let out: string;
  try {
    out = await run([
      "grep",
      "-I",
      "-w",
      "-F",
      "-o",
      ...[...lost.keys()].sort().flatMap((n) => ["-e", n]),
      derived,
      "--",
      "*.py",
      ...paths.map((p) => `:(exclude)${p}`),
    ]);
  } catch (error) {
    // git grep exits 1 when nothing matches; anything else is no verdict on the checkout.
    if (error instanceof GitError && error.code === 1) return undefined;
    throw error;
  }
  const uses = out
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const rest = line.slice(derived.length + 1);
      const cut = rest.lastIndexOf(":");
      return { usedIn: rest.slice(0, cut), name: rest.slice(cut + 1) };
    })
    .filter((u) => lost.has(u.name))
    .sort((a, b) => (a.usedIn < b.usedIn ? -1 : a.usedIn > b.usedIn ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const first = uses[0];
  return first ? { name: first.name, definedIn: lost.get(first.name)!, usedIn: first.usedIn } : undefined;
}

/** A file's text at a commit, or undefined where the commit has no such file. */
async function fileAt(run: (args: string[]) => Promise<string>, commit: string, path: string): Promise<string | undefined> {
  const entry = (await run(["ls-tree", commit, "--", path])).trim();
  if (!entry) return undefined;
  return run(["cat-file", "blob", `${commit}:${path}`]);
}
