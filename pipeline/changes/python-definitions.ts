/**
 * The definitions of a Python file and the lines they span, read without a Python parser (the
 * answer rule's derivations run on the host, the same in every runner): top-level `def`s and
 * `class`es, and the `def`s directly in a top-level class's body. Strings (triple-quoted ones over
 * several lines too), comments, brackets and backslash continuations are followed, so a line
 * inside a string or a call spread over lines never starts or ends a definition.
 */

export interface PythonDefinition {
  /** `name`, or `Class.name` for a method. */
  qualifiedName: string;
  kind: "def" | "class";
  /** 1-based, inclusive: from its first decorator to its body's last line (trailing blank lines and comments left out). */
  start: number;
  end: number;
}

interface LineFacts {
  indent: number;
  /** The line starts a logical line: not inside brackets, a string or a continuation. */
  logicalStart: boolean;
  /** Whitespace or a comment only (at a logical start). */
  empty: boolean;
}

function scanLines(lines: readonly string[]): LineFacts[] {
  let depth = 0;
  let openTriple: string | null = null;
  let continued = false;
  return lines.map((line) => {
    const logicalStart = depth === 0 && openTriple === null && !continued;
    const trimmed = line.trim();
    const facts: LineFacts = {
      indent: line.length - line.trimStart().length,
      logicalStart,
      empty: logicalStart && (trimmed === "" || trimmed.startsWith("#")),
    };
    let i = 0;
    let comment = false;
    while (i < line.length) {
      if (openTriple !== null) {
        if (line[i] === "\\") i += 2;
        else if (line.startsWith(openTriple, i)) {
          i += 3;
          openTriple = null;
        } else i++;
        continue;
      }
      const c = line[i]!;
      if (c === "#") {
        comment = true;
        break;
      }
      if (c === '"' || c === "'") {
        if (line.startsWith(c.repeat(3), i)) {
          openTriple = c.repeat(3);
          i += 3;
          continue;
        }
        for (i++; i < line.length && line[i] !== c; i++) if (line[i] === "\\") i++;
        i++;
        continue;
      }
      if (c === "(" || c === "[" || c === "{") depth++;
      else if (c === ")" || c === "]" || c === "}") depth = Math.max(0, depth - 1);
      i++;
    }
    continued = openTriple === null && !comment && line.endsWith("\\");
    return facts;
  });
}

const DEFINITION = /^(?:async\s+)?(def|class)\s+(\w+)/;

/** The file's top-level definitions and its top-level classes' methods, in the order they start. */
export function pythonDefinitions(text: string): PythonDefinition[] {
  const lines = text.split("\n");
  const facts = scanLines(lines);
  const found: PythonDefinition[] = [];
  const open: { definition: PythonDefinition; indent: number }[] = [];
  let topClass: { name: string; bodyIndent: number | null } | null = null;
  let decoratorStart: { line: number; indent: number } | null = null;

  // A definition ends at its last line before `next` that is part of it: not blank, and not a
  // comment at or left of its own indentation (that one introduces what follows).
  const lastLineBefore = (next: number, indent: number): number => {
    for (let n = next - 1; n >= 0; n--) {
      const f = facts[n]!;
      if (lines[n]!.trim() === "") continue;
      if (f.empty && f.indent <= indent) continue;
      return n + 1;
    }
    return next;
  };
  const closeFrom = (next: number, indent: number) => {
    while (open.length && open[open.length - 1]!.indent >= indent) {
      const { definition, indent: own } = open.pop()!;
      definition.end = Math.max(definition.start, lastLineBefore(next, own));
    }
  };

  for (let n = 0; n < lines.length; n++) {
    const f = facts[n]!;
    if (!f.logicalStart || f.empty) continue;
    closeFrom(n, f.indent);
    const statement = lines[n]!.trimStart();
    if (f.indent === 0) topClass = null;
    else if (topClass && topClass.bodyIndent === null) topClass.bodyIndent = f.indent;
    if (statement.startsWith("@")) {
      if (!decoratorStart || decoratorStart.indent !== f.indent) decoratorStart = { line: n, indent: f.indent };
      continue;
    }
    const match = DEFINITION.exec(statement);
    const start = decoratorStart && decoratorStart.indent === f.indent ? decoratorStart.line : n;
    decoratorStart = null;
    if (!match) continue;
    const [, kind, name] = match as unknown as [string, "def" | "class", string];
    let qualifiedName: string | null = null;
    if (f.indent === 0) qualifiedName = name;
    else if (kind === "def" && topClass && topClass.bodyIndent === f.indent && open.length === 1) qualifiedName = `${topClass.name}.${name}`;
    if (qualifiedName === null) continue;
    const definition: PythonDefinition = { qualifiedName, kind, start: start + 1, end: n + 1 };
    found.push(definition);
    open.push({ definition, indent: f.indent });
    if (f.indent === 0 && kind === "class") topClass = { name, bodyIndent: null };
  }
  closeFrom(lines.length, 0);
  return found;
}

/** The innermost definition a 1-based line lies in (a method before its class), if any. */
export function definitionAt(definitions: readonly PythonDefinition[], line: number): PythonDefinition | undefined {
  let innermost: PythonDefinition | undefined;
  for (const d of definitions) if (d.start <= line && line <= d.end && (!innermost || d.start >= innermost.start)) innermost = d;
  return innermost;
}

/**
 * The text without the named definitions (a class with its methods), each with the blank lines
 * before it (or after it: `blankLines`; after it where none are before), so the file keeps its
 * shape; a name the file does not define is passed over.
 */
export function withoutDefinitions(
  text: string,
  qualifiedNames: ReadonlySet<string>,
  blankLines: "before" | "after" = "before",
): { text: string; removed: string[] } {
  const lines = text.split("\n");
  const definitions = pythonDefinitions(text);
  const drop = new Array<boolean>(lines.length).fill(false);
  const removed: string[] = [];
  for (const d of definitions) {
    if (!qualifiedNames.has(d.qualifiedName)) continue;
    if (removed.some((r) => d.qualifiedName.startsWith(`${r}.`))) continue; // its class goes already
    removed.push(d.qualifiedName);
    let [first, last] = [d.start - 1, d.end];
    if (blankLines === "before") while (first > 0 && lines[first - 1]!.trim() === "") first--;
    // At the top of the file (or right under a line), the blank lines after it go instead.
    if (first === d.start - 1) while (last < lines.length && lines[last]!.trim() === "" && last + 1 < lines.length) last++;
    for (let n = first; n < last; n++) drop[n] = true;
  }
  return { text: lines.filter((_, n) => !drop[n]).join("\n"), removed };
}
