import { fileOf, type FileHunks, type HunkLine, readDiff } from "../../../pipeline/changes/hunks.ts";
import { STRING_LITERAL, stringBodies } from "./python-text.ts";

/**
 * What a test checks, as tokens that a request must mention for the test to be justified by it:
 * the public names it calls (its subject) and the literals, keywords, exceptions and attributes
 * it checks (its behaviour). Test scaffolding (pytest, importlib, fixtures) is not evidence.
 */
export interface TestEvidence {
  subject: string[];
  behaviour: string[];
}

const SCAFFOLDING = new Set([
  "assert",
  "pytest",
  "raises",
  "match",
  "approx",
  "importlib",
  "import_module",
  "pathlib",
  "Path",
  "__file__",
  "parent",
  "read_bytes",
  "read_text",
  "write_text",
  "exists",
  "with_name",
  "module",
  "random",
  "int",
  "str",
  "len",
  "set",
  "list",
  "tuple",
  "dict",
  "isinstance",
  "True",
  "False",
  "None",
  "in",
  "not",
  "and",
  "or",
  "for",
  "v",
  "with",
  "def",
  "return",
  "marker",
  "runs",
  "self",
  "monkeypatch",
  "tmp_path",
  "capsys",
  "request",
]);

/** The lines a test patch's hunks show of `file`, in order: its section of the patch, hunk headers aside. */
function linesOfFile(testPatch: string | FileHunks[], file: string): HunkLine[] | undefined {
  const files = typeof testPatch === "string" ? readDiff(testPatch) : testPatch;
  return fileOf(files, file)?.hunks.flatMap((h) => h.lines);
}

/**
 * One test function as the test patch leaves it (context and added lines, from its `def` to the
 * next top-level statement), and the lines the patch removed from it.
 */
export function testSource(testPatch: string | FileHunks[], file: string, name: string): { source: string; added: string; removed: string } | undefined {
  const body = linesOfFile(testPatch, file);
  if (!body) return undefined;
  const def = new RegExp(`^\\s*(async\\s+)?def ${name}\\(`);
  const start = body.findIndex((l) => l.side !== "removed" && def.test(l.text));
  if (start < 0) return undefined;
  const source = [body[start]!.text];
  const added: string[] = [];
  const removed: string[] = [];
  for (const { side, text } of body.slice(start + 1)) {
    if (side !== "removed" && /^\S/.test(text)) break;
    (side === "removed" ? removed : source).push(text);
    if (side === "added") added.push(text);
  }
  return { source: source.join("\n"), added: added.join("\n"), removed: removed.join("\n") };
}

/**
 * The lines the test patch removed from one test function, its `def` read in the patch's lines or
 * in a hunk header (`@@ -19,7 +19,8 @@ def test_var():`), where `testSource` cannot see it. A `def`
 * nested deeper than the test's stays inside it; a line at the test's own indentation or less leaves it.
 * Unlike `testSource`, a test the patch rewrites whole (its `def` removed and added again) has its
 * old body as removed lines; linkage keeps `testSource`'s reading, which judges such a test whole
 * (reading it this way there made django-11848's rewritten test unlinked).
 */
export function removedFromTest(testPatch: string | FileHunks[], file: string, name: string): string[] {
  const files = typeof testPatch === "string" ? readDiff(testPatch) : testPatch;
  const hunks = fileOf(files, file)?.hunks ?? [];
  const removed: string[] = [];
  let inside = false;
  // The indentation of the test's `def`; unknown (null) when a hunk header named it, as git strips it there.
  let indent: number | null = null;
  for (const hunk of hunks) {
    const header = /^\s*(?:async\s+)?def\s+(\w+)/.exec(hunk.scope);
    // A header names the function its hunk starts in; a hunk without one starts where the last left off.
    if (header) {
      inside = header[1] === name;
      indent = null;
    }
    for (const { side, text } of hunk.lines) {
      const trimmed = text.trimStart();
      if (!trimmed || trimmed.startsWith("#") || trimmed.startsWith("@")) continue;
      const own = text.length - trimmed.length;
      const def = /^(?:async\s+)?def\s+(\w+)/.exec(trimmed);
      if (def && (!inside || indent === null || own <= indent)) {
        inside = def[1] === name;
        indent = own;
        continue;
      }
      if (inside && (indent === null ? own === 0 || trimmed.startsWith("class ") : own <= indent)) inside = false;
      if (inside && side === "removed") removed.push(text);
    }
  }
  return removed;
}

