import type { FileStatus } from "../schemas/split.ts";
import { readHunkHeader } from "./hunk-header.ts";

/** One file's section of a git diff, with its raw text kept byte for byte. */
export interface FileDiff {
  path: string;
  oldPath: string;
  status: FileStatus;
  binary: boolean;
  similarity?: number;
  oldMode?: string;
  newMode?: string;
  /**
   * The section as `git apply` takes it, ending in "\n": for a git diff exactly as it stood in the
   * input, from its `diff --git` line; for a plain unified diff (`diff -u`), the same content under
   * a `diff --git` header (with `new file` / `deleted file` lines where a side is /dev/null).
   */
  raw: string;
  hunks: number;
  /** The blob ids of its `index` line, where git wrote one (whole with --full-index, else abbreviated; all zeros for a side that does not exist). */
  blobs?: { before: string; after: string };
}

export class DiffParseError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(`line ${line}: ${message}`);
    this.name = "DiffParseError";
  }
}

/** A commit header: `git log -p` (`commit <sha>`) or an mbox of `git format-patch` (`From <sha> …`). */
const COMMIT_HEADER = /^(commit [0-9a-f]{7,40}\b|From [0-9a-f]{40} )/;
/** Lines only a `diff --git` section's extended header has. */
const GIT_HEADER_LINE =
  /^(index [0-9a-f]+\.\.[0-9a-f]+|old mode |new mode |deleted file mode |new file mode |similarity index |dissimilarity index |rename from |rename to |copy from |copy to |GIT binary patch$)/;
