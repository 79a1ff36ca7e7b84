import { lstatSync, readlinkSync } from "node:fs";
import { join, posix } from "node:path";
import { classifyPath } from "../changes/classify.ts";
import { parseGitDiff, type FileDiff } from "../changes/diff.ts";
import { hunksOf } from "../changes/hunks.ts";
import type { ClassificationRules } from "../schemas/repo-profile.ts";
import type { DroppedPath } from "../schemas/verification.ts";

/** A submission the verifier refuses to apply at all: it reaches outside the repository. */
export class UnsafeSubmission extends Error {
  override name = "UnsafeSubmission";
}

/**
 * Files that configure how pytest collects and runs tests, wherever they sit: pytest takes its
 * configuration from the first of these it finds above the tests, so a new one in any directory
 * could replace the repository's.
 */
export const TEST_CONFIGURATION = new Set([
  "conftest.py",
  "pytest.ini",
  ".pytest.ini",
  "pytest.toml",
  ".pytest.toml",
  "tox.ini",
  "setup.cfg",
  "pyproject.toml",
]);

/** Modules that could stand in for the test runner or run code at interpreter start-up. */
export const RUNNER_MODULES = new Set(["pytest.py", "py.py", "pluggy.py", "sitecustomize.py", "usercustomize.py"]);
export const RUNNER_PACKAGES = new Set(["pytest", "_pytest", "pluggy"]);

export interface SubmissionPlan {
  /** The sections that will be applied, as one patch ("" when nothing is left). */
  patch: string;
  applied: FileDiff[];
  dropped: DroppedPath[];
}

/** True for a path of the repository's own test-runner source (the profile's `test_runner_source`: pytest's `src/_pytest`). */
export function isTestRunnerSource(path: string, rules: ClassificationRules): boolean {
  return rules.test_runner_source.some((root) => path === root || path.startsWith(`${root}/`));
}

/** Why a path may not be taken from a submission, or undefined when it may. */
export function protectedPathReason(path: string, rules: ClassificationRules, heldoutTestPaths: ReadonlySet<string>): DroppedPath["reason"] | undefined {
  const segments = path.split("/");
  const name = segments.at(-1)!;
  if (heldoutTestPaths.has(path)) return "held_out_test_path";
  if (TEST_CONFIGURATION.has(name)) return "test_configuration";
  if (
    !isTestRunnerSource(path, rules) &&
    (RUNNER_MODULES.has(name) ||
      name.endsWith(".pth") ||
      segments.slice(0, -1).some((s) => RUNNER_PACKAGES.has(s) || s.endsWith(".dist-info") || s.endsWith(".egg-info")))
  )
    return "test_runner_shadow";
  if (classifyPath(path, rules).class === "test") return "test_file";
  return undefined;
}

/** Refuses a path that is absolute, climbs out of the repository, or reaches into `.git`. */
export function assertInsideRepository(path: string): void {
  const segments = path.split("/");
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path) || path.includes("\\") || path.includes("\0"))
    throw new UnsafeSubmission(`${JSON.stringify(path)} is not a path inside the repository`);
  if (segments.includes("..")) throw new UnsafeSubmission(`${JSON.stringify(path)} climbs out of the repository with '..'`);
  if (segments.some((s) => s.toLowerCase() === ".git")) throw new UnsafeSubmission(`${JSON.stringify(path)} reaches into the repository's .git directory`);
}

/** The target a symlink section creates (its one added line), or undefined if it creates none. */
function symlinkTarget(file: FileDiff): string | undefined {
  if (file.newMode !== "120000" || file.status === "deleted") return undefined;
  const hunks = hunksOf(file);
  if (hunks.length === 0) return undefined;
  return hunks.flatMap((h) => h.lines).find((l) => l.side === "added")?.text ?? "";
}

