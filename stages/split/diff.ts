import type { FileStatus } from "../../pipeline/schemas/split.ts";

/** One file's section of a git diff, with its raw text kept byte for byte. */
export interface FileDiff {
  path: string;
  oldPath: string;
  status: FileStatus;
  binary: boolean;
  similarity?: number;
  oldMode?: string;
  newMode?: string;
  /** The section exactly as it stood in the input, from its `diff --git` line, ending in "\n". */
  raw: string;
  hunks: number;
}

export class DiffParseError extends Error {
  constructor(message: string, readonly line: number) {
    super(`line ${line}: ${message}`);
    this.name = "DiffParseError";
  }
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/**
 * Parses the output of `git diff` / `git format-patch` bodies into file sections. Hunk bodies are
 * consumed by their line counts, never by pattern, so content that looks like a header cannot
 * split a file; CR bytes stay part of their lines so CRLF files survive unchanged.
 */
export function parseGitDiff(text: string): FileDiff[] {
  const lines = text.split("\n");
  // A trailing "\n" produces one empty element that is not a line of the diff.
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  const files: FileDiff[] = [];
  let i = 0;
  // Anything before the first file (a commit message, a cover letter) is not part of any file.
  while (i < lines.length && !lines[i]!.startsWith("diff --git ")) i++;
  while (i < lines.length) {
    const start = i;
    const header = lines[i]!;
    i++;
    const section: Partial<FileDiff> = { binary: false, hunks: 0 };
    let minusPath: string | null | undefined;
    let plusPath: string | null | undefined;
    let deleted = false;
    let added = false;
    let renamed = false;
    let copied = false;
    let renameFrom: string | undefined;
    let renameTo: string | undefined;

    // Extended headers.
    for (; i < lines.length; i++) {
      const line = lines[i]!;
      if (line.startsWith("diff --git ") || line.startsWith("@@ ") || line.startsWith("--- ")) break;
      if (line.startsWith("old mode ")) section.oldMode = line.slice(9).trim();
      else if (line.startsWith("new mode ")) section.newMode = line.slice(9).trim();
      else if (line.startsWith("deleted file mode ")) {
        deleted = true;
        section.oldMode = line.slice(18).trim();
      } else if (line.startsWith("new file mode ")) {
        added = true;
        section.newMode = line.slice(14).trim();
      } else if (line.startsWith("rename from ")) {
        renamed = true;
        renameFrom = unquotePath(line.slice(12));
      } else if (line.startsWith("rename to ")) {
        renamed = true;
        renameTo = unquotePath(line.slice(10));
      } else if (line.startsWith("copy from ")) {
        copied = true;
        renameFrom = unquotePath(line.slice(10));
      } else if (line.startsWith("copy to ")) {
        copied = true;
        renameTo = unquotePath(line.slice(8));
      } else if (line.startsWith("similarity index ")) section.similarity = parseInt(line.slice(17), 10);
      else if (line.startsWith("dissimilarity index ")) section.similarity = 100 - parseInt(line.slice(20), 10);
      else if (line.startsWith("index ")) {
        // Blob ids (and the mode of an unchanged file): nothing the split needs.
      } else if (line.startsWith("Binary files ")) {
        section.binary = true;
      } else if (line === "GIT binary patch") {
        section.binary = true;
        // Base85 blocks run to the next file; their lines never start with "diff --git ".
        i++;
        while (i < lines.length && !lines[i]!.startsWith("diff --git ")) i++;
        break;
      } else throw new DiffParseError(`unexpected line in the header of ${header.slice(11)}: ${JSON.stringify(line.slice(0, 80))}`, i + 1);
    }

    if (i < lines.length && lines[i]!.startsWith("--- ")) {
      minusPath = stripPrefix(unquotePath(lines[i]!.slice(4).replace(/\t.*$/, "")), "a/");
      i++;
      if (i >= lines.length || !lines[i]!.startsWith("+++ ")) throw new DiffParseError("a '---' line is not followed by '+++'", i + 1);
      plusPath = stripPrefix(unquotePath(lines[i]!.slice(4).replace(/\t.*$/, "")), "b/");
      i++;
      while (i < lines.length && lines[i]!.startsWith("@@ ")) {
        const match = HUNK_HEADER.exec(lines[i]!);
        if (!match) throw new DiffParseError(`malformed hunk header ${JSON.stringify(lines[i])}`, i + 1);
        let oldLeft = match[2] === undefined ? 1 : parseInt(match[2], 10);
        let newLeft = match[4] === undefined ? 1 : parseInt(match[4], 10);
        section.hunks!++;
        i++;
        while (oldLeft > 0 || newLeft > 0) {
          if (i >= lines.length) throw new DiffParseError("the diff ends inside a hunk (truncated?)", i + 1);
          const body = lines[i]!;
          const tag = body[0];
          if (tag === " " || body === "") {
            // Some tools strip the space of an empty context line; git accepts that too.
            oldLeft--;
            newLeft--;
          } else if (tag === "-") oldLeft--;
          else if (tag === "+") newLeft--;
          else if (tag !== "\\") throw new DiffParseError(`unexpected line inside a hunk: ${JSON.stringify(body.slice(0, 80))}`, i + 1);
          i++;
          if (oldLeft < 0 || newLeft < 0) throw new DiffParseError("a hunk has more lines than its header says", i);
        }
        // "\ No newline at end of file" follows the last line it describes.
        while (i < lines.length && lines[i]!.startsWith("\\")) i++;
      }
      if (i < lines.length && !lines[i]!.startsWith("diff --git ")) {
        throw new DiffParseError(`unexpected line after the hunks of ${plusPath ?? minusPath}: ${JSON.stringify(lines[i]!.slice(0, 80))}`, i + 1);
      }
    }

    const [headerOld, headerNew] = headerPaths(header.slice(11), renameFrom, renameTo, minusPath, plusPath, start + 1);
    const oldPath = renameFrom ?? (minusPath && minusPath !== "/dev/null" ? minusPath : headerOld);
    const path = renameTo ?? (plusPath && plusPath !== "/dev/null" ? plusPath : headerNew);
    let status: FileStatus;
    if (added) status = "added";
    else if (deleted) status = "deleted";
    else if (renamed) status = "renamed";
    else if (copied) status = "copied";
    else if (section.oldMode && section.newMode && section.oldMode !== section.newMode && section.hunks === 0 && !section.binary) status = "mode_changed";
    else status = "modified";
    const raw = lines.slice(start, i).join("\n") + "\n";
    files.push({
      path,
      oldPath,
      status,
      binary: section.binary!,
      similarity: section.similarity,
      oldMode: section.oldMode,
      newMode: section.newMode,
      raw,
      hunks: section.hunks!,
    });
  }
  return files;
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
