import type { SourceLine, SourceTree } from "./source-tree.ts";
import { parseTestId } from "../../../pipeline/test-results/test-ids.ts";

/** A test's source as read: its decorators (parametrized cases) and its body. */
export interface LocatedTest {
  file: string;
  /** The test's own lines, decorators included. */
  lines: SourceLine[];
  /** Its `def` line, among `lines`. */
  defLine: SourceLine;
  origin: SourceTree["kind"];
  /** The function's name (a docstring-named test's is read from its `def`). */
  name: string;
}

const indentOf = (text: string) => text.length - text.trimStart().length;

function defPattern(name: string): RegExp {
  return new RegExp(`^(\\s*)(async\\s+)?def ${name}\\(`);
}

/** The class a line at `index` sits in (nearest less-indented `class` line above), if any. */
function enclosingClass(lines: SourceLine[], index: number): string | undefined {
  let limit = indentOf(lines[index]!.text);
  for (let i = index - 1; i >= 0; i--) {
    const text = lines[i]!.text;
    if (!text.trim()) continue;
    const indent = indentOf(text);
    if (indent >= limit) continue;
    const cls = /^\s*class (\w+)/.exec(text);
    if (cls) return cls[1];
    limit = indent;
    if (indent === 0) return undefined;
  }
  return undefined;
}

/**
 * A comment out at the body's left (sympy-18057's `# check return value` at column 0 inside
 * `test_var`) belongs to the body when the next line of code is indented into it.
 */
function commentInBody(lines: SourceLine[], index: number, indent: number): boolean {
  if (!lines[index]!.text.trimStart().startsWith("#")) return false;
  for (let i = index + 1; i < lines.length; i++) {
    const text = lines[i]!.text;
    if (!text.trim() || text.trimStart().startsWith("#")) continue;
    return indentOf(text) > indent;
  }
  return false;
}

/** The definition at `index` with its decorators above and its body below (by indentation). */
function definitionAt(lines: SourceLine[], index: number): SourceLine[] {
  const indent = indentOf(lines[index]!.text);
  let start = index;
  for (let i = index - 1; i >= 0; i--) {
    const text = lines[i]!.text;
    const trimmed = text.trimStart();
    if (!trimmed) continue;
    const ind = indentOf(text);
    if (ind > indent || (ind === indent && (trimmed.startsWith("@") || /^[)\]}]/.test(trimmed)))) {
      if (ind === indent && trimmed.startsWith("@")) start = i;
      continue;
    }
    break;
  }
  // The body runs while lines are indented deeper, or continue a statement: after a backslash,
  // inside a triple-quoted string or inside open brackets (sympy's expected drawings start at
  // column 0: `s = \` then `u("""\`).
  let end = index + 1;
  let triple: string | undefined;
  let depth = 0;
  let continued = false;
  while (end < lines.length) {
    const text = lines[end]!.text;
    const inside = continued || triple !== undefined || depth > 0;
    if (!inside && text.trim() && indentOf(text) <= indent && !commentInBody(lines, end, indent)) break;
    for (const m of text.matchAll(/"""|'''|(["'])(?:\\.|(?!\1).)*\1|[[({]|[\])}]|#.*$/g)) {
      const token = m[0];
      if (triple !== undefined) {
        if (token === triple) triple = undefined;
      } else if (token === '"""' || token === "'''") triple = token;
      else if (/^[[({]$/.test(token)) depth++;
      else if (/^[\])}]$/.test(token)) depth = Math.max(0, depth - 1);
    }
    continued = triple === undefined && /\\$/.test(text);
    end++;
  }
  // A gap between hunks (a patch's lines are not contiguous) ends the definition too.
  const out: SourceLine[] = [];
  for (let i = start; i < end; i++) {
    if (i > index && lines[i]!.n !== lines[i - 1]!.n + 1) break;
    out.push(lines[i]!);
  }
  return out;
}

function findDefinition(lines: SourceLine[], name: string, classes: string[]): number | undefined {
  const def = defPattern(name);
  const hits = lines.flatMap((l, i) => (def.test(l.text) ? [i] : []));
  const wanted = classes.at(-1);
  if (wanted) {
    const inClass = hits.find((i) => enclosingClass(lines, i) === wanted);
    if (inClass !== undefined) return inClass;
  }
  return hits[0];
}

/**
 * Django's runner names a test with a docstring by the docstring's first line: the test is the
 * `def` right above the line that starts with it.
 */
async function locateByDocstring(text: string, tree: SourceTree): Promise<LocatedTest | undefined> {
  const wanted = text.trim();
  if (wanted.length < 12) return undefined;
  for (const file of await tree.filesContaining(wanted)) {
    const lines = await tree.lines(file);
    if (!lines) continue;
    // The docstring opens on that line (`"""Text…`) or alone on the line above it.
    const opens = (text: string) => /^\s*[rbu]?("""|'''|"|')/i.test(text);
    const opensAlone = (i: number) => i > 0 && /^\s*[rbu]?("""|''')\s*$/i.test(lines[i - 1]!.text);
    const at = lines.findIndex((l, i) => l.text.includes(wanted) && (opens(l.text) || opensAlone(i)));
    if (at < 0) continue;
    let def = at - 1;
    while (def >= 0 && !/^\s*(async\s+)?def \w+\(/.test(lines[def]!.text) && at - def < 7) def--;
    if (def < 0 || !/^\s*(async\s+)?def \w+\(/.test(lines[def]!.text)) continue;
    const own = definitionAt(lines, def);
    return { file, lines: own, defLine: lines[def]!, origin: tree.kind, name: /def (\w+)\(/.exec(lines[def]!.text)![1]! };
  }
  return undefined;
}

/** Reads a fail-to-pass test's source from the tree; undefined when its id names nothing the tree holds. */
export async function locateTest(id: string, tree: SourceTree): Promise<LocatedTest | undefined> {
  const location = parseTestId(id);
  if (!location) return locateByDocstring(id, tree);
  const files = location.file ? [location.file] : location.candidateFiles.length ? location.candidateFiles : await tree.filesDefining(location.name);
  for (const file of files) {
    const lines = await tree.lines(file);
    if (!lines) continue;
    const index = findDefinition(lines, location.name, location.classes);
    if (index === undefined) continue;
    const own = definitionAt(lines, index);
    return { file, lines: own, defLine: lines[index]!, origin: tree.kind, name: location.name };
  }
  return undefined;
}