function normaliseNumber(text: string): string {
  return String(Number(text));
}

/**
 * Evidence for what the patch changed in a test: the tokens of the lines it added, less those of
 * the lines it removed (a renamed module's tests check only the new path). A new test, or one
 * whose change adds nothing new, is judged on its whole source.
 */
export function changedEvidence(test: { source: string; added: string; removed: string }, testName: string): TestEvidence {
  const whole = evidenceOf(test.source, testName);
  if (!test.removed.trim()) return whole;
  const header = `def ${testName}():\n`;
  const before = evidenceOf(header + test.removed, testName);
  const now = evidenceOf(header + test.added, testName);
  const old = new Set([...before.subject, ...before.behaviour]);
  const subject = now.subject.filter((t) => !old.has(t));
  const behaviour = now.behaviour.filter((t) => !old.has(t));
  return subject.length || behaviour.length ? { subject, behaviour } : whole;
}

export function evidenceOf(source: string, testName: string): TestEvidence {
  const params = new Set(
    (/def \w+\(([^)]*)\)/.exec(source)?.[1] ?? "")
      .split(",")
      .map((p) => p.trim().split(/[:=]/)[0]!)
      .filter(Boolean),
  );
  const body = source.split("\n").slice(1).join("\n");
  const strings = stringBodies(body);
  const withoutStrings = body.replace(STRING_LITERAL, " ");
  const called = [...withoutStrings.matchAll(/\.?([A-Za-z_][A-Za-z0-9_]*)\s*\(/g)].map((m) => m[1]!);
  const keywords = [...withoutStrings.matchAll(/\b([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)/g)].map((m) => m[1]!);
  const attributes = [...withoutStrings.matchAll(/\.([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\()/g)].map((m) => m[1]!);
  const exceptions = [...withoutStrings.matchAll(/\b([A-Z][A-Za-z]*(?:Error|Exception|Warning))\b/g)].map((m) => m[1]!);
  const numbers = [...withoutStrings.matchAll(/(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])/g)].map((m) => normaliseNumber(m[1]!));
  const keep = (t: string) => t.length > 1 && !SCAFFOLDING.has(t) && !params.has(t) && t !== testName;
  // A string that is a name (an identifier or a dotted module path) names the subject too.
  const names = strings.filter((s) => /^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*$/.test(s));
  const subject = [...new Set([...called.filter((c) => !exceptions.includes(c) && !/^[A-Z]/.test(c)), ...names].filter(keep))].sort();
  // 0, 1 and 2 are too common in tests to say what a request asked for.
  const distinctiveNumbers = numbers.filter((n) => !["0", "1", "2"].includes(n));
  const behaviour = [
    ...new Set([
      ...[...strings.filter((s) => s.length > 1 && !names.includes(s)), ...keywords, ...attributes.filter((a) => !subject.includes(a)), ...exceptions].filter(
        keep,
      ),
      ...distinctiveNumbers,
    ]),
  ].sort();
  return { subject, behaviour };
}

/** Whether `text` mentions `token`: as a word for names, as a number for numbers, verbatim otherwise. */
export function mentions(text: string, token: string): boolean {
  if (/^\d+(\.\d+)?$/.test(token)) return [...text.matchAll(/(?<![\w.])(\d+(?:\.\d+)?)(?![\w])/g)].some((m) => normaliseNumber(m[1]!) === token);
  if (/^\w+$/.test(token)) return new RegExp(`(?<![\\w])${token}(?![\\w])`).test(text);
  return text.includes(token);
}
