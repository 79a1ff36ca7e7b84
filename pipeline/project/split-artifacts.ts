import { Candidate } from "../schemas/candidate.ts";
import type { StageName } from "../schemas/common.ts";
import { SplitChange } from "../schemas/split.ts";
import { InputError } from "../validation.ts";
import type { Project } from "./project.ts";

/**
 * What a pipeline has split so far, for commands that work on its tasks outside the engine
 * (`images build`, `qualify --task`): its splits and candidates, and its profiles.
 */
export async function readSplitArtifacts(project: Project) {
  const { store } = project;
  const read = async (stage: StageName, name: string) =>
    (
      await store.readRecords(stage, name).catch(() => {
        throw new InputError(`${store.artifactPath(stage, name)} is missing: run 'switch-swe run --config ${project.configPath ?? "FILE"}' up to split first`);
      })
    ).records;
  const splits = (await read("split", "splits")).map((r) => SplitChange.parse(r));
  const candidates = new Map((await read("mine", "candidates")).map((r) => Candidate.parse(r)).map((c) => [c.id, c]));
  return { splits, candidates, splitsPath: store.artifactPath("split", "splits"), ...project.profiles() };
}
