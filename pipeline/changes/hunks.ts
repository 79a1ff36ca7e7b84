import type { FileStatus } from "../schemas/split.ts";
import { type FileDiff, parseGitDiff } from "./diff.ts";
import { type HunkHeader, readHunkHeader } from "./hunk-header.ts";

/**
 * A diff as its readers want it: files, their hunks, and each hunk's lines with the side they
 * stand on and their line number there. Built on `parseGitDiff`, which has already checked every
 * hunk against its header, so nothing here guesses: a `+++` or `---` inside a hunk is a line of
 * content, a blank line is context, and `\ No newline at end of file` is no line at all.
 */

/** `+` a line the change adds, `-` one it removes, ` ` one both sides hold. */
export type Side = "+" | "-" | " ";

export interface HunkLine {
  side: Side;
  text: string;
  /** Its number in the old file (removed and context lines). */
  oldLine?: number;
  /** Its number in the new file (added and context lines). */
  newLine?: number;
}

export interface Hunk extends HunkHeader {
  lines: HunkLine[];
}

export interface FileHunks {
  /** The new path (the old one for a deleted file). */
  path: string;
  oldPath: string;
  status: FileStatus;
  binary: boolean;
  hunks: Hunk[];
}

/** The hunks of one file section of a parsed diff, read by their headers' line counts. */
export function hunksOf(file: FileDiff): Hunk[] {
  const lines = file.raw.split("\n");
  const hunks: Hunk[] = [];
  let i = lines.findIndex((l) => l.startsWith("@@"));
  while (i >= 0 && i < lines.length) {
    const header = readHunkHeader(lines[i]!);
    if (!header) break;
    const hunk: Hunk = { ...header, lines: [] };
    let [oldLine, newLine] = [header.oldStart, header.newStart];
    let [oldLeft, newLeft] = [header.oldLines, header.newLines];
    for (i++; (oldLeft > 0 || newLeft > 0) && i < lines.length; i++) {
      const body = lines[i]!;
      if (body.startsWith("\\")) continue;
      const side: Side = body[0] === "+" ? "+" : body[0] === "-" ? "-" : " ";
      const text = body.slice(1);
      hunk.lines.push({ side, text, ...(side !== "+" ? { oldLine: oldLine++ } : {}), ...(side !== "-" ? { newLine: newLine++ } : {}) });
      if (side !== "+") oldLeft--;
      if (side !== "-") newLeft--;
    }
    while (i < lines.length && lines[i]!.startsWith("\\")) i++;
    hunks.push(hunk);
    if (!lines[i]?.startsWith("@@")) break;
  }
  return hunks;
}

/** A diff's files and their hunks; a diff `parseGitDiff` refuses is refused here too (DiffParseError). */
export function readDiff(patch: string): FileHunks[] {
  return parseGitDiff(patch).map((file) => ({
    path: file.path,
    oldPath: file.oldPath,
    status: file.status,
    binary: file.binary,
    hunks: file.binary ? [] : hunksOf(file),
  }));
}

/** Every line of one side of a diff's files, in order: `+` added, `-` removed, ` ` context. */
export function sideOf(files: FileHunks[], side: Side): string[] {
  return files.flatMap((f) => f.hunks.flatMap((h) => h.lines.filter((l) => l.side === side).map((l) => l.text)));
}

/** One file of a diff, by its new path. */
export function fileOf(files: FileHunks[], path: string): FileHunks | undefined {
  return files.find((f) => f.path === path);
}
