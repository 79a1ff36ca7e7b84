import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isTestFileName } from "../changes/classify.ts";
import { type FileDiff, DiffParseError, parseGitDiff } from "../changes/diff.ts";
import { hunksOf } from "../changes/hunks.ts";
import { definitionAt, type PythonDefinition, pythonDefinitions, withoutDefinitions } from "../changes/python-definitions.ts";
import { git, GitError } from "../git.ts";

/** A task's upstream reference, as history holds it (a full-index diff: the reverse merges three ways from its blobs), to be reversed out of a later base. */
export interface ReversedReference {
  taskId: string;
  patch: string;
  /**
   * Files of the reference set back whole to their version at `to` (the commit before the task's
   * fix) instead of reversed, with every later change to them: where later work on a source file
   * makes its reverse conflict (`stages.select.roll_back: files`). A path `to` lacks is removed.
   */
  rolledBack?: { to: string; paths: string[] };
}

/** The fixed identity of a derived commit, so every machine that makes it gets the same id. */
const DERIVED_IDENTITY = {
  GIT_AUTHOR_NAME: "switch-swe",
  GIT_AUTHOR_EMAIL: "switch-swe@localhost",
  GIT_COMMITTER_NAME: "switch-swe",
  GIT_COMMITTER_EMAIL: "switch-swe@localhost",
  GIT_AUTHOR_DATE: "2000-01-01T00:00:00Z",
  GIT_COMMITTER_DATE: "2000-01-01T00:00:00Z",
};

export type DerivedCommit =
  | {
      ok: true;
      commit: string;
      /**
       * The tests taken out of test files whose reverse conflicted (see below), as pytest node id
       * prefixes (`path::name`, `path::Class` for a whole class): empty where every reverse merged.
       */
      removedTests: string[];
    }
  | {
      ok: false;
      taskId: string;
      error: string;
      /** The file whose reverse failed, where one did (not when the reference cannot be read at all). */
      path?: string;
    };

/**
 * A commit of `base`'s files with each given task's upstream reference reversed out of them (git
 * apply -R --3way on an index of its own, nothing checked out; a conflict is never resolved), as
 * a child of `base` with a fixed author, date and message: the same inputs give the same commit id
 * in any clone. The commit is kept reachable by a ref of its own so a mirror's housekeeping never
 * drops it.
 *
 * Where the whole reference does not reverse, it is reversed file by file, and a test file whose
 * reverse conflicts (later tests were written beside the reference's) has the reference's tests
 * taken out instead: the definitions its hunks add or change, found in the reference's own
 * version of the file and removed by name from the later one (`testsTakenOut`). Anything else that
 * does not reverse is a refusal, said with the task it belongs to: a source file always, and a
 * test file whose conflicting lines lie outside any definition.
 */