/** Base85 data lines of a git binary patch: a length character, then 5 characters per 4 bytes. */
const BASE85_LINE = /^[A-Za-z][0-9A-Za-z!#$%&()*+;<=>?@^_`{|}~-]+$/;

/**
 * Parses a diff into file sections: the output of `git diff` / `git show` / one `git format-patch`
 * mail, or a plain unified diff (`diff -u`, `diff -ruN`). Hunk bodies are consumed by their line
 * counts, never by pattern, so content that looks like a header cannot split a file; CR bytes
 * stay part of their lines so CRLF files survive unchanged.
 *
 * It refuses, with the line where it saw it, what it cannot split faithfully: combined diffs of
 * merges, input holding several commits, hunks and binary patches cut short, a file header with
 * no content, and text that is not a diff at all. Empty input is an empty diff.
 */
export function parseGitDiff(text: string): FileDiff[] {
  // Every diff tool ends its last line; one that does not was cut off mid-line, and its last
  // line, counted as whole, would apply as something nobody wrote.
  if (text.trim() && !text.endsWith("\n")) throw new DiffParseError("the diff does not end with a newline: it was cut off mid-line", text.split("\n").length);
  const lines = text.split("\n");
  // A trailing "\n" produces one empty element that is not a line of the diff.
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  const files: FileDiff[] = [];
  let commits = 0;
  let i = 0;
  const preamble = (): void => {
    // Anything before the first file (a commit message, a cover letter) belongs to no file, but a
    // git header line there means a `diff --git` line was lost: what follows would be misread.
    for (; i < lines.length; i++) {
      const line = lines[i]!;
      if (line.startsWith("diff --git ") || isPlainFileStart(lines, i)) return;
      assertNotCombined(line, i);
      if (GIT_HEADER_LINE.test(line))
        throw new DiffParseError(`${JSON.stringify(line.slice(0, 80))} belongs to a file section whose 'diff --git' line is missing (a damaged diff?)`, i + 1);
      if (COMMIT_HEADER.test(line) && ++commits > 1)
        throw new DiffParseError("the input holds more than one commit; split takes one change: give `git diff BASE HEAD` (or one format-patch mail)", i + 1);
    }
  };
  preamble();
  const kinds = new Set<"git" | "plain">();
  while (i < lines.length) {
    const start = i;
    const kind = lines[i]!.startsWith("diff --git ") ? "git" : "plain";
    kinds.add(kind);
    // One tool wrote a real diff: git sections and plain ones mixed mean a damaged `diff --git` line.
    if (kinds.size > 1) throw new DiffParseError("git and plain unified sections are mixed (a damaged 'diff --git' line?)", i + 1);
    const section = kind === "git" ? readGitSection(lines, i) : readPlainSection(lines, i);
    files.push(section.file);
    i = section.next;
    if (i >= lines.length) break;
    const line = lines[i]!;
    if (line.startsWith("diff --git ") || isPlainFileStart(lines, i)) continue;
    // A format-patch mail ends with its signature: "-- " and git's version.
    if (line === "-- " && lines.slice(i + 1).every((l) => !l.startsWith("diff ") && !l.startsWith("@@"))) break;
    if (/^diff -/.test(line) && i + 1 < lines.length && isPlainFileStart(lines, i + 1)) {
      i++; // the command line `diff -ruN old/x new/x` before a plain section
      continue;
    }
    if (line.startsWith("Only in "))
      throw new DiffParseError(`${JSON.stringify(line)}: a file only one side has is not in the diff (use diff -N, or git diff)`, i + 1);
    assertNotCombined(line, i);
    if (COMMIT_HEADER.test(line))
      throw new DiffParseError("the input holds more than one commit; split takes one change: give `git diff BASE HEAD` (or one format-patch mail)", i + 1);
    throw new DiffParseError(`unexpected line after the file ${files.at(-1)!.path} (from line ${start + 1}): ${JSON.stringify(line.slice(0, 80))}`, i + 1);
  }
  if (!files.length && text.trim()) {
    throw new DiffParseError("no file section found: this is not a diff (expected `diff --git` sections or a unified diff with ---/+++ lines and @@ hunks)", 1);
  }
  return files;
}

function assertNotCombined(line: string, index: number): void {
  if (line.startsWith("diff --cc ") || line.startsWith("diff --combined ") || line.startsWith("@@@ ")) {
    throw new DiffParseError("a combined diff of a merge commit (diff --cc) has no single base to apply to; give `git diff BASE MERGE` instead", index + 1);
  }
}

/** A plain unified diff's file starts with `--- X`, `+++ Y` and a hunk header. */
function isPlainFileStart(lines: string[], i: number): boolean {
  return lines[i]!.startsWith("--- ") && (lines[i + 1] ?? "").startsWith("+++ ") && readHunkHeader(lines[i + 2] ?? "") !== undefined;
}

/** Reads hunks from `i` (at an `@@` line) by their line counts; returns the index after them. */
function readHunks(lines: string[], i: number, name: string): { next: number; hunks: number } {
  let hunks = 0;
  while (i < lines.length && lines[i]!.startsWith("@@")) {
    assertNotCombined(lines[i]!, i);
    const header = readHunkHeader(lines[i]!);
    if (!header) throw new DiffParseError(`malformed hunk header ${JSON.stringify(lines[i]!.slice(0, 80))} in ${name}`, i + 1);
    let oldLeft = header.oldLines;
    let newLeft = header.newLines;
    hunks++;
    i++;
    while (oldLeft > 0 || newLeft > 0) {
      if (i >= lines.length) throw new DiffParseError(`the diff ends inside a hunk of ${name} (truncated?)`, i + 1);
      const body = lines[i]!;
      const tag = body[0];
      if (tag === " " || body === "") {
        // Some tools strip the space of an empty context line; git accepts that too.
        oldLeft--;
        newLeft--;
      } else if (tag === "-") oldLeft--;
      else if (tag === "+") newLeft--;
      else if (tag !== "\\") throw new DiffParseError(`unexpected line inside a hunk of ${name}: ${JSON.stringify(body.slice(0, 80))}`, i + 1);
      i++;
      if (oldLeft < 0 || newLeft < 0) throw new DiffParseError(`a hunk of ${name} has more lines than its header says`, i);
    }
    // "\ No newline at end of file" follows the last line it describes.
    while (i < lines.length && lines[i]!.startsWith("\\")) i++;
  }
  return { next: i, hunks };
}

/**
 * Checks a git binary patch from `i` (the line after "GIT binary patch"): one or two blocks, each
 * `literal N` or `delta N`, base85 lines whose length matches their length character, and a blank
 * line. A block cut short is refused: applying it would fail, or worse, apply something else.
 */
function readBinaryPatch(lines: string[], i: number, name: string): number {
  for (let block = 0; block < 2; block++) {
    const head = lines[i];
    if (head === undefined || !/^(literal|delta) \d+$/.test(head)) {
      if (block === 1) return i; // the reverse block is optional
      throw new DiffParseError(`the binary patch of ${name} has no literal or delta block`, i + 1);
    }
    i++;
    let data = 0;
    for (; i < lines.length && lines[i] !== ""; i++) {
      const line = lines[i]!;
      const code = line.charCodeAt(0);
      const bytes = code >= 65 && code <= 90 ? code - 64 : code >= 97 && code <= 122 ? code - 96 + 26 : -1;
      if (!BASE85_LINE.test(line) || line.length !== 1 + Math.ceil(bytes / 4) * 5)
        throw new DiffParseError(`a line of the binary patch of ${name} is cut short or damaged`, i + 1);
      data++;
    }
    if (i >= lines.length || data === 0) throw new DiffParseError(`the binary patch of ${name} ends before its block does (truncated?)`, i + 1);
    i++; // the blank line ending the block
  }
  return i;
}

/** What a section's extended header lines (between `diff --git` and `---` or the hunks) say. */
interface ExtendedHeader {
  binary: boolean;
  similarity?: number;
  oldMode?: string;
  newMode?: string;
  added: boolean;
  deleted: boolean;
  renamed: boolean;
  copied: boolean;
  renameFrom?: string;
  renameTo?: string;
  /** A `GIT binary patch` was read whole, up to `next`. */
  binaryPatch: boolean;
  next: number;
  blobs?: { before: string; after: string };
}

function readExtendedHeader(lines: string[], start: number, name: string): ExtendedHeader {
  const h: ExtendedHeader = { binary: false, added: false, deleted: false, renamed: false, copied: false, binaryPatch: false, next: start };
  let i = start;
  for (; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith("diff --git ") || line.startsWith("@@") || line.startsWith("--- ")) break;
    if (line.startsWith("old mode ")) h.oldMode = line.slice(9).trim();
    else if (line.startsWith("new mode ")) h.newMode = line.slice(9).trim();
    else if (line.startsWith("deleted file mode ")) [h.deleted, h.oldMode] = [true, line.slice(18).trim()];
    else if (line.startsWith("new file mode ")) [h.added, h.newMode] = [true, line.slice(14).trim()];
    else if (line.startsWith("rename from ")) [h.renamed, h.renameFrom] = [true, unquotePath(line.slice(12))];
    else if (line.startsWith("rename to ")) [h.renamed, h.renameTo] = [true, unquotePath(line.slice(10))];
    else if (line.startsWith("copy from ")) [h.copied, h.renameFrom] = [true, unquotePath(line.slice(10))];
    else if (line.startsWith("copy to ")) [h.copied, h.renameTo] = [true, unquotePath(line.slice(8))];
    else if (line.startsWith("similarity index ")) h.similarity = parseInt(line.slice(17), 10);
    else if (line.startsWith("dissimilarity index ")) h.similarity = 100 - parseInt(line.slice(20), 10);
    else if (line.startsWith("index ")) {
      // Blob ids (and the mode of an unchanged file): a derived checkout reads the reference's versions of a file by them.
      const ids = /^index ([0-9a-f]+)\.\.([0-9a-f]+)/.exec(line);
      if (ids) h.blobs = { before: ids[1]!, after: ids[2]! };
    } else if (line.startsWith("Binary files ")) h.binary = true;
    else if (line === "GIT binary patch") {
      [h.binary, h.binaryPatch] = [true, true];
      i = readBinaryPatch(lines, i + 1, name);
      break;
    } else throw new DiffParseError(`unexpected line in the header of ${name}: ${JSON.stringify(line.slice(0, 80))}`, i + 1);
  }
  h.next = i;
  return h;
}

