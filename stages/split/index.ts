import { z } from "zod";
import { cloneSourceOf, profileFileName } from "../../pipeline/profiles/load.ts";
import { Candidate } from "../../pipeline/schemas/candidate.ts";
import { SplitChange } from "../../pipeline/schemas/split.ts";
import { defineStage, input, RecordError } from "../../pipeline/engine/stage.ts";
import { DiffParseError } from "../../pipeline/changes/diff.ts";
import { splitFields, splitReferenceChange } from "./split.ts";

export { classifyPath } from "../../pipeline/changes/classify.ts";
export { parseGitDiff } from "../../pipeline/changes/diff.ts";
export { parentDir, splitFields, splitReferenceChange } from "./split.ts";

export const SplitConfig = z.strictObject({
  /** Check with `git apply --check` that both patches apply to the base revision (needs the profile's clone_url). */
  check_apply: z.boolean().default(true),
});
export type SplitConfig = z.infer<typeof SplitConfig>;

export const splitStage = defineStage({
  name: "split",
  summary: "classify changed files and split each reference change into implementation and test patches",
  example: "switch-swe split --config data/demo/pipeline.yaml   |   switch-swe split --diff change.diff --profile data/repos/o__n.json --json",
  version: "1",
  module: import.meta.url,
  configSchema: SplitConfig,
  settings: ["profiles"],
  inputs: { candidates: input("mine", "candidates", Candidate) },
  outputs: [{ name: "splits", schema: SplitChange, key: (s: SplitChange) => s.task_id }],
  async run(ctx, { candidates }) {
    const { profiles, errors } = ctx.profiles;
    const splits = await ctx.mapRecords(candidates, {
      id: (c) => c.id,
      dependsOn: (c) => profiles.get(c.repo)?.sha256 ?? errors.get(c.repo) ?? null,
      concurrency: 2,
      work: async (candidate) => {
        const loaded = profiles.get(candidate.repo);
        if (!loaded) {
          const why =
            errors.get(candidate.repo) ??
            `there is no profile ${ctx.profiles.dir}/${profileFileName(candidate.repo)}; write one with 'switch-swe repo init ${candidate.repo} --clone PATH'`;
          throw new RecordError("unknown_repository", `${candidate.id}: field repo: ${why}`, { field: "repo" });
        }
        let result;
        try {
          result = splitReferenceChange(candidate.reference_diff, loaded.profile.classification);
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
        if (ctx.config.check_apply) {
          if (!loaded.profile.clone_url)
            throw new RecordError(
              "invalid_field",
              `${candidate.id}: ${loaded.file}: field clone_url is needed to check that the patches apply (or set stages.split.check_apply: false)`,
              { field: "clone_url" },
            );
          const mirror = await ctx.mirrors.ensure(candidate.repo, cloneSourceOf(candidate.repo, loaded, ctx.resolvePath), candidate.base_commit);
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
        return SplitChange.parse({
          task_id: candidate.id,
          repo: candidate.repo,
          base_commit: candidate.base_commit,
          ...splitFields(result),
          classification: { profile: loaded.file, profile_sha256: loaded.sha256 },
        });
      },
    });
    return { splits };
  },
});
