import type { AnyStage } from "./stage.ts";
import { loadConfig } from "./config.ts";
import { loadProfilesDir } from "../profiles/load.ts";
import { Candidate } from "../schemas/candidate.ts";
import type { StageName } from "../schemas/common.ts";
import { SplitChange } from "../schemas/split.ts";
import { ArtifactStore } from "./store.ts";
import { InputError } from "../validation.ts";

/**
 * What a pipeline has split so far, for commands that work on its tasks outside the engine
 * (`images build`, `qualify --task`): its config, its splits and candidates, and its profiles.
 */
export async function readSplitArtifacts(configPath: string, stages: AnyStage[]) {
  const config = loadConfig(configPath, stages);
  const store = new ArtifactStore(config.workDir);
  const read = async (stage: StageName, name: string) =>
    (
      await store.readRecords(stage, name).catch(() => {
        throw new InputError(`${store.artifactPath(stage, name)} is missing: run 'switch-swe run --config ${configPath}' up to split first`);
      })
    ).records;
  const splits = (await read("split", "splits")).map((r) => SplitChange.parse(r));
  const candidates = new Map((await read("mine", "candidates")).map((r) => Candidate.parse(r)).map((c) => [c.id, c]));
  return { config, splits, candidates, splitsPath: store.artifactPath("split", "splits"), ...loadProfilesDir(config.config.profiles_dir, config.baseDir) };
}
