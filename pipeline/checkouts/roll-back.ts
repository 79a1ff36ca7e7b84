import { parseGitDiff } from "../changes/diff.ts";
import { type DerivedCommit, derivedCommit } from "./derived.ts";

/**
 * A task's upstream reference reversed out of `base`, and where `rollBackTo` is given (the commit
 * before its fix), each Python source file whose reverse conflicts set back whole to its version
 * there, one file at a time in the order the reverse meets them, until the rest reverses or a
 * file that cannot be set back stops it: a file that is not Python, or not of `implementationPatch` (the
 * task's implementation files as split classified them with the repository's profile: astroid's
 * `unittest_*.py` are tests there, not sources). `rolled` names the files set back, in that order.
 */
export async function derivedSettingBack(
  mirror: string,
  base: string,
  reference: { taskId: string; patch: string; implementationPatch: string },
  rollBackTo: string | undefined,
): Promise<{ made: DerivedCommit; rolled: string[] }> {
  const rolled: string[] = [];
  const { taskId, patch } = reference;
  const sourceFiles = new Set(parseGitDiff(reference.implementationPatch).map((section) => section.path));
  const attempt = () => derivedCommit(mirror, base, [{ taskId, patch, ...(rolled.length ? { rolledBack: { to: rollBackTo!, paths: [...rolled] } } : {}) }]);
  let made = await attempt();
  while (!made.ok && rollBackTo && made.path?.endsWith(".py") && sourceFiles.has(made.path) && !rolled.includes(made.path)) {
    rolled.push(made.path);
    made = await attempt();
  }
  return { made, rolled };
}
