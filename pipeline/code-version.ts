import { readFileSync, statSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { sha256 } from "./canonical.ts";

const PROJECT_ROOT = fileURLToPath(new URL("../", import.meta.url));

/**
 * Relative module specifiers a source file depends on: static and dynamic imports, re-exports,
 * and files it reads next to itself (`new URL("./runner.py", import.meta.url)`). Package imports
 * are not followed: the lock file pins them.
 */
const DEPENDENCY =
  /\b(?:import|export)\s[^;]*?\bfrom\s*["'](\.[^"']*)["']|\bimport\s*\(\s*["'](\.[^"']*)["']\s*\)|\bimport\s*["'](\.[^"']*)["']|new URL\(\s*["'](\.[^"']*)["']\s*,\s*import\.meta\.url\s*\)/g;

interface FileFacts {
  mtimeMs: number;
  size: number;
  hash: string;
  dependencies: string[];
}

/** Per file, refreshed whenever its size or modification time changes, so an edit is never missed. */
const facts = new Map<string, FileFacts>();

function factsOf(path: string): FileFacts | undefined {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return undefined;
  }
  if (!stat.isFile()) return undefined;
  const known = facts.get(path);
  if (known && known.mtimeMs === stat.mtimeMs && known.size === stat.size) return known;
  const content = readFileSync(path);
  const text = /\.(ts|mts|js|mjs)$/.test(path) ? content.toString("utf8") : "";
  const dependencies = [...text.matchAll(DEPENDENCY)].map((m) => resolve(dirname(path), (m[1] ?? m[2] ?? m[3] ?? m[4])!));
  const fresh = { mtimeMs: stat.mtimeMs, size: stat.size, hash: sha256(content), dependencies };
  facts.set(path, fresh);
  return fresh;
}

/** Every project file `entry` reaches through its relative imports (itself included), sorted. */
export function importGraph(entry: string): string[] {
  const seen = new Set<string>();
  const pending = [resolve(entry.startsWith("file:") ? fileURLToPath(entry) : entry)];
  while (pending.length) {
    const path = pending.pop()!;
    if (seen.has(path)) continue;
    const file = factsOf(path);
    if (!file) continue; // a directory or a missing optional file names no code
    seen.add(path);
    pending.push(...file.dependencies);
  }
  return [...seen].sort();
}

/**
 * A stage's code identity: its declared version string and the content of every file its module
 * reaches through imports, computed from the code rather than listed by hand, so editing any
 * module a stage uses invalidates that stage's cache. The version string covers behaviour that
 * lives outside the project's files (a tool's version, say).
 */
export function codeVersion(version: string, entry: string): string {
  const parts: string[] = [version];
  for (const path of importGraph(entry)) parts.push(relative(PROJECT_ROOT, path), factsOf(path)!.hash);
  return sha256(parts.join("\n"));
}
