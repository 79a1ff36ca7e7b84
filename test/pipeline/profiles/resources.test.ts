import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatSummary } from "../../../pipeline/engine/engine.ts";
import { environmentSpec } from "../../../pipeline/executors/environment.ts";
import type { QualificationRecord } from "../../../pipeline/schemas/qualification.ts";
import { EnvironmentRecipe } from "../../../pipeline/schemas/repo-profile.ts";
import type { Task } from "../../../pipeline/schemas/task.ts";
import { runLineStage } from "../../helpers/line-stage.ts";
import { tempDir } from "../../helpers/tmp.ts";

describe("a task's resources", () => {
  it("a repository without a profile is the one unknown_repository reject, naming the field and the profile to write", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "repos"));
    writeFileSync(
      join(dir, "repos", "o__known.json"),
      JSON.stringify({ repo: "o/known", clone_url: "../nowhere", classification: { package_roots: ["known"] }, environment: { python: "3.11" } }),
    );
    writeFileSync(join(dir, "repos.txt"), "o/known\no/other\n");
    const { summary, rejects } = await runLineStage(dir, "mine", "repos.txt", (ctx, repo) => ({
      id: repo.replace("/", "__"),
      value: ctx.resources.cloneSource(ctx.resources.profileOf(repo).profile.repo).length,
    }));
    expect(summary.stages[0], formatSummary(summary)).toMatchObject({ out: 1, rejected: 1, by_reason: { unknown_repository: 1 } });
    const [reject] = rejects;
    expect(reject).toMatchObject({
      record_id: "o__other",
      reason: "unknown_repository",
      field: "repo",
      message: "o__other: field repo: there is no profile repos/o__other.json; write one with 'switch-swe repo init o/other --clone PATH'",
    });
  });

  it("a stage reads a task's environment back from qualify's record; one that no longer matches is the record's reject naming the field", async () => {
    const dir = tempDir();
    const recipe = EnvironmentRecipe.parse({ python: "3.11", pip_requirements: ["pytest"] });
    const env = environmentSpec("o/r", recipe, "2020-01-01T00:00:00Z");
    const task = (id: string) => ({ id, snapshot: { repo: "o/r", base_commit: "a".repeat(40), environment: recipe } }) as Task;
    const record = (id: string, asOf: string) => ({ task_id: id, environment_key: env.key, as_of: asOf }) as QualificationRecord;
    // o__r-1's record is what qualify wrote; o__r-2's date was changed after it ran
    const records = new Map([record("o__r-1", "2020-01-01T00:00:00Z"), record("o__r-2", "2021-01-01T00:00:00Z")].map((q) => [q.task_id, q]));
    mkdirSync(join(dir, "repos"));
    writeFileSync(join(dir, "tasks.txt"), "o__r-1\no__r-2\n");
    const { summary, rejects } = await runLineStage(dir, "oracle", "tasks.txt", (ctx, id) => ({
      id,
      value: ctx.resources.environmentOf(task(id), records.get(id)).key === env.key ? 1 : 0,
    }));
    expect(summary.stages[0], formatSummary(summary)).toMatchObject({ out: 1, rejected: 1, by_reason: { malformed_record: 1 } });
    expect(readFileSync(join(dir, "work", "artifacts", "oracle", "items.jsonl"), "utf8")).toBe(`{"id":"o__r-1","value":1}\n`);
    const [reject] = rejects;
    expect(reject).toMatchObject({ record_id: "o__r-2", reason: "malformed_record", field: "environment_key" });
    expect(reject.message).toMatch(/^o__r-2: qualify's qualifications, record o__r-2, field environment_key: qualified in environment [0-9a-f]{64}, but/);
  });
});
