import type { AuditSignals } from "../../../pipeline/schemas/audit.ts";
import { STRING_LITERAL, stringBodies, wordIn } from "../readers/python-text.ts";
import type { TaskView } from "../rules/types.ts";
import { type FileHunks, linesOn } from "../../../pipeline/changes/hunks.ts";

/**
 * General signals of a task, measured the same way on every record and written from no record in
 * particular: how much the reference fix adds, how open the requests leave the outcome, how much
 * of the tests' own code there is, what the tests take from the reference fix that the requests
 * never say, how much of the test patch's new vocabulary is the fix's, and how many of the deciding
 * tests the patch writes. The risk model weighs them
 * beside the rules' findings.
 */

/** Python's words and the names tests use for their own scaffolding: no evidence of what a fix does. */
const SCAFFOLDING = new Set(
  (
    "self cls True False None and or not in is if else elif for while def class return import from as with assert " +
    "raises lambda yield pass break continue try except finally raise global nonlocal del print len str int float list dict " +
    "set tuple range isinstance type object super test tests pytest assertEqual assertTrue assertFalse assertIn " +
    "assertRaises assertIs assertIsNone"
  ).split(" "),
);

/** Code without its string literals and comments. */
const codeOf = (text: string) => text.replace(STRING_LITERAL, " ").replace(/#.*$/gm, "");

/** Identifiers of four characters or more in code, scaffolding aside. */
function identifiers(text: string): Set<string> {
  return new Set((codeOf(text).match(/[A-Za-z_]\w{3,}/g) ?? []).filter((w) => !SCAFFOLDING.has(w)));
}

/** Whether the requests name `word`, in any case. */
const named = (requests: string, word: string) => wordIn(word.toLowerCase()).test(requests);

/**
 * What the tests' added lines take from the reference fix that nobody could know from the
 * requests: identifiers and string literals the fix adds, that neither side of either patch had
 * before (removed or context lines), no request names, and the base's code does not hold.
 */
async function leaked(view: TaskView, testLines: string, reference: FileHunks[]): Promise<number> {
  const fix = linesOn(reference, "added").join("\n");
  const before = [...linesOn(reference, "removed"), ...linesOn(reference, "context")].join("\n");
  const testBefore = [...linesOn(view.testDiff, "removed"), ...linesOn(view.testDiff, "context")].join("\n");
  const requests = view.requestText.toLowerCase();
  const fixNames = identifiers(fix);
  const known = new Set([...identifiers(before), ...identifiers(testBefore)]);
  let count = 0;
  for (const name of identifiers(testLines)) {
    if (!fixNames.has(name) || known.has(name) || named(requests, name)) continue;
    if (await view.tree.baseHas(name, true)) continue;
    count++;
  }
  for (const literal of new Set(stringBodies(testLines))) {
    if (literal.length < 4 || !fix.includes(literal) || before.includes(literal) || testBefore.includes(literal) || view.requestText.includes(literal))
      continue;
    if (await view.tree.baseHas(literal, false)) continue;
    count++;
  }
  return count;
}

const rounded = (x: number) => Math.round(x * 10000) / 10000;

/** Names of four characters or more anywhere in lines, string literals' and comments' words included, scaffolding aside. */
function namesIn(lines: string[]): Set<string> {
  return new Set((lines.join("\n").match(/[A-Za-z_]\w{3,}/g) ?? []).filter((w) => !SCAFFOLDING.has(w)));
}

/** The names a diff's added lines bring that neither its removed nor its context lines hold. */
function namesBrought(patch: FileHunks[]): Set<string> {
  const before = namesIn([...linesOn(patch, "removed"), ...linesOn(patch, "context")]);
  return new Set([...namesIn(linesOn(patch, "added"))].filter((w) => !before.has(w)));
}

/**
 * How much the tests' new vocabulary is the fix's new vocabulary, beyond what the requests say:
 * the names the test patch brings and the names the reference fix brings, each without the names
 * the requests contain, overlapping as Ochiai's coefficient (shared / √(tests' × fix's)). Tests
 * that speak the fix's words the issue never used check the fix's choices, not the request; the
 * geometric mean of the two sizes keeps a long test patch from overlapping by chance alone (a raw
 * count of shared names fired on the records whose tests bring many names, at every score).
 */
function sharedNames(testPatch: FileHunks[], reference: FileHunks[], requests: string): number {
  const lower = requests.toLowerCase();
  const unsaid = (names: Set<string>) => new Set([...names].filter((w) => !lower.includes(w.toLowerCase())));
  const tests = unsaid(namesBrought(testPatch));
  const fix = unsaid(namesBrought(reference));
  const shared = [...tests].filter((w) => fix.has(w)).length;
  return shared / Math.sqrt(Math.max(1, tests.size) * Math.max(1, fix.size));
}

/** The task's general signals, from its read tests, its requests and its reference fix. */
export async function taskSignals(view: TaskView): Promise<AuditSignals> {
  const reference = view.referenceDiff;
  const read = view.tests.flatMap((t) => (t.located ? [t.located] : []));
  const testLines = read.flatMap((at) => at.lines.filter((l) => l.added).map((l) => l.text)).join("\n");
  const calls = new Set([...codeOf(testLines).matchAll(/\.?([A-Za-z_]\w{2,})\s*\(/g)].map((m) => m[1]!).filter((w) => !SCAFFOLDING.has(w)));
  return {
    reference_lines: reference ? linesOn(reference, "added").length : 0,
    open_sentences: view.open.length,
    test_calls: calls.size,
    leaked_names: reference ? await leaked(view, testLines, reference) : 0,
    tests_added: read.length ? rounded(read.filter((at) => at.defLine.added).length / read.length) : 0,
    shared_names: reference ? rounded(sharedNames(view.testDiff, reference, view.requestText)) : 0,
  };
}
