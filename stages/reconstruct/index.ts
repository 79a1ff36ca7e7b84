import { basename } from "node:path";
import { z } from "zod";
import { recipeFor } from "../../pipeline/profiles/recipes.ts";
import { describeTestCommand } from "../../pipeline/executors/runners.ts";
import { Candidate } from "../../pipeline/schemas/candidate.ts";
import { QualificationRecord } from "../../pipeline/schemas/qualification.ts";
import { SplitChange } from "../../pipeline/schemas/split.ts";
import { CommentClassRecord, Task } from "../../pipeline/schemas/task.ts";
import { defineStage, input, RecordError } from "../../pipeline/engine/stage.ts";
import { describeInvalid } from "../../pipeline/decode.ts";
import { referenceLines } from "../../pipeline/changes/reference-quotes.ts";
import { applyCuration, CurationError, parseCuration } from "./curation.ts";
import { reconstructRequests } from "./reconstruct.ts";
import { withAuthoredStages } from "./authored.ts";

export const ReconstructConfig = z.strictObject({
  /** Reviewed curation files, one per task: `<task id>.yaml`. */
  curation_dir: z.string().default("data/curation"),
});

export const reconstructStage = defineStage({
  name: "reconstruct",
  summary: "build each task's ordered, cumulative requests with provenance, applying reviewed curation",
  example: "switch-swe reconstruct --config data/demo/pipeline.yaml",
  version: "1",
  module: import.meta.url,
  configSchema: ReconstructConfig,
  settings: ["profiles"],
  inputs: {
    candidateList: input("mine", "candidates", Candidate),
    splitList: input("split", "splits", SplitChange),
    qualifications: input("qualify", "qualifications", QualificationRecord),
  },
  outputs: [
    { name: "tasks", schema: Task, key: (t: Task) => t.id },
    { name: "comments", schema: CommentClassRecord, key: (c: CommentClassRecord) => `${c.task_id}\0${String(c.item_id).padStart(20, "0")}` },
  ],
  // No curation directory means nothing was curated.
  externalFiles: (config) => [{ path: config.curation_dir, optional: true }],
  async run(ctx, { candidateList, splitList, qualifications }) {
    const { profiles } = ctx.profiles;
    const curations = new Map(ctx.files.filter((f) => f.path.endsWith(".yaml")).map((f) => [basename(f.path, ".yaml"), f]));
    const candidates = new Map(candidateList.map((c) => [c.id, c]));
    const splits = new Map(splitList.map((s) => [s.task_id, s]));
    const kept = qualifications.filter((q) => q.kept);
    const results = await ctx.mapRecords(kept, {
      id: (q) => q.task_id,
      dependsOn: (q) => ({
        candidate: candidates.get(q.task_id),
        split: splits.get(q.task_id),
        curation: curations.get(q.task_id)?.text ?? null,
        profile: profiles.get(splits.get(q.task_id)?.repo ?? "")?.sha256 ?? null,
      }),
      work: (q) => {
        const candidate = candidates.get(q.task_id)!;
        const split = splits.get(q.task_id)!;
        const loaded = ctx.resources.profileOf(split.repo);
        const result = reconstructRequests(candidate, referenceLines(split.implementation_patch));
        let requests = result.requests;
        const curation = curations.get(q.task_id);
        if (curation) {
          try {
            if (curation.invalid?.length) throw new CurationError(`${curation.path}: not valid UTF-8 at ${describeInvalid(curation.invalid)}`);
            requests = applyCuration(requests, parseCuration(curation.path, curation.text), curation.path);
          } catch (error) {
            if (error instanceof CurationError) throw new RecordError("invalid_field", error.message, { file: curation.path, field: "actions" });
            throw error;
          }
        }
        if (!requests.length) throw new RecordError("too_few_stages", `${q.task_id}: no request could be reconstructed`);
        if (split.extensions?.length) requests = withAuthoredStages(q.task_id, requests, split.extensions, q.stage_tests ?? []);
        const comments = result.comments.map((c) => CommentClassRecord.parse(c));
        // The recipe on the Python the task was qualified on (a fallback where the executor had no other).
        const environment = recipeFor(loaded.profile, { id: q.task_id, ...(split.version !== undefined ? { version: split.version } : {}) }, q.python);
        const task = Task.parse({
          id: q.task_id,
          snapshot: { repo: split.repo, base_commit: split.base_commit, environment },
          requests,
          verifier: {
            test_patch: split.test_patch,
            test_command: describeTestCommand(environment, q.test_args),
            fail_to_pass: q.fail_to_pass,
            pass_to_pass: q.pass_to_pass,
          },
          source_files: split.source_files,
          source_dirs: split.source_dirs,
          focus_candidate: requests.length >= 2,
          curated: Boolean(curation),
        });
        return { task, comments };
      },
    });
    return { tasks: results.map((r) => r.task), comments: results.flatMap((r) => r.comments) };
  },
});