function statusOf(h: ExtendedHeader, hunks: number): FileStatus {
  if (h.added) return "added";
  if (h.deleted) return "deleted";
  if (h.renamed) return "renamed";
  if (h.copied) return "copied";
  if (h.oldMode && h.newMode && h.oldMode !== h.newMode && hunks === 0 && !h.binary) return "mode_changed";
  return "modified";
}

function readGitSection(lines: string[], start: number): { file: FileDiff; next: number } {
  const header = lines[start]!;
  const h = readExtendedHeader(lines, start + 1, header.slice(11));
  let i = h.next;
  let minusPath: string | undefined;
  let plusPath: string | undefined;
  let hunks = 0;
  if (!h.binaryPatch && i < lines.length && lines[i]!.startsWith("--- ")) {
    minusPath = stripPrefix(unquotePath(lines[i]!.slice(4).replace(/\t.*$/, "")), "a/");
    i++;
    if (i >= lines.length || !lines[i]!.startsWith("+++ ")) throw new DiffParseError("a '---' line is not followed by '+++' (truncated?)", i + 1);
    plusPath = stripPrefix(unquotePath(lines[i]!.slice(4).replace(/\t.*$/, "")), "b/");
    const read = readHunks(lines, i + 1, plusPath ?? minusPath ?? header.slice(11));
    [i, hunks] = [read.next, read.hunks];
    // git writes ---/+++ only above hunks: without any, the content was cut off.
    if (!hunks) throw new DiffParseError(`the file ${plusPath} has ---/+++ lines but no hunk (truncated?)`, i + 1);
  }
  const [headerOld, headerNew] = headerPaths(header.slice(11), h.renameFrom, h.renameTo, minusPath, plusPath, start + 1);
  const oldPath = h.renameFrom ?? (minusPath && minusPath !== "/dev/null" ? minusPath : headerOld);
  const path = h.renameTo ?? (plusPath && plusPath !== "/dev/null" ? plusPath : headerNew);
  const status = statusOf(h, hunks);
  if (status === "modified" && !hunks && !h.binary) throw new DiffParseError(`the file ${path} has a header but no change (truncated?)`, start + 1);
  const raw = lines.slice(start, i).join("\n") + "\n";
  return {
    file: {
      path,
      oldPath,
      status,
      binary: h.binary,
      similarity: h.similarity,
      oldMode: h.oldMode,
      newMode: h.newMode,
      raw,
      hunks,
      ...(h.blobs ? { blobs: h.blobs } : {}),
    },
    next: i,
  };
}