export async function derivedCommit(mirror: string, base: string, reversed: readonly ReversedReference[]): Promise<DerivedCommit> {
  const scratch = await mkdtemp(join(tmpdir(), "switch-swe-derived-"));
  const env = { GIT_INDEX_FILE: join(scratch, "index") };
  const run = (args: string[], input?: string) =>
    git([`--git-dir=${mirror}`, ...args], { env: { ...env, ...DERIVED_IDENTITY }, ...(input === undefined ? {} : { input }) });
  const removedTests: string[] = [];
  try {
    await run(["read-tree", base]);
    for (const { taskId, patch: whole, rolledBack } of reversed) {
      // Read only where needed (files set back, or a reverse that fails whole): a patch git applies whole is never refused for our reading of it.
      const sectionsOf = (): FileDiff[] | { error: string } => {
        try {
          return parseGitDiff(whole);
        } catch (error) {
          if (error instanceof DiffParseError) return { error: `its reference cannot be read: ${error.message}` };
          throw error;
        }
      };
      let sections: FileDiff[] | { error: string } | undefined;
      let patch = whole;
      if (rolledBack) {
        sections = sectionsOf();
        if (!Array.isArray(sections)) return { ok: false, taskId, error: sections.error };
        for (const path of rolledBack.paths) await rollBack(run, rolledBack.to, path);
        const rolled = new Set(rolledBack.paths);
        sections = sections.filter((s) => !rolled.has(s.path));
        patch = sections.map((s) => s.raw).join("");
      }
      const before = (await run(["write-tree"])).trim();
      // Three-way, from the blobs the full-index patch names: the later base's lines around the
      // change may have moved (tests appended after it), which a strict reverse would refuse.
      if (!patch || (await reverseMerged(run, patch)).ok) continue;
      await run(["read-tree", before]);
      sections ??= sectionsOf();
      if (!Array.isArray(sections)) return { ok: false, taskId, error: sections.error };
      for (const section of sections) {
        const state = (await run(["write-tree"])).trim();
        const file = await reverseMerged(run, section.raw);
        if (file.ok) continue;
        await run(["read-tree", state]);
        const taken = isTestFileName(section.path) ? await testsTakenOut(run, scratch, section) : { ok: false as const, error: "" };
        if (!taken.ok) return { ok: false, taskId, error: taken.error || file.error, path: section.path };
        removedTests.push(...taken.removed);
      }
    }
    const tree = (await run(["write-tree"])).trim();
    const rolled = reversed.filter((r) => r.rolledBack?.paths.length).map((r) => `${r.taskId}: ${r.rolledBack!.paths.join(", ")} as at ${r.rolledBack!.to}`);
    const message = `switch-swe: ${base} without the upstream reference of ${reversed.map((r) => r.taskId).join(", ")}\n${rolled.length ? `\nset back whole: ${rolled.join("; ")}\n` : ""}`;
    const commit = (await run(["commit-tree", tree, "-p", base], message)).trim();
    await run(["update-ref", `refs/switch-swe/derived/${commit}`, commit]);
    return { ok: true, commit, removedTests };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

type Run = (args: string[], input?: string) => Promise<string>;

/** Sets `path` in the index to its version at `commit`, or removes it where `commit` has none. */
async function rollBack(run: Run, commit: string, path: string): Promise<void> {
  const entry = (await run(["ls-tree", "-z", commit, "--", path])).replace(/\0$/, "");
  if (!entry) {
    await run(["update-index", "--force-remove", "--", path]);
    return;
  }
  const [mode, , blob] = entry.split("\t")[0]!.split(" ") as [string, string, string];
  await run(["update-index", "--add", "--cacheinfo", `${mode},${blob},${path}`]);
}

/** Reverses a patch into the index three ways; a conflict leaves the index unmerged and is said. */
async function reverseMerged(run: Run, patch: string): Promise<{ ok: true } | { ok: false; error: string }> {
  try {
    await run(["apply", "--cached", "-R", "--3way", "--whitespace=nowarn", "--binary", "-"], patch);
  } catch (error) {
    // git apply's own verdict on the patch is exit 1 (a conflict, a hunk that does not apply) or
    // 128 said as `error:` (a patch it cannot read). A `fatal:` (an index it cannot write, a full
    // disk) or a killed git says nothing about the pair, and select would cache it as a refusal.
    if (!(error instanceof GitError) || !(error.code === 1 || (error.code === 128 && !/^fatal:/m.test(error.stderr)))) throw error;
    const lines = error.stderr.trim().split("\n");
    const conflicted = lines.filter((l) => l.startsWith("U ")).map((l) => l.slice(2));
    if (conflicted.length) return { ok: false, error: `the reverse conflicts with later changes to ${conflicted.join(", ")}` };
    const said = lines.filter((l) => !/^(Falling back|Applied patch)/.test(l));
    return { ok: false, error: said.slice(0, 2).join(" | ") || "the reverse does not merge cleanly" };
  }
  const unmerged = (await run(["ls-files", "--unmerged"])).trim();
  if (unmerged)
    return { ok: false, error: `the reverse conflicts with later changes in ${[...new Set(unmerged.split("\n").map((l) => l.split("\t")[1]))].join(", ")}` };
  return { ok: true };
}

/**
 * The reference's tests taken out of a later version of a test file whose reverse conflicts. What
 * is taken out is read from the reference's own versions of the file (the blobs its full-index
 * diff names): every definition (test, class, fixture, helper) holding a line its hunks add or
 * change, read in the version after it, and in the version before it for a line it removes from a
 * definition that it keeps. Those definitions leave all three versions (before, after, later);
 * what else the reference changed (an import, a module constant) is then reversed three ways from
 * what is left (git merge-file), and a conflict there is a refusal. Blank and comment lines decide
 * nothing.
 */
async function testsTakenOut(run: Run, scratch: string, section: FileDiff): Promise<{ ok: true; removed: string[] } | { ok: false; error: string }> {
  const path = section.path;
  const ids = section.blobs;
  const conflict = `the reverse conflicts with later changes to ${path}`;
  if (section.binary || !ids || /^0+$/.test(ids.after) || section.status === "deleted") return { ok: false, error: conflict };
  const entry = (await run(["ls-files", "-s", "--", path])).trim();
  if (!entry) return { ok: true, removed: [] }; // the later base no longer has the file: nothing of the reference is left in it
  const [mode, blob] = entry.split(/\s+/) as [string, string];
  const blobText = async (id: string) => {
    if (/^0+$/.test(id)) return "";
    try {
      return await run(["cat-file", "blob", id]);
    } catch (error) {
      // Only git's own "no such object" (exit 128) is a fact about the repository; a killed git is no verdict.
      if (!(error instanceof GitError) || error.code !== 128) throw error;
      return undefined;
    }
  };
  const [before, after] = [await blobText(ids.before), await blobText(ids.after)];
  if (before === undefined || after === undefined) return { ok: false, error: `${conflict}, and the reference's versions of it are not in the repository` };
  const [definitionsBefore, definitionsAfter] = [pythonDefinitions(before), pythonDefinitions(after)];
  const kept = new Set(definitionsAfter.map((d) => d.qualifiedName));
  const names = new Set<string>();
  for (const hunk of hunksOf(section))
    for (const line of hunk.lines) {
      const meaningful = line.text.trim() !== "" && !line.text.trim().startsWith("#");
      if (!meaningful || line.side === "context") continue;
      const at = line.side === "added" ? definitionAt(definitionsAfter, line.newLine!) : definitionAt(definitionsBefore, line.oldLine!);
      if (at && kept.has(at.qualifiedName)) names.add(at.qualifiedName);
    }
  const laterText = await run(["cat-file", "blob", blob]);
  // Git's merge takes changes on adjacent lines for a conflict, and which blank lines go with a
  // definition decides what is adjacent: the blank lines before it are tried, then those after.
  let merged: { text: string; removed: string[] } | undefined;
  for (const blankLines of ["before", "after"] as const) {
    const later = withoutDefinitions(laterText, names, blankLines);
    const files = { later: join(scratch, "later.py"), after: join(scratch, "after.py"), before: join(scratch, "before.py") };
    await writeFile(files.later, later.text);
    await writeFile(files.after, withoutDefinitions(after, names, blankLines).text);
    await writeFile(files.before, withoutDefinitions(before, names, blankLines).text);
    try {
      merged = { text: await run(["merge-file", "-p", files.later, files.after, files.before]), removed: later.removed };
      break;
    } catch (error) {
      // merge-file exits with its number of conflicts (1 to 127); anything else (killed, a full disk) is no verdict and must not be cached as one.
      if (!(error instanceof GitError) || error.code < 1 || error.code > 127) throw error;
    }
  }
  if (!merged) return { ok: false, error: `${conflict} outside its tests` };
  // A definition found under none of its names may have been renamed or moved later: its body must not be there.
  for (const definition of definitionsAfter) {
    if (!names.has(definition.qualifiedName) || merged.removed.includes(definition.qualifiedName)) continue;
    if (merged.removed.some((r) => definition.qualifiedName.startsWith(`${r}.`))) continue;
    if (holdsBody(merged.text, after, definition))
      return { ok: false, error: `${conflict}, and the reference's ${definition.qualifiedName} is still there under another name` };
  }
  const written = (await run(["hash-object", "-w", "--stdin"], merged.text)).trim();
  await run(["update-index", "--cacheinfo", `${mode},${written},${path}`]);
  return { ok: true, removed: merged.removed.map((name) => `${path}::${name.replace(".", "::")}`) };
}

/** A session's checkout, as its specification names it: a base, and for a derived one the tasks reversed out and the commit that gives. */
export interface SessionCheckout {
  path: string;
  task_id: string;
  base_commit: string;
  derived?: DerivedCheckout;
}

/** A derived checkout as select records it: the tasks reversed out, files set back whole (where any), and the commit that gives. */
export interface DerivedCheckout {
  without: string[];
  commit: string;
  rolled_back?: { task_id: string; to: string; paths: string[] }[];
}

/** The references a derived checkout reverses, each with the files it sets back whole; a task whose upstream patch is not at hand is an error. */
export function reversalsOf(derived: DerivedCheckout, upstreamPatch: (taskId: string) => string | undefined, where: string): ReversedReference[] {
  return derived.without.map((taskId) => {
    const patch = upstreamPatch(taskId);
    if (patch === undefined) throw new Error(`${where} reverses ${taskId}'s fix, but no held-out asset of ${taskId} is at hand`);
    const rolled = derived.rolled_back?.find((r) => r.task_id === taskId);
    return { taskId, patch, ...(rolled ? { rolledBack: { to: rolled.to, paths: rolled.paths } } : {}) };
  });
}

/**
 * The commit whose files a session checkout gets, made in `mirror` where it is derived (the same
 * id everywhere, from the base and the reversed references' upstream patches, which only the
 * held-out assets hold): every runner, the session runner and an export alike, provisions
 * through this. A derived checkout that does not come out as its specification says is refused.
 */
export async function checkoutCommit(mirror: string, checkout: SessionCheckout, upstreamPatch: (taskId: string) => string | undefined): Promise<string> {
  if (!checkout.derived) return checkout.base_commit;
  const reversed = reversalsOf(checkout.derived, upstreamPatch, `${checkout.path} (${checkout.task_id})`);
  const made = await derivedCommit(mirror, checkout.base_commit, reversed);
  if (!made.ok) throw new Error(`${checkout.path} (${checkout.task_id}): ${made.taskId}'s fix does not reverse out of ${checkout.base_commit}: ${made.error}`);
  if (made.commit !== checkout.derived.commit)
    throw new Error(
      `${checkout.path} (${checkout.task_id}): made again, the derived checkout is ${made.commit}, not ${checkout.derived.commit} as the session says`,
    );
  return made.commit;
}

/** Whether `text` holds the body of a definition of `source` (its lines after the `def` line, two or more that are not blank or comments), line after line. */
function holdsBody(text: string, source: string, definition: PythonDefinition): boolean {
  const meaningful = (lines: string[]) => lines.map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
  const lines = source.split("\n").slice(definition.start - 1, definition.end);
  const header = lines.findIndex((l) => /^\s*(?:async\s+)?(?:def|class)\s/.test(l));
  const body = meaningful(lines.slice(header + 1));
  if (body.length < 2) return false;
  const haystack = meaningful(text.split("\n"));
  for (let i = 0; i + body.length <= haystack.length; i++) if (body.every((line, k) => haystack[i + k] === line)) return true;
  return false;
}
