import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { sha256 } from "./canonical.ts";

const SCHEMAS_DIR = fileURLToPath(new URL("./schemas/", import.meta.url));
const memo = new Map<string, string>();

function listFiles(path: string): string[] {
  const stat = statSync(path);
  if (!stat.isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => listFiles(join(path, name)));
}

/**
 * A stage's code version: its declared version string plus the content of its source files and of
 * the artifact schemas. Editing a stage invalidates its cache without anyone remembering to bump
 * a number; the version string covers behaviour that lives elsewhere.
 */
export function codeVersion(version: string, sourceFiles: string[] = []): string {
  const memoKey = version + "\0" + sourceFiles.join("\0");
  const known = memo.get(memoKey);
  if (known) return known;
  const parts: string[] = [version];
  for (const root of [...sourceFiles, SCHEMAS_DIR]) {
    for (const file of listFiles(root)) {
      parts.push(relative(root, file), sha256(readFileSync(file)));
    }
  }
  const result = sha256(parts.join("\n"));
  memo.set(memoKey, result);
  return result;
}
