import { type FileHunks, linesOn, readDiff } from "../../../pipeline/changes/hunks.ts";
import { stringBodies } from "./python-text.ts";

/**
 * The reference fix as the rules read it: what its diff defines, adds and removes, and the
 * functions it changes. The removed side of the diff is the base.
 */

/** What the reference fix adds and removes, read from its diff (the removed side is the base). */
export interface ReferenceFacts {
  addedText: string;
  /** The string literals of the added lines run together: a message split over implicitly concatenated literals reads whole. */
  addedStrings: string;
  removedText: string;
  /** Public functions and classes the fix defines that it does not also remove (a move). */
  newDefinitions: Set<string>;
  /** Per function, parameters its new signature has and its old one lacked. */
  newParameters: Set<string>;
  /** String literals shaped like names or options (`"man_make_section_directory"`, `"--co"`) the fix adds. */
  newLiteralNames: Set<string>;
  /** Functions the fix changes (named in its hunk headers or defined in its lines), with the file each is in. */
  changedFunctions: Map<string, string>;
}

function definitions(text: string): Set<string> {
  return new Set([...text.matchAll(/^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)/gm)].map((m) => m[1]!));
}

function signatures(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const m of text.matchAll(/^\s*(?:async\s+)?def\s+(\w+)\s*\(([^)]*)\)/gm)) {
    const params = m[2]!
      .split(",")
      .map((p) => p.trim().split(/[:=]/)[0]!.replace(/^\*+/, "").trim())
      .filter((p) => p && p !== "self" && p !== "cls");
    out.set(m[1]!, new Set([...(out.get(m[1]!) ?? []), ...params]));
  }
  return out;
}

/** Functions the fix changes: named in a hunk's header or defined on its added or context lines, each with its file. */
function changedFunctionsOf(files: FileHunks[]): Map<string, string> {
  const changed = new Map<string, string>();
  const def = /^\s*(?:async\s+)?def\s+(\w+)/;
  for (const file of files)
    for (const hunk of file.hunks) {
      const named = [def.exec(hunk.scope)?.[1], ...hunk.lines.filter((l) => l.side !== "removed").map((l) => def.exec(l.text)?.[1])];
      for (const fn of named) if (fn && !fn.startsWith("__") && !fn.startsWith("test") && !changed.has(fn)) changed.set(fn, file.path);
    }
  return changed;
}

export function referenceFacts(patch: string | FileHunks[]): ReferenceFacts {
  const files = typeof patch === "string" ? readDiff(patch) : patch;
  const addedText = linesOn(files, "added").join("\n");
  const removedText = linesOn(files, "removed").join("\n");
  const removedDefs = definitions(removedText);
  const newDefinitions = new Set([...definitions(addedText)].filter((d) => !removedDefs.has(d) && !d.startsWith("_")));
  const before = signatures(removedText);
  const newParameters = new Set<string>();
  for (const [fn, params] of signatures(addedText)) {
    const old = before.get(fn);
    // A function that is new as a whole is a new definition; its parameters come with it.
    if (!old) continue;
    for (const p of params) if (!old.has(p) && !p.startsWith("_") && p.length > 1) newParameters.add(p);
  }
  const literals = (text: string) => new Set(stringBodies(text));
  const oldLiterals = literals(removedText);
  const newLiteralNames = new Set(
    [...literals(addedText)].filter((s) => ((/^[A-Za-z_][\w-]{2,}$/.test(s) && !s.startsWith("__")) || /^--?[A-Za-z][\w-]*$/.test(s)) && !oldLiterals.has(s)),
  );
  const changedFunctions = changedFunctionsOf(files);
  const addedStrings = stringBodies(addedText).join("");
  return { addedText, addedStrings, removedText, newDefinitions, newParameters, newLiteralNames, changedFunctions };
}

/** Whether the requests' text mentions `name` as a word (an option's dashes count as part of it). */
export function requestsName(text: string, name: string): boolean {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(?<![\\w-])${escaped}(?![\\w-])`).test(text);
}
