import { parseGitDiff, type FileDiff } from "./diff.ts";

/** One line of a hunk: context (both sides), added (the new side) or removed (the old side). */
export interface HunkLine {
  side: "context" | "added" | "removed";
  text: string;
}

/** One hunk of a file's diff, with its place on each side (1-based first lines, as the header gives them). */
export interface Hunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  /** What git writes after the second `@@`: the enclosing scope it found, if any. */
  scope: string;
  lines: HunkLine[];
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$/;

/**
 * The hunks of one file section of a diff (parseGitDiff's `raw`), each line with its side. A
 * binary section has none. `\ No newline at end of file` markers are not lines of either side.
 */
export function hunksOf(file: Pick<FileDiff, "raw" | "binary">): Hunk[] {
  if (file.binary) return [];
  const hunks: Hunk[] = [];
  let current: Hunk | undefined;
  for (const line of file.raw.split("\n")) {
    const header = HUNK_HEADER.exec(line);
    if (header) {
      current = {
        oldStart: Number(header[1]),
        oldLines: header[2] === undefined ? 1 : Number(header[2]),
        newStart: Number(header[3]),
        newLines: header[4] === undefined ? 1 : Number(header[4]),
        scope: header[5] ?? "",
        lines: [],
      };
      hunks.push(current);
      continue;
    }
    if (!current) continue;
    const marker = line[0];
    if (marker === " ") current.lines.push({ side: "context", text: line.slice(1) });
    else if (marker === "+") current.lines.push({ side: "added", text: line.slice(1) });
    else if (marker === "-") current.lines.push({ side: "removed", text: line.slice(1) });
  }
  return hunks;
}

/** A hunk's lines as one side has them: the old side (context and removed) or the new (context and added). */
export function sideOf(hunk: Hunk, side: "old" | "new"): string[] {
  const dropped = side === "old" ? "added" : "removed";
  return hunk.lines.filter((l) => l.side !== dropped).map((l) => l.text);
}

/** Every file section of a diff with its hunks, in diff order. */
export function fileHunks(diff: string): { file: FileDiff; hunks: Hunk[] }[] {
  return parseGitDiff(diff).map((file) => ({ file, hunks: hunksOf(file) }));
}
