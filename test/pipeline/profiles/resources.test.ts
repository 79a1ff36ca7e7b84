import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { formatSummary } from "../../../pipeline/engine/engine.ts";
import { PipelineSettings } from "../../../pipeline/engine/settings.ts";
import { defineStage } from "../../../pipeline/engine/stage.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { silentProgress } from "../../../pipeline/progress.ts";
import { runProjectOnce } from "../../../pipeline/project/project.ts";
import { tempDir } from "../../helpers/tmp.ts";

const Item = z.object({ id: z.string(), value: z.number() });
type Item = z.infer<typeof Item>;

describe("a task's resources", () => {
  it("a repository without a profile is the one unknown_repository reject, naming the field and the profile to write", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "repos"));
    writeFileSync(
      join(dir, "repos", "o__known.json"),
      JSON.stringify({ repo: "o/known", clone_url: "../nowhere", classification: { package_roots: ["known"] }, environment: { python: "3.11" } }),
    );
    writeFileSync(join(dir, "repos.txt"), "o/known\no/other\n");
    const profiled = defineStage({
      name: "mine",
      summary: "",
      example: "",
      version: "1",
      module: import.meta.url,
      configSchema: z.strictObject({}),
      settings: ["profiles"],
      inputs: {},
      outputs: [{ name: "items", schema: Item, key: (i: Item) => i.id }],
      externalFiles: () => ["repos.txt"],
      async run(ctx) {
        const repos = ctx.files[0]!.text.split("\n").filter(Boolean);
        const items = await ctx.mapRecords(repos, {
          id: (repo) => repo.replace("/", "__"),
          work: (repo) => ({ id: repo.replace("/", "__"), value: ctx.resources.cloneSource(ctx.resources.profileOf(repo).profile.repo).length }),
        });
        return { items };
      },
    });
    const summary = await runProjectOnce({
      workDir: join(dir, "work"),
      baseDir: dir,
      stages: [profiled],
      stageConfigs: {},
      settings: PipelineSettings.parse({ profiles_dir: "repos" }),
      seed: "1",
      log: silentLogger,
      progress: silentProgress,
    });
    expect(summary.stages[0], formatSummary(summary)).toMatchObject({ out: 1, rejected: 1, by_reason: { unknown_repository: 1 } });
    const [reject] = readFileSync(join(dir, "work", "artifacts", "mine", "rejects.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(reject).toMatchObject({
      record_id: "o__other",
      reason: "unknown_repository",
      field: "repo",
      message: "o__other: field repo: there is no profile repos/o__other.json; write one with 'switch-swe repo init o/other --clone PATH'",
    });
  });
});
