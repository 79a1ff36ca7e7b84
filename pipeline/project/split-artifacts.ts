import type { StageName } from "../schemas/common.ts";
import { SplitChange } from "../schemas/split.ts";
import { describeFirstIssue, InputError } from "../validation.ts";
import type { Project } from "./project.ts";

/**
 * What a pipeline has split so far, for commands that work on its tasks outside the engine
 * (`images build`, `qualify task`, `extend check`): its splits (which carry what planning their
 * environments needs of mine's candidates), and its profiles.
 */
export async function readSplitArtifacts(project: Project) {
  const { store } = project;
  const read = async (stage: StageName, name: string) =>
    (
      await store.readRecords(stage, name).catch(() => {
        throw new InputError(`${store.artifactPath(stage, name)} is missing: run 'switch-swe run --config ${project.configPath ?? "FILE"}' up to split first`);
      })
    ).records;
  const splitsPath = store.artifactPath("split", "splits");
  const run = `run 'switch-swe run --config ${project.configPath ?? "FILE"}' up to split again`;
  const splits = (await read("split", "splits")).map((r, index) => {
    const parsed = SplitChange.safeParse(r);
    if (parsed.success) return parsed.data;
    // A split made by an older switch-swe lacks what is carried now (created_at, version): said so.
    const id = (r as { task_id?: unknown }).task_id;
    throw new InputError(`${splitsPath}: record ${typeof id === "string" ? id : index + 1}: ${describeFirstIssue(parsed.error, r)} (${run})`);
  });
  return { splits, splitsPath, ...project.profiles() };
}
