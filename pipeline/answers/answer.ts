import { fileHunks, sideOf } from "../changes/hunks.ts";
import type { TreeReader } from "./tree-reader.ts";

/** A hunk of a reference as the answer rule looks for it: its new side, found verbatim with its context. */
export interface SearchableHunk {
  path: string;
  /** Its first line on the new side, for evidence. */
  line: number;
  part: "implementation" | "tests";
  lines: string[];
}

/** What is looked for in a checkout to tell whether it holds a task's answer. */
export interface AnswerFacts {
  taskId: string;
  base: string;
  /** The commit that brought the upstream fix (null: none in the repository). */
  fix: string | null;
  hunks: SearchableHunk[];
  /** Names only the reference defines: absent from the base's whole tree. */
  newNames: string[];
}

const DEFINITION = /^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)/;

/** Whether `lines` occur in `text` as consecutive whole lines. */
export function containsBlock(text: string, lines: readonly string[]): boolean {
  if (!lines.length) return false;
  const fileLines = text.split("\n");
  for (let i = 0; i + lines.length <= fileLines.length; i++) {
    if (fileLines[i] !== lines[0]) continue;
    let j = 1;
    while (j < lines.length && fileLines[i + j] === lines[j]) j++;
    if (j === lines.length) return true;
  }
  return false;
}

/**
 * A task's answer, read from its whole reference (every stage's implementation and held-out test
 * patch, composed over its base): the hunks that add a line with content, each kept only where its
 * new side is not already at the base (lines already there do not count), and the names its added
 * lines define that occur nowhere in the base's tree.
 */
export async function answerFacts(
  reader: TreeReader,
  task: { taskId: string; base: string; fix: string | null; implementationPatch: string; testPatch: string },
): Promise<AnswerFacts> {
  const hunks: SearchableHunk[] = [];
  const defined = new Set<string>();
  for (const [part, patch] of [
    ["implementation", task.implementationPatch],
    ["tests", task.testPatch],
  ] as const) {
    for (const { file, hunks: fileHunksOf } of fileHunks(patch)) {
      if (file.status === "deleted") continue;
      for (const hunk of fileHunksOf) {
        const added = hunk.lines.filter((l) => l.side === "added");
        for (const l of added) {
          const name = DEFINITION.exec(l.text)?.[1];
          if (name && !/^__\w+__$/.test(name)) defined.add(name);
        }
        if (!added.some((l) => l.text.trim())) continue;
        const lines = sideOf(hunk, "new");
        const atBase = await reader.file(task.base, file.path);
        if (atBase !== undefined && containsBlock(atBase, lines)) continue;
        hunks.push({ path: file.path, line: hunk.newStart, part, lines });
      }
    }
  }
  const whereAtBase = await reader.whereNames(task.base, [...defined]);
  const newNames = [...defined].filter((n) => whereAtBase.get(n) === undefined).sort();
  return { taskId: task.taskId, base: task.base, fix: task.fix, hunks, newNames };
}
