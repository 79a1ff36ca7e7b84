/**
 * A hunk's header, `@@ -OLD[,N] +NEW[,M] @@ SECTION`: where the hunk starts on each side, how many
 * lines it spans there (1 when git leaves the count out), and the section heading git writes after
 * it (the enclosing `def` or `class` line, or nothing). The one reader of hunk headers: the diff
 * parser and every reader of hunks ask it.
 */
export interface HunkHeader {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  section: string;
}

// The section runs to the end of the line, a CR of a CRLF file included (`.` would stop before it).
const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?([\s\S]*)$/;

/** The header a line holds, or undefined when it is no hunk header. */
export function readHunkHeader(line: string): HunkHeader | undefined {
  const m = HUNK_HEADER.exec(line);
  if (!m) return undefined;
  const count = (text: string | undefined) => (text === undefined ? 1 : parseInt(text, 10));
  return { oldStart: parseInt(m[1]!, 10), oldLines: count(m[2]), newStart: parseInt(m[3]!, 10), newLines: count(m[4]), section: m[5]! };
}