/** A plain unified diff's path: timestamps dropped, and its first component stripped as `git apply -p1` does. */
function plainPath(text: string): string {
  const path = unquotePath(text.replace(/\t.*$/, ""));
  if (path === "/dev/null") return path;
  const slash = path.indexOf("/");
  return slash < 0 ? path : path.slice(slash + 1);
}

function readPlainSection(lines: string[], start: number): { file: FileDiff; next: number } {
  const minus = plainPath(lines[start]!.slice(4));
  const plus = plainPath(lines[start + 1]!.slice(4));
  if (minus === "/dev/null" && plus === "/dev/null") throw new DiffParseError("both sides of the file are /dev/null", start + 1);
  const path = plus === "/dev/null" ? minus : plus;
  const oldPath = minus === "/dev/null" ? plus : minus;
  if (minus !== "/dev/null" && plus !== "/dev/null" && minus !== plus)
    throw new DiffParseError(`a plain diff between two different paths (${minus}, ${plus}) is not one file's change`, start + 1);
  const { next, hunks } = readHunks(lines, start + 2, path);
  // `diff -N` shows a missing side as an empty file, not /dev/null: one hunk from or to nothing.
  const only = hunks === 1 ? readHunkHeader(lines[start + 2]!) : undefined;
  const fromNothing = minus === "/dev/null" || (only !== undefined && only.oldStart === 0 && only.oldLines === 0);
  const toNothing = plus === "/dev/null" || (only !== undefined && only.newStart === 0 && only.newLines === 0);
  const status: FileStatus = fromNothing ? "added" : toNothing ? "deleted" : "modified";
  // The same content under a git header, so every later step (apply, classify) sees one format.
  const header = [
    `diff --git a/${path} b/${path}`,
    ...(status === "added" ? ["new file mode 100644"] : status === "deleted" ? ["deleted file mode 100644"] : []),
    `--- ${status === "added" ? "/dev/null" : `a/${path}`}`,
    `+++ ${status === "deleted" ? "/dev/null" : `b/${path}`}`,
  ];
  const raw = [...header, ...lines.slice(start + 2, next)].join("\n") + "\n";
  return {
    file: {
      path,
      oldPath,
      status,
      binary: false,
      raw,
      hunks,
      ...(status === "added" ? { newMode: "100644" } : status === "deleted" ? { oldMode: "100644" } : {}),
    },
    next,
  };
}

