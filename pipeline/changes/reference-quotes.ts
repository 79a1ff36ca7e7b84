/**
 * Code in a request that reproduces the task's reference implementation (SPEC §2.4: reference-code
 * excerpts are removed from upstream text; §2.9: a session quoting them is refused). Lines are
 * compared as code, not as text: comments, spaces and a trailing `;` do not count, so
 * `if len(x)==1:  # modified` quotes `if len(x) == 1:`. Lines too short to say anything of the fix
 * (`else:`, `return x`, `break`) are never counted.
 */
import { linesOn, readDiff } from "./hunks.ts";

/** A code line reduced to what the fix is made of: no comment, no whitespace, no trailing semicolon. */
export function normalizeCodeLine(line: string): string {
  let out = line.replace(/^\s*[+-](?=\s)/, "");
  // A comment starts at a # outside a string literal (good enough for the quoted lines of a request).
  let quote: string | undefined;
  for (let i = 0; i < out.length; i++) {
    const c = out[i]!;
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "#") {
      out = out.slice(0, i);
      break;
    }
  }
  return out.replace(/\s+/g, "").replace(/;$/, "");
}

/** Shorter normalized lines say nothing of a particular fix. */
const MEANINGFUL = 12;

/** The reference implementation's added lines, normalized, that are long enough to identify it. */
export function referenceLines(implementationPatch: string): Set<string> {
  return new Set(
    linesOn(readDiff(implementationPatch), "added")
      .map(normalizeCodeLine)
      .filter((l) => l.length >= MEANINGFUL),
  );
}

/** The distinct reference lines a text reproduces, in the order the text has them. */
export function quotedReferenceLines(text: string, reference: ReadonlySet<string>): string[] {
  const found: string[] = [];
  for (const line of text.split("\n")) {
    const code = normalizeCodeLine(line);
    if (code.length >= MEANINGFUL && reference.has(code) && !found.includes(code)) found.push(code);
  }
  return found;
}

/** What was taken out of a request: a fenced block or a run of lines, and how many reference lines it reproduced. */
export interface RemovedExcerpt {
  kind: "code_block" | "lines";
  reference_lines: number;
}

export const EXCERPT_REMOVED = "(A code excerpt that reproduces the fix was removed here.)";

/**
 * A request without the code that reproduces the reference: every fenced block holding two
 * reference lines or more, and every run of unfenced lines of which two or more are reference
 * lines (a diff pasted without a fence, indented code), each replaced by one neutral sentence.
 * Prose, public names, messages and examples stay.
 */
export function removeReferenceExcerpts(text: string, reference: ReadonlySet<string>): { text: string; removed: RemovedExcerpt[] } {
  const removed: RemovedExcerpt[] = [];
  const fenced = text.replace(/```[^\n]*\n[\s\S]*?```/g, (block) => {
    const quoted = quotedReferenceLines(block, reference).length;
    if (quoted < 2) return block;
    removed.push({ kind: "code_block", reference_lines: quoted });
    return EXCERPT_REMOVED;
  });
  // Unfenced: a run of consecutive lines, each a reference line or blank, holding two or more.
  const lines = fenced.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length;) {
    let j = i;
    const run: string[] = [];
    while (j < lines.length && (reference.has(normalizeCodeLine(lines[j]!)) || (run.length > 0 && !lines[j]!.trim()))) run.push(lines[j++]!);
    const quoted = quotedReferenceLines(run.join("\n"), reference).length;
    if (quoted >= 2) {
      removed.push({ kind: "lines", reference_lines: quoted });
      out.push(EXCERPT_REMOVED);
      i = j;
    } else out.push(lines[i++]!);
  }
  return { text: out.join("\n"), removed };
}
