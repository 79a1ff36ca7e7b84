import { basename } from "node:path";
import { z } from "zod";
import { Candidate } from "../../pipeline/schemas/candidate.ts";
import { type ExtensionStage, SplitChange } from "../../pipeline/schemas/split.ts";
import { upstreamCommitStages } from "./upstream-commits.ts";
import { defineStage, input, RecordError } from "../../pipeline/engine/stage.ts";
import { DiffParseError } from "../../pipeline/changes/diff.ts";
import type { composePatches } from "../../pipeline/git.ts";
import { splitFields, splitReferenceChange } from "./split.ts";
import { checkExtension, ExtensionError, parseExtension, referencePatches } from "./extensions.ts";
import { readTestPatch } from "../../pipeline/changes/added-tests.ts";
import { describeInvalid } from "../../pipeline/decode.ts";

export { classifyPath } from "../../pipeline/changes/classify.ts";
export { parseGitDiff } from "../../pipeline/changes/diff.ts";
export { parentDir, splitFields, splitReferenceChange } from "./split.ts";

export const SplitConfig = z.strictObject({
  /** Check with `git apply --check` that both patches apply to the base revision (in a mirror of the repository: its clone_url, GitHub's without one, or a local copy). */
  check_apply: z.boolean().default(true),
  /** Reviewed extension files, one per task: `<task id>.yaml` (benchmark-authored stages, SPEC §2.4). Relative to the config file. */
  extensions_dir: z.string().default("data/extensions"),
});
export type SplitConfig = z.infer<typeof SplitConfig>;

export const splitStage = defineStage({
  name: "split",
  summary: "classify changed files and split each reference change into implementation and test patches",
  example: "switch-swe split --config data/demo/pipeline.yaml   |   switch-swe split diff change.diff --profile data/repos/o__n.json --json",
  version: "1",
  module: import.meta.url,
  configSchema: SplitConfig,
  settings: ["profiles"],
  inputs: { candidates: input("mine", "candidates", Candidate) },
  outputs: [{ name: "splits", schema: SplitChange, key: (s: SplitChange) => s.task_id }],
  // No extensions directory means no task is extended.
  externalFiles: (config) => [{ path: config.extensions_dir, optional: true }],
  async run(ctx, { candidates }) {
    const { profiles, errors } = ctx.profiles;
    const extensions = new Map(ctx.files.filter((f) => f.path.endsWith(".yaml")).map((f) => [basename(f.path, ".yaml"), f]));
    const splits = await ctx.mapRecords(candidates, {
      id: (c) => c.id,
      dependsOn: (c) => ({ profile: profiles.get(c.repo)?.sha256 ?? errors.get(c.repo) ?? null, extension: extensions.get(c.id)?.text ?? null }),
      concurrency: 2,
      work: async (candidate) => {
        const loaded = ctx.resources.profileOf(candidate.repo);
        const result = referenceSplit(candidate, loaded.profile.classification);
        if (ctx.config.check_apply) {
          const mirror = await ctx.resources.mirrorAt(candidate.repo, candidate.base_commit);
          for (const [name, patch] of [
            ["implementation", result.implementationPatch],
            ["test", result.testPatch],
          ] as const) {
            const check = await ctx.mirrors.applyCheck(mirror, candidate.base_commit, patch);
            if (!check.ok)
              throw new RecordError("patch_does_not_apply", `${candidate.id}: the ${name} patch does not apply to ${candidate.base_commit}: ${check.error}`, {
                field: "reference_diff",
              });
          }
        }
        const classification = { profile: loaded.file, profile_sha256: loaded.sha256 };
        const extension = extensions.get(candidate.id);
        const mirror = await ctx.resources.mirrorAt(candidate.repo, candidate.base_commit);
        const compose = (patches: { name: string; text: string }[]) => ctx.mirrors.compose(mirror, candidate.base_commit, patches);
        if (!extension)
          return SplitChange.parse({
            task_id: candidate.id,
            repo: candidate.repo,
            base_commit: candidate.base_commit,
            ...splitFields(result),
            classification,
            upstream_patch: await historyPatch(candidate.id, compose, result),
            ...pullRequestFacts(candidate),
          });
        return extendedSplit(
          candidate,
          result,
          {
            file: extension,
            rules: loaded.profile.classification,
            compose,
            git: (args) => ctx.mirrors.git(mirror, args),
          },
          classification,
        );
      },
    });
    return { splits };
  },
});

