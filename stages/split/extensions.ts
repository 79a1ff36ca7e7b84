import { z } from "zod";
import { readTestPatch } from "../../pipeline/changes/added-tests.ts";
import { classifyPath } from "../../pipeline/changes/classify.ts";
import { DiffParseError, parseGitDiff } from "../../pipeline/changes/diff.ts";
import type { ClassificationRules } from "../../pipeline/schemas/repo-profile.ts";
import type { ExtensionStage } from "../../pipeline/schemas/split.ts";
import { readReviewed } from "../../pipeline/validation.ts";

/**
 * A reviewed extension file, `<extensions_dir>/<task id>.yaml`: benchmark-authored stages (the
 * study's Appendix C.3), each an ordinary user-visible request with the implementation that
 * satisfies it (a git diff over the reference fix and the earlier stages' implementations) and
 * regression tests (a git diff over the reference tests and the earlier stages' tests).
 */
export const ExtensionFile = z
  .strictObject({
    task: z.string().min(1),
    author: z.string().min(1),
    reason: z.string().min(1),
    /**
     * Stages from the pull request's own history (SPEC §2.4): its first stage ends at a commit of
     * the pull request, each later stage is the commits after it up to the one named, with a request
     * written for it; the rest of the upstream change, and the file's own stages, come after.
     */
    upstream_commits: z
      .strictObject({
        first_stage_until: z.string().min(7),
        stages: z.array(z.strictObject({ commit: z.string().min(7), request: z.string().trim().min(1) })).min(1),
      })
      .optional(),
    stages: z
      .array(
        z.strictObject({
          /** Placed after this upstream stage (as reconstructed and curated); absent: after the last one. */
          after: z.number().int().min(1).optional(),
          request: z.string().trim().min(1),
          implementation: z.string().min(1),
          tests: z.string().min(1),
        }),
      )
      .default([]),
  })
  .refine((f) => f.stages.length > 0 || f.upstream_commits, { message: "a file adds at least one stage: stages, or upstream_commits", path: ["stages"] });
export type ExtensionFile = z.infer<typeof ExtensionFile>;

/** An extension file that is not what it must be: the message names the file and the field. */
export class ExtensionError extends Error {
  override name = "ExtensionError";
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

export function parseExtension(path: string, text: string): ExtensionFile {
  const error = (message: string) => new ExtensionError(message, message.slice(path.length + 2).match(/^field (\S+?):/)?.[1] ?? "(file)");
  return readReviewed(path, ExtensionFile, { text, format: "yaml", error });
}

/** A diff block as git apply takes it: YAML's block scalars may leave the last newline off. */
const asPatch = (text: string) => (text.endsWith("\n") ? text : `${text}\n`);

/**
 * Checks what can be checked without running anything, and returns the stages as the split
 * artifact keeps them: each implementation touches source files only and each test patch test
 * files only; each test patch adds at least one test function and removes nothing (a later stage
 * never rewrites what an earlier one, or the upstream fix, checks: requirements stay cumulative);
 * no test is added twice; stages keep their order. `upstreamTests` are the test functions the
 * reference's own test patch adds.
 */
export function checkExtension(
  path: string,
  taskId: string,
  file: ExtensionFile,
  rules: ClassificationRules,
  upstreamTests: readonly string[],
  /** Stages that come before these (the pull request's own commits): these are numbered after them. */
  before: readonly ExtensionStage[] = [],
): ExtensionStage[] {
  if (file.task !== taskId) throw new ExtensionError(`${path}: field task: names ${file.task}, but the file is ${taskId}'s`, "task");
  const seen = new Map<string, string>([
    ...upstreamTests.map((t): [string, string] => [t, "the upstream test patch"]),
    ...before.flatMap((s) => s.tests.map((t): [string, string] => [t, `${s.field} of this file`])),
  ]);
  let lastAfter = 1;
  return file.stages.map((stage, i) => {
    const where = `stages.${i}`;
    const fail = (field: string, message: string): never => {
      throw new ExtensionError(`${path}: field ${where}.${field}: ${message}`, `${where}.${field}`);
    };
    if (stage.after !== undefined && stage.after < lastAfter)
      fail("after", `${stage.after} places this stage before the one above it (after ${lastAfter}); stages apply in the order they are listed`);
    if (stage.after !== undefined) lastAfter = stage.after;
    for (const [field, wanted] of [
      ["implementation", "source"],
      ["tests", "test"],
    ] as const) {
      let diffs;
      try {
        diffs = parseGitDiff(asPatch(stage[field]));
      } catch (error) {
        if (error instanceof DiffParseError) fail(field, `not a git diff: ${error.message}`);
        throw error;
      }
      if (!diffs.length) fail(field, "holds no file change");
      for (const diff of diffs) {
        const { class: found } = classifyPath(diff.path, rules);
        if (found !== wanted)
          fail(
            field,
            `changes ${diff.path}, a ${found} file; ${field === "tests" ? "the tests go" : "source changes go"} in ${field === "tests" ? "tests" : "implementation"} only`,
          );
      }
    }
    const reading = readTestPatch(asPatch(stage.tests));
    if (!reading.added.length) fail("tests", "adds no test function (def test_…): a stage without its own tests cannot be verified");
    if (reading.removed.length)
      fail(
        "tests",
        `removes or rewrites ${reading.removed.length} line(s) (first: ${reading.removed[0]}): an authored stage's tests only add, so that no later stage rewrites what an earlier one checks`,
      );
    for (const test of reading.added) {
      const earlier = seen.get(test);
      if (earlier) fail("tests", `adds ${test}, which ${earlier} already adds`);
      seen.set(test, `stage ${i + 1} of this file`);
    }
    return {
      index: before.length + i + 1,
      field: where,
      file: path,
      author: file.author,
      reason: file.reason,
      after: stage.after ?? null,
      request: stage.request.trim(),
      implementation_patch: asPatch(stage.implementation),
      test_patch: asPatch(stage.tests),
      tests: reading.added,
    };
  });
}

/** The patches that make the whole reference, in the order they apply: the upstream change, then each stage's implementation and tests. */
export function referencePatches(upstreamDiff: string, stages: readonly ExtensionStage[]): { name: string; text: string }[] {
  return [
    { name: "the upstream reference change", text: upstreamDiff },
    ...stages.flatMap((s) => [
      { name: `${s.field}.implementation`, text: s.implementation_patch },
      { name: `${s.field}.tests`, text: s.test_patch },
    ]),
  ];
}
