import { readDiff } from "./hunks.ts";

/**
 * What a test patch does to test functions, read from its lines alone: the pytest node ids of the
 * test functions it adds, and the lines it removes. A benchmark-authored stage declares its tests
 * this way, so its file cannot name a test its patch does not write.
 */
export interface TestPatchReading {
  /** `path::name` or `path::Class::name`, in patch order. */
  added: string[];
  /** Removed lines, as `path: text`: a later stage's tests may only add (they never rewrite an earlier stage's). */
  removed: string[];
}

const DEF = /^(\s*)(?:async\s+)?def\s+(test\w*)\s*\(/;
const CLASS = /^class\s+(\w+)\s*[(:]/;

/** The node ids of the test functions a test patch adds, and the lines it removes. */
export function readTestPatch(patch: string): TestPatchReading {
  const added: string[] = [];
  const removed: string[] = [];
  for (const file of readDiff(patch)) {
    for (const hunk of file.hunks) {
      // The class a method belongs to: the last top-level class line seen (context or added), or,
      // before any in the hunk, the one git names in the hunk header as the enclosing scope.
      let enclosing = CLASS.exec(hunk.scope)?.[1];
      for (const { side, text } of hunk.lines) {
        if (side === "removed") {
          removed.push(`${file.path}: ${text}`);
          continue;
        }
        const cls = CLASS.exec(text);
        if (cls) enclosing = cls[1];
        else if (/^\S/.test(text)) enclosing = undefined;
        const def = DEF.exec(text);
        if (!def || side !== "added") continue;
        const indented = def[1]!.length > 0;
        if (indented && !enclosing) continue; // a nested helper named test_*, not a test pytest collects
        added.push(indented ? `${file.path}::${enclosing}::${def[2]}` : `${file.path}::${def[2]}`);
      }
    }
  }
  return { added, removed };
}
