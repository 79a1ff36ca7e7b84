import type { FileStatus } from "../schemas/split.ts";
import { type FileDiff, parseGitDiff } from "./diff.ts";
import { type HunkHeader, readHunkHeader } from "./hunk-header.ts";

/**
 * A diff as its readers want it: files, their hunks, and each hunk's lines with the side they
 * stand on and their line number there. Built on `parseGitDiff`, which has already checked every
 * hunk against its header, so nothing here guesses: a hunk is read by its header's line counts, a
 * `+++` or `---` inside it is a line of content, a blank line is context, and `\ No newline at
 * end of file` is no line at all.
 */

/** Context (both sides), added (the new side) or removed (the old side). */
export type Side = "context" | "added" | "removed";

export interface HunkLine {
  side: Side;
  text: string;
  /** Its number in the old file (removed and context lines). */
  oldLine?: number;
  /** Its number in the new file (added and context lines). */
  newLine?: number;
  /** Git's `\ No newline at end of file` follows it: the line ends its file without a newline (on its side). */
  noNewline?: true;
}

/** One hunk of a file's diff, with its place on each side (1-based first lines, as the header gives them) and what git writes after the second `@@` (`scope`: the enclosing scope it found, if any). */
export interface Hunk extends Omit<HunkHeader, "section"> {
  scope: string;
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

/** The hunks of one file section of a parsed diff (its `raw`), read by their headers' line counts; a binary section has none. */
export function hunksOf(file: Pick<FileDiff, "raw" | "binary">): Hunk[] {
  if (file.binary) return [];
  const lines = file.raw.split("\n");
  const hunks: Hunk[] = [];
  let i = lines.findIndex((l) => l.startsWith("@@"));
  while (i >= 0 && i < lines.length) {
    const header = readHunkHeader(lines[i]!);
    if (!header) break;
    const { section, ...place } = header;
    const hunk: Hunk = { ...place, scope: section, lines: [] };
    let [oldLine, newLine] = [header.oldStart, header.newStart];
    let [oldLeft, newLeft] = [header.oldLines, header.newLines];
    const markLast = () => {
      const last = hunk.lines[hunk.lines.length - 1];
      if (last) last.noNewline = true;
    };
    for (i++; (oldLeft > 0 || newLeft > 0) && i < lines.length; i++) {
      const body = lines[i]!;
      if (body.startsWith("\\")) {
        markLast();
        continue;
      }
      const side: Side = body[0] === "+" ? "added" : body[0] === "-" ? "removed" : "context";
      hunk.lines.push({
        side,
        text: body.slice(1),
        ...(side !== "added" ? { oldLine: oldLine++ } : {}),
        ...(side !== "removed" ? { newLine: newLine++ } : {}),
      });
      if (side !== "added") oldLeft--;
      if (side !== "removed") newLeft--;
    }
    for (; i < lines.length && lines[i]!.startsWith("\\"); i++) markLast();
    hunks.push(hunk);
    if (!lines[i]?.startsWith("@@")) break;
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

/** A diff's files and their hunks; a diff `parseGitDiff` refuses is refused here too (DiffParseError). */
export function readDiff(patch: string): FileHunks[] {
  return fileHunks(patch).map(({ file, hunks }) => ({ path: file.path, oldPath: file.oldPath, status: file.status, binary: file.binary, hunks }));
}

/** Every line of a diff's files that stands on one side only, or both (context), in order. */
export function linesOn(files: FileHunks[], side: Side): string[] {
  return files.flatMap((f) => f.hunks.flatMap((h) => h.lines.filter((l) => l.side === side).map((l) => l.text)));
}

/** One file of a diff, by its new path. */
export function fileOf(files: FileHunks[], path: string): FileHunks | undefined {
  return files.find((f) => f.path === path);
}
