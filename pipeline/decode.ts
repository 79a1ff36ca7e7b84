/** A line of an input file that is not valid UTF-8: where it is, so the user can find the byte. */
export interface InvalidLine {
  /** 1-based line number. */
  line: number;
  /** Offset in the file of the first byte that is not valid UTF-8. */
  byteOffset: number;
}

/** A file outside the work directory that a stage reads; the engine reads and hashes it. */
export interface ExternalFile {
  path: string;
  /** The file decoded strictly as UTF-8 (a byte-order mark dropped); an invalid line is empty here. */
  text: string;
  /** Lines that are not valid UTF-8: the stage rejects what they held, naming file, line and byte offset. */
  invalid?: InvalidLine[];
  /**
   * With `invalid`: the file's bytes as they are, for a stage that must find where its records
   * start and end by byte (a JSON array on one line holds many records on its one bad line).
   */
  bytes?: Uint8Array;
}

/** The index of the first byte of `bytes` that does not belong to a valid UTF-8 sequence, or -1. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i]!;
    const length = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (!length || i + length > bytes.length) return i;
    for (let k = 1; k < length; k++) if ((bytes[i + k]! & 0xc0) !== 0x80) return i;
    // Overlong forms, surrogates and code points past U+10FFFF.
    const second = bytes[i + 1]!;
    if ((b === 0xe0 && second < 0xa0) || (b === 0xed && second > 0x9f) || (b === 0xf0 && second < 0x90) || (b === 0xf4 && second > 0x8f)) return i;
    i += length;
  }
  return -1;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Decodes an input file strictly: a UTF-8 byte-order mark is accepted and dropped; a line that is
 * not valid UTF-8 is never silently altered (no U+FFFD): it is emptied, keeping every other line
 * where it was, and reported, so the stage reading the file can reject just that record.
 */
export function decodeStrict(bytes: Uint8Array): { text: string; invalid: InvalidLine[] } {
  const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  const body = bytes.subarray(start);
  if (firstInvalidUtf8(body) < 0) return { text: UTF8.decode(body), invalid: [] };
  const lines: string[] = [];
  const invalid: InvalidLine[] = [];
  let lineStart = 0;
  for (let i = 0; i <= body.length; i++) {
    if (i < body.length && body[i] !== 0x0a) continue;
    const line = body.subarray(lineStart, i);
    const bad = firstInvalidUtf8(line);
    if (bad < 0) lines.push(UTF8.decode(line));
    else {
      lines.push("");
      invalid.push({ line: lines.length, byteOffset: start + lineStart + bad });
    }
    lineStart = i + 1;
  }
  return { text: lines.join("\n"), invalid };
}

/** "line 3 (byte offset 57)" for each invalid line, for messages. */
export function describeInvalid(invalid: readonly InvalidLine[]): string {
  return invalid.map((i) => `line ${i.line} (byte offset ${i.byteOffset})`).join(", ");
}