/** The reference change split by the profile's classes; a change with no source file or no test file is rejected, saying why. */
function referenceSplit(candidate: Candidate, rules: Parameters<typeof splitReferenceChange>[1]): ReturnType<typeof splitReferenceChange> {
  let result;
  try {
    result = splitReferenceChange(candidate.reference_diff, rules);
  } catch (error) {
    if (error instanceof DiffParseError)
      throw new RecordError("unparsable_diff", `${candidate.id}: field reference_diff: ${error.message}`, { field: "reference_diff" });
    throw error;
  }
  if (!result.sourceFiles.length)
    throw new RecordError(
      "no_source_changes",
      `${candidate.id}: the reference change modifies no source file (only ${result.files.map((f) => `${f.path} [${f.class}]`).join(", ") || "nothing"})`,
      { field: "reference_diff" },
    );
  if (!result.testPatch)
    throw new RecordError("no_test_changes", `${candidate.id}: the reference change has no test file, so it has no held-out tests`, {
      field: "reference_diff",
    });
  return result;
}

/**
 * A task with benchmark-authored extensions: its reference becomes the upstream change and every
 * stage's implementation and tests, composed over the base (so each stage is proved to apply over
 * what comes before it), split again; the stages and the upstream implementation are kept for
 * qualify's stage-by-stage runs and reconstruct's requests.
 */
export async function extendedSplit(
  candidate: Candidate,
  upstream: ReturnType<typeof splitReferenceChange>,
  extension: {
    file: { path: string; text: string; invalid?: unknown[] };
    rules: Parameters<typeof splitReferenceChange>[1];
    compose: (patches: { name: string; text: string }[]) => ReturnType<typeof composePatches>;
    git: (args: string[]) => Promise<string>;
  },
  classification: SplitChange["classification"],
): Promise<SplitChange> {
  const { path, text } = extension.file;
  let stages: ExtensionStage[];
  let cut: Awaited<ReturnType<typeof upstreamCommitStages>>;
  let first = upstream;
  try {
    if (extension.file.invalid?.length) throw new ExtensionError(`${path}: not valid UTF-8 at ${describeInvalid(extension.file.invalid as never)}`, "(file)");
    const parsed = parseExtension(path, text);
    // Stages from the pull request's own commits come first; the record's request then asks for the first part alone.
    cut = await upstreamCommitStages(extension.git, path, candidate.base_commit, parsed, extension.rules);
    if (cut) first = splitReferenceChange(cut.firstDiff, extension.rules);
    const fromHistory = cut?.stages ?? [];
    stages = [...fromHistory, ...checkExtension(path, candidate.id, parsed, extension.rules, readTestPatch(first.testPatch).added, fromHistory)];
  } catch (error) {
    if (error instanceof ExtensionError) throw new RecordError("invalid_extension", `${candidate.id}: ${error.message}`, { file: path, field: error.field });
    throw error;
  }
  const composed = await extension.compose(referencePatches(cut?.firstDiff ?? candidate.reference_diff, stages));
  if (!composed.ok)
    throw new RecordError(
      "patch_does_not_apply",
      `${candidate.id}: ${path}: field ${composed.name}: does not apply over the reference change and the stages before it: ${composed.error}`,
      { file: path, field: composed.name },
    );
  const whole = splitReferenceChange(composed.diff, extension.rules);
  return SplitChange.parse({
    task_id: candidate.id,
    repo: candidate.repo,
    base_commit: candidate.base_commit,
    ...splitFields(whole),
    classification,
    upstream_implementation_patch: first.implementationPatch,
    upstream_patch: cut?.historyPatch ?? (await historyPatch(candidate.id, extension.compose, upstream)),
    extensions: stages,
    ...pullRequestFacts(candidate),
  });
}

/**
 * The upstream change's source and test files as one full-index diff over the base (made by git
 * from the two patches): the answer rule reverses it three ways from its blobs.
 */
async function historyPatch(
  id: string,
  compose: (patches: { name: string; text: string }[]) => ReturnType<typeof composePatches>,
  change: { implementationPatch: string; testPatch: string },
): Promise<string> {
  const composed = await compose([
    { name: "implementation", text: change.implementationPatch },
    { name: "test", text: change.testPatch },
  ]);
  if (!composed.ok)
    throw new RecordError("patch_does_not_apply", `${id}: the ${composed.name} patch does not apply to the base: ${composed.error}`, {
      field: "reference_diff",
    });
  return composed.diff;
}

/**
 * What later stages need of the candidate, carried on the split so none of them reads mine: where
 * the change was merged (the answer rule's way into history), and the pull request's date and
 * version (what dates and picks its environment).
 */
function pullRequestFacts(candidate: Candidate): Pick<SplitChange, "pull_number" | "merge_commit" | "created_at" | "version"> {
  return {
    pull_number: candidate.pull_number,
    merge_commit: candidate.pull_request?.merge_commit_sha ?? null,
    created_at: candidate.created_at,
    ...(candidate.version !== undefined ? { version: candidate.version } : {}),
  };
}
