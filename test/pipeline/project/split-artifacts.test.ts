import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../../pipeline/logger.ts";
import { Project } from "../../../pipeline/project/project.ts";
import { readSplitArtifacts } from "../../../pipeline/project/split-artifacts.ts";
import { BUILT_STAGES } from "../../../stages/index.ts";
import { tempDir } from "../../helpers/tmp.ts";

const split = (id: string, extra: Record<string, unknown>) => ({
  task_id: id,
  repo: "o/r",
  base_commit: "a".repeat(40),
  implementation_patch: "",
  test_patch: "",
  files: [],
  source_files: ["r/m.py"],
  source_dirs: ["r"],
  excluded_files: [],
  classification: { profile: "o__r.json", profile_sha256: "0".repeat(64) },
  upstream_patch: "",
  ...extra,
});

function projectWith(records: object[]): { project: Project; path: string } {
  const dir = tempDir();
  const project = Project.of({ name: "p", seed: "1", workDir: join(dir, "work"), baseDir: dir, stageConfigs: {} }, { stages: BUILT_STAGES, log: silentLogger });
  const path = project.store.artifactPath("split", "splits");
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, records.map((r) => JSON.stringify(r) + "\n").join(""));
  return { project, path };
}

describe("the splits a command reads outside the engine", () => {
  it("carry the pull request's date and version, so no command reads mine's candidates for them", async () => {
    const { project } = projectWith([
      split("o__r-1", { created_at: "2020-01-01T00:00:00Z", version: "1.2" }),
      split("o__r-2", { created_at: "2021-01-01T00:00:00Z" }),
    ]);
    const { splits } = await readSplitArtifacts(project);
    expect(splits.map((s) => [s.task_id, s.created_at, s.version])).toEqual([
      ["o__r-1", "2020-01-01T00:00:00Z", "1.2"],
      ["o__r-2", "2021-01-01T00:00:00Z", undefined],
    ]);
  });

  it("refuse a split made before they were carried, naming the file, the record and the field", async () => {
    const { project, path } = projectWith([split("o__r-1", { created_at: "2020-01-01T00:00:00Z" }), split("o__r-2", {})]);
    await expect(readSplitArtifacts(project)).rejects.toThrow(`${path}: record o__r-2: field created_at: `);
    await expect(readSplitArtifacts(project)).rejects.toThrow(/up to split again\)$/);
  });
});
