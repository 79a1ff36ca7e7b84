import { posix } from "node:path";
import type { FileClass } from "../../pipeline/schemas/common.ts";
import type { ClassificationRules } from "../../pipeline/schemas/repo-profile.ts";
import type { ChangedFile } from "../../pipeline/schemas/split.ts";
import { classifyPath } from "../../pipeline/changes/classify.ts";
import { parseGitDiff, type FileDiff } from "../../pipeline/changes/diff.ts";

export interface SplitResult {
  implementationPatch: string;
  testPatch: string;
  files: ChangedFile[];
  /** C_t of SPEC §1. */
  sourceFiles: string[];
  /** D_t of SPEC §1; "." is the repository root. */
  sourceDirs: string[];
  excluded: { path: string; class: FileClass }[];
}

/**
 * A file's class. A rename or copy between classes (a module moved into tests/, say) takes the
 * class of the side that is not a test, so implementation changes are never hidden in the
 * held-out test patch.
 */
function classifyFile(file: FileDiff, rules: ClassificationRules): { class: FileClass; rule: string } {
  const next = classifyPath(file.path, rules);
  if (file.oldPath === file.path) return next;
  const previous = classifyPath(file.oldPath, rules);
  if (previous.class === next.class) return next;
  if (previous.class === "source" || next.class === "source") {
    return previous.class === "source" ? previous : next;
  }
  return next.class === "test" ? previous : next;
}

/** The parent directory of a repository path; a top-level file's parent is the root, ".". */
export function parentDir(path: string): string {
  const dir = posix.dirname(path);
  return dir === "" ? "." : dir;
}

/**
 * Splits a reference change into an implementation patch (source files) and a test patch (test
 * files). Sections are copied byte for byte in their original order; docs and other files go to
 * neither and are listed instead.
 */
export function splitReferenceChange(diffText: string, rules: ClassificationRules): SplitResult {
  const parsed = parseGitDiff(diffText);
  const implementation: string[] = [];
  const tests: string[] = [];
  const files: SplitResult["files"] = [];
  const excluded: SplitResult["excluded"] = [];
  const sourceFiles = new Set<string>();
  for (const file of parsed) {
    const { class: fileClass, rule } = classifyFile(file, rules);
    files.push({
      path: file.path,
      old_path: file.oldPath,
      status: file.status,
      class: fileClass,
      binary: file.binary,
      ...(file.similarity !== undefined ? { similarity: file.similarity } : {}),
      ...(file.oldMode ? { old_mode: file.oldMode } : {}),
      ...(file.newMode ? { new_mode: file.newMode } : {}),
      rule,
    });
    if (fileClass === "source") {
      implementation.push(file.raw);
      // A rename touches both places: the old path is modified (emptied) as much as the new one.
      sourceFiles.add(file.path);
      if (file.status === "renamed") sourceFiles.add(file.oldPath);
    } else if (fileClass === "test") tests.push(file.raw);
    else excluded.push({ path: file.path, class: fileClass });
  }
  const sortedSources = [...sourceFiles].sort();
  return {
    implementationPatch: implementation.join(""),
    testPatch: tests.join(""),
    files,
    sourceFiles: sortedSources,
    sourceDirs: [...new Set(sortedSources.map(parentDir))].sort(),
    excluded,
  };
}

/** The split in the artifact's field names, as the stage stores it and `split diff --json` prints it. */
export function splitFields(result: SplitResult) {
  return {
    implementation_patch: result.implementationPatch,
    test_patch: result.testPatch,
    files: result.files,
    source_files: result.sourceFiles,
    source_dirs: result.sourceDirs,
    excluded_files: result.excluded,
  };
}
