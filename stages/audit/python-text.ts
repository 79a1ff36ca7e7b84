import type { SourceLine } from "./source-tree.ts";

/**
 * Reading Python source as text, for the audit's rules: string literals and the line that last
 * gave a name its value. One reading for every rule, so that two rules never disagree on what a
 * test's literal or variable is.
 */

/** A one-line string literal with its prefix (`r"…"`, `b'…'`, `u"…"`): the quote is group 1, the body group 2. */
export const STRING_LITERAL = /(?<![\w])[rbuRBU]?(["'])((?:\\.|(?!\1).)*)\1/g;

/** The bodies of the one-line string literals in `text`, in order. */
export function stringBodies(text: string): string[] {
  return [...text.matchAll(STRING_LITERAL)].map((m) => m[2]!);
}

/** The first one-line string literal in `text`, if any. */
export function firstString(text: string): RegExpExecArray | null {
  return new RegExp(STRING_LITERAL.source).exec(text);
}

/** What last gave a name its value above a line: an assignment's right side, or the iterable of a `for` that binds it. */
export interface Binding {
  /** Index of the binding line among the lines searched. */
  at: number;
  kind: "assignment" | "loop";
  /** The assigned expression or the loop's iterable, as written on that line. */
  value: string;
  /** Where on the line the value starts. */
  column: number;
}

/**
 * The nearest line above `index` that binds `name`: `name = …` (not `==`), or, when `loops` is
 * set, `for … name … in …:`. Without `loops` a loop header does not stop the search.
 */
export function nearestBinding(lines: SourceLine[], index: number, name: string, loops: boolean): Binding | undefined {
  const assignment = new RegExp(`^\\s*${name}\\s*=(?!=)\\s*(?=\\S)`);
  const bound = new RegExp(`(?<![\\w])${name}(?![\\w])`);
  for (let i = index - 1; i >= 0; i--) {
    const text = lines[i]!.text;
    const assign = assignment.exec(text);
    if (assign) return { at: i, kind: "assignment", value: text.slice(assign[0].length), column: assign[0].length };
    if (!loops) continue;
    const loop = /^(\s*for\s+(.+?)\s+in\s+)(.+):\s*$/.exec(text);
    if (loop && bound.test(loop[2]!)) return { at: i, kind: "loop", value: loop[3]!, column: loop[1]!.length };
  }
  return undefined;
}
