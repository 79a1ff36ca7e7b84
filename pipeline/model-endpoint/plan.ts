/**
 * A task's reference change cut into small steps, for the endpoint's scripted models: the change
 * is a sequence of units (one changed line of a text file, one deleted file, one binary file), and
 * step m is the base revision with the first m units applied. The last step is the reference
 * change itself. A window [from, to) of units applies only those: what a model that lost sight of
 * the requests behind the first `from` units would write.
 */
import { parseGitDiff, type FileDiff } from "../changes/diff.ts";
import { hunksOf } from "../changes/hunks.ts";

/** What one file is after some units: text, bytes, or gone. */
export type FileState = { kind: "text"; text: string } | { kind: "binary"; bytes: Buffer } | { kind: "deleted" };

/** One file operation a step needs: write its content, or delete it. */
export type FileOperation = { path: string; state: FileState };

interface FilePlan {
  path: string;
  /** The units of this file, in the order they apply; `at` is the content with units [from, to) of them applied. */
  units: number;
  at: (from: number, to: number) => FileState;
}

/** A run of units: those with index in [from, to). */
export type UnitWindow = [from: number, to: number];

export interface ChangePlan {
  /** Every unit of the change. */
  units: number;
  /** The files whose state differs between unit counts `from` and `to`, with their state at `to`. */
  between: (from: number, to: number) => FileOperation[];
  /** The files whose state differs between two windows of units, with their state in the second. */
  change: (before: UnitWindow, after: UnitWindow) => FileOperation[];
  /** The files the whole change touches, at the base revision (deleted: did not exist). */
  base: () => FileOperation[];
}

/** Lines of a text with their newlines kept, so that a file without a final newline stays so. */
function linesOf(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

/** Applies a file's hunks to its base text, only its changed lines with index in [from, to). */
function applyPartly(base: string, diff: FileDiff, from: number, to: number): string {
  const lines = linesOf(base);
  const out: string[] = [];
  let cursor = 0; // the next base line (0-based) not yet copied
  let used = 0;
  for (const hunk of hunksOf(diff)) {
    // A hunk of zero old lines is placed after line oldStart, otherwise at it.
    const first = hunk.oldLines === 0 ? hunk.oldStart : hunk.oldStart - 1;
    while (cursor < first) out.push(lines[cursor++]!);
    for (const line of hunk.lines) {
      if (line.side === "context") {
        out.push(lines[cursor++]!);
        continue;
      }
      const applied = used >= from && used < to;
      used++;
      if (line.side === "removed") {
        if (!applied) out.push(lines[cursor]!);
        cursor++;
      } else if (applied) out.push(line.text + (line.noNewline ? "" : "\n"));
    }
  }
  while (cursor < lines.length) out.push(lines[cursor++]!);
  return out.join("");
}

/** The changed lines of a file's hunks: each one a unit of the change. */
function changedLines(diff: FileDiff): number {
  return hunksOf(diff).reduce((n, hunk) => n + hunk.lines.filter((l) => l.side !== "context").length, 0);
}

/**
 * The plan of `patch` over a base revision. `baseText(path)` gives a file's base content (null:
 * no such file); `final(path)` its content once the whole patch is applied (null: deleted), used
 * for binary files and to check each text file's last step against what git makes of the patch.
 */
export function planChange(patch: string, baseText: (path: string) => Buffer | null, final: (path: string) => Buffer | null): ChangePlan {
  const files: FilePlan[] = [];
  for (const diff of parseGitDiff(patch)) {
    const renamed = diff.oldPath !== diff.path;
    if (diff.status === "deleted") {
      files.push({ path: diff.path, units: 1, at: (from, to) => (from < 1 && to >= 1 ? { kind: "deleted" } : textOrBytes(baseText(diff.path))) });
      continue;
    }
    if (diff.binary) {
      const bytes = final(diff.path) ?? Buffer.alloc(0);
      files.push({ path: diff.path, units: 1, at: (from, to) => (from < 1 && to >= 1 ? { kind: "binary", bytes } : textOrBytes(baseText(diff.path))) });
      if (renamed)
        files.push({ path: diff.oldPath, units: 1, at: (from, to) => (from < 1 && to >= 1 ? { kind: "deleted" } : textOrBytes(baseText(diff.oldPath))) });
      continue;
    }
    const base = (renamed ? baseText(diff.oldPath) : baseText(diff.path))?.toString("utf8") ?? "";
    const lines = changedLines(diff);
    const expected = final(diff.path)?.toString("utf8");
    // What git made of the patch is the truth; a diff this reading cannot follow is written whole at its last unit.
    const faithful = expected === undefined || applyPartly(base, diff, 0, lines) === expected;
    const existedBefore = renamed ? false : baseText(diff.path) !== null;
    // A new or renamed file appears at its first unit (a rename: the old content under the new name).
    const lead = existedBefore ? 0 : 1;
    const units = lead + Math.max(lines, 1);
    files.push({
      path: diff.path,
      units,
      at: (from, to) => {
        // A new file exists once a window holds any of its units; an empty window is the base.
        if (to <= from) return existedBefore ? { kind: "text", text: base } : { kind: "deleted" };
        if (!faithful) return { kind: "text", text: from === 0 && to >= units ? (expected ?? base) : base };
        return { kind: "text", text: applyPartly(base, diff, Math.max(0, from - lead), to - lead) };
      },
    });
    if (renamed)
      files.push({ path: diff.oldPath, units: 1, at: (from, to) => (from < 1 && to >= 1 ? { kind: "deleted" } : textOrBytes(baseText(diff.oldPath))) });
  }
  const offsets: number[] = [];
  let total = 0;
  for (const f of files) {
    offsets.push(total);
    total += f.units;
  }
  const local = (f: number, unit: number) => Math.max(0, Math.min(files[f]!.units, unit - offsets[f]!));
  const stateIn = (f: number, [from, to]: UnitWindow) => files[f]!.at(local(f, from), local(f, to));
  const change = (before: UnitWindow, after: UnitWindow) => {
    const ops: FileOperation[] = [];
    files.forEach((file, f) => {
      const state = stateIn(f, after);
      if (!sameState(stateIn(f, before), state)) ops.push({ path: file.path, state });
    });
    return ops;
  };
  return {
    units: total,
    between: (from, to) => change([0, from], [0, to]),
    change,
    base: () => files.map((file, f) => ({ path: file.path, state: stateIn(f, [0, 0]) })),
  };
}

function textOrBytes(content: Buffer | null): FileState {
  if (content === null) return { kind: "deleted" };
  return content.includes(0) ? { kind: "binary", bytes: content } : { kind: "text", text: content.toString("utf8") };
}

function sameState(a: FileState, b: FileState): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === "text") return a.text === (b as { text: string }).text;
  if (a.kind === "binary") return a.bytes.equals((b as { bytes: Buffer }).bytes);
  return true;
}

/** How many units a scripted model has applied after stage `stage` of a task of `stages` stages: the last stage applies all. */
export function unitsAfterStage(units: number, stage: number, stages: number): number {
  return stage >= stages ? units : Math.floor((stage * units) / stages);
}