/** Refuses a symlink whose target resolves outside the repository (or into `.git`). */
export function assertSymlinkInside(path: string, target: string): void {
  if (target.startsWith("/")) throw new UnsafeSubmission(`the symlink ${path} points outside the repository (to ${JSON.stringify(target)})`);
  const resolved = posix.normalize(posix.join(posix.dirname(path), target));
  if (resolved === ".." || resolved.startsWith("../"))
    throw new UnsafeSubmission(`the symlink ${path} points outside the repository (to ${JSON.stringify(target)})`);
  if (resolved.split("/").some((s) => s.toLowerCase() === ".git"))
    throw new UnsafeSubmission(`the symlink ${path} points into the repository's .git directory`);
}

/**
 * Decides what of a submitted patch the verifier applies (SPEC §3): its non-test project changes.
 * Changes to test files, test configuration, files the held-out test patch touches and modules
 * that could replace the test runner are dropped (those files keep their held-out or base
 * versions); a patch reaching outside the repository is refused whole (UnsafeSubmission).
 * Throws DiffParseError when the artifact is not a git diff.
 */
export function planSubmission(patchText: string, rules: ClassificationRules, heldoutTestPaths: ReadonlySet<string>): SubmissionPlan {
  const files = parseGitDiff(patchText);
  const applied: FileDiff[] = [];
  const dropped: DroppedPath[] = [];
  for (const file of files) {
    const paths = [...new Set([file.oldPath, file.path])];
    for (const path of paths) assertInsideRepository(path);
    const target = symlinkTarget(file);
    if (target !== undefined) assertSymlinkInside(file.path, target);
    const reasons = paths.map((p) => protectedPathReason(p, rules, heldoutTestPaths));
    const reason = reasons.find((r) => r !== undefined);
    if (reason) dropped.push({ path: file.path, reason });
    else applied.push(file);
  }
  dropped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { patch: applied.map((f) => f.raw).join(""), applied, dropped };
}

/** Paths a patch touches, old and new names both: the held-out test patch's files are protected. */
export function pathsOfPatch(patchText: string): Set<string> {
  return new Set(
    parseGitDiff(patchText)
      .flatMap((f) => [f.oldPath, f.path])
      .filter((p) => p !== "/dev/null"),
  );
}

/**
 * Follows a path of the checkout through every symlink on the way, as the file system would, and
 * refuses it if the chain leaves the repository or enters `.git`. Lexical normalisation is not
 * enough: with `pkg/up -> ..`, the link `pkg/out -> up/..` looks inside but points above the root.
 */
export function assertResolvesInside(checkoutDir: string, path: string): void {
  const pending = path.split("/").filter(Boolean);
  const resolved: string[] = [];
  for (let hops = 0; pending.length;) {
    const part = pending.shift()!;
    if (part === ".") continue;
    if (part === "..") {
      if (!resolved.length) throw new UnsafeSubmission(`the symlink ${path} resolves outside the repository`);
      resolved.pop();
      continue;
    }
    if (part.toLowerCase() === ".git") throw new UnsafeSubmission(`the symlink ${path} resolves into the repository's .git directory`);
    resolved.push(part);
    let stat;
    try {
      stat = lstatSync(join(checkoutDir, ...resolved));
    } catch {
      continue; // a path that does not exist goes nowhere further
    }
    if (!stat.isSymbolicLink()) continue;
    if (++hops > 40) throw new UnsafeSubmission(`the symlink ${path} goes through more than 40 links`);
    const target = readlinkSync(join(checkoutDir, ...resolved));
    if (target.startsWith("/")) throw new UnsafeSubmission(`the symlink ${path} resolves outside the repository (through ${resolved.join("/")} -> ${target})`);
    resolved.pop();
    pending.unshift(...target.split("/").filter(Boolean));
  }
}

/** Checks every symlink the submission created or changed, through its whole chain, in the checkout it was applied to. */
export function assertSubmittedLinksInside(checkoutDir: string, applied: FileDiff[]): void {
  for (const file of applied) {
    if (file.status === "deleted") continue;
    let stat;
    try {
      stat = lstatSync(join(checkoutDir, file.path));
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) assertResolvesInside(checkoutDir, file.path);
  }
}