function stripPrefix(path: string, prefix: string): string {
  return path.startsWith(prefix) ? path.slice(prefix.length) : path;
}

/**
 * The two paths of a `diff --git a/X b/Y` line. Unquoted paths may contain spaces, so when no
 * other header names the file, the line is split where both halves name the same path.
 */
function headerPaths(
  rest: string,
  renameFrom: string | undefined,
  renameTo: string | undefined,
  minus: string | null | undefined,
  plus: string | null | undefined,
  lineNo: number,
): [string, string] {
  if (rest.startsWith('"')) {
    const [first, remainder] = readQuoted(rest);
    const second = remainder.trimStart();
    const secondPath = second.startsWith('"') ? readQuoted(second)[0] : second;
    return [stripPrefix(first, "a/"), stripPrefix(secondPath, "b/")];
  }
  if (renameFrom && renameTo) return [renameFrom, renameTo];
  const known = (plus && plus !== "/dev/null" ? plus : undefined) ?? (minus && minus !== "/dev/null" ? minus : undefined);
  if (known) return [known, known];
  const quotedSecond = rest.indexOf(' "b/');
  if (quotedSecond > 0) return [stripPrefix(rest.slice(0, quotedSecond), "a/"), stripPrefix(readQuoted(rest.slice(quotedSecond + 1))[0], "b/")];
  // Same path on both sides: "a/P b/P" has length 2|P| + 5.
  if ((rest.length - 5) % 2 === 0) {
    const half = (rest.length - 5) / 2;
    const a = rest.slice(2, 2 + half);
    const b = rest.slice(half + 5);
    if (rest.startsWith("a/") && rest.slice(2 + half, half + 5) === " b/" && a === b) return [a, b];
  }
  throw new DiffParseError(`cannot tell the paths apart in 'diff --git ${rest}'`, lineNo);
}

const ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, "\\": 92 };

/** Reads one C-style quoted path as git writes it (octal escapes are UTF-8 bytes); returns it and the rest. */
function readQuoted(text: string): [string, string] {
  const bytes: number[] = [];
  let i = 1;
  for (; i < text.length && text[i] !== '"'; i++) {
    const ch = text[i]!;
    if (ch !== "\\") {
      bytes.push(...Buffer.from(ch, "utf8"));
      continue;
    }
    const next = text[++i]!;
    if (/[0-7]/.test(next)) {
      bytes.push(parseInt(text.slice(i, i + 3), 8));
      i += 2;
    } else bytes.push(ESCAPES[next] ?? next.charCodeAt(0));
  }
  return [Buffer.from(bytes).toString("utf8"), text.slice(i + 1)];
}

export function unquotePath(text: string): string {
  const trimmed = text.trim();
  return trimmed.startsWith('"') ? readQuoted(trimmed)[0] : trimmed;
}
