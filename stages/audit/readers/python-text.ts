import type { SourceLine } from "./source-tree.ts";

/**
 * Reading Python source as text, for the audit's rules: string literals, whole words, text
 * compared without its spacing or quotes, and the line that last gave a name its value. One
 * reading for every rule, so that two rules never disagree on what a test's literal or variable is.
 */

/**
 * A string prefix Python accepts (`r`, `b`, `u`, `f` and `rb`, `br`, `fr`, `rf` in either case):
 * a literal read without its prefix pairs its closing quote with the next literal's opening one.
 */
export const STRING_PREFIX = String.raw`(?:[rR][bBfF]?|[bBfF][rR]?|[uU])?`;

/** A one-line string literal with its prefix: the quote is group 1, the body group 2. */
export const STRING_LITERAL = new RegExp(String.raw`(?<![\w])${STRING_PREFIX}(["'])((?:\\.|(?!\1).)*)\1`, "g");
const ONE_STRING_LITERAL = new RegExp(STRING_LITERAL.source);

/** The bodies of the one-line string literals in `text`, in order. */
export function stringBodies(text: string): string[] {
  return [...text.matchAll(STRING_LITERAL)].map((m) => m[2]!);
}

/** The first one-line string literal in `text`, if any. */
export function firstString(text: string): RegExpExecArray | null {
  return ONE_STRING_LITERAL.exec(text);
}

/** `text` as a whole word: not part of a longer name (`text` is matched literally). */
export function wordIn(text: string): RegExp {
  return new RegExp(`(?<![\\w])${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w])`);
}

/** Without whitespace or quotes, so `{'a': True}` in a request reads as `{"a":True}` in a test. */
export const squashed = (text: string): string => text.replace(/[\s'"`]+/g, "");

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
  const bound = wordIn(name);
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

/** Text with its spacing made single and its letters lower case: a message compared as a reader reads it. */
export const normalSpacing = (text: string): string => text.replace(/\s+/g, " ").trim().toLowerCase();

/** A regular expression's literal text (`match="Invalid \\(x\\)"` checks "Invalid (x)"). */
export const regexText = (text: string): string => text.replace(/\\(.)/g, "$1");
