import { readFileSync } from "node:fs";
import { join } from "node:path";
import { listTree } from "../../pipeline/atomic.ts";
import { sha256 } from "../../pipeline/canonical.ts";

/**
 * One hash of everything a demo run produced: every artifact of the work directory and every file
 * of the emitted benchmark and the auditors' report (the lock file, which holds code hashes, is
 * not an output). A refactor that must not change behaviour must not change it.
 */
export function demoOutputsDigest(dirs: Record<string, string>): { digest: string; files: number } {
  const lines: string[] = [];
  for (const [label, dir] of Object.entries(dirs).sort(([a], [b]) => (a < b ? -1 : 1))) {
    for (const path of listTree(dir)) lines.push(`${label}/${path} ${sha256(readFileSync(join(dir, path)))}`);
  }
  return { digest: sha256(lines.join("\n")), files: lines.length };
}
