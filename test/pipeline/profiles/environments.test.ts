import { describe, expect, it } from "vitest";
import { EnvironmentError, environmentsForTasks, recordedEnvironment } from "../../../pipeline/profiles/environments.ts";
import { loadProfiles } from "../../../pipeline/profiles/load.ts";
import type { QualificationRecord } from "../../../pipeline/schemas/qualification.ts";
import type { SplitChange } from "../../../pipeline/schemas/split.ts";
import type { Task } from "../../../pipeline/schemas/task.ts";

const { profiles } = loadProfiles([
  {
    path: "o__r.json",
    text: JSON.stringify({
      repo: "o/r",
      environment: { python: ["3.11", "3.9"], pip_requirements: ["pytest"] },
      // one task of the repository accepts only a Python no executor here offers
      environment_overrides: [
        { tasks: ["o__r-3"], recipe: { python: "3.6" } },
        { versions: ["2.0"], recipe: { pins: ["pytest==7.0.0"] } },
      ],
    }),
  },
]);
// Only the fields the plan reads: the task's repository and id, its pull request's date and version (carried from mine).
const split = (id: string, created_at: string, version?: string) => ({ task_id: id, repo: "o/r", created_at, ...(version ? { version } : {}) }) as SplitChange;
const offer = { installed: ["3.9", "3.11"], downloads: false, describe: "the test's Pythons" };
const plan = environmentsForTasks(
  [
    split("o__r-1", "2021-03-01T00:00:00Z"),
    split("o__r-2", "2020-01-01T00:00:00Z"),
    split("o__r-3", "2022-01-01T00:00:00Z"),
    split("o__r-4", "2023-01-01T00:00:00Z", "2.0"),
  ],
  profiles,
  offer,
);

describe("the environment plan", () => {
  it("takes the recipe by the version and the date the split carries", () => {
    const versioned = plan.environmentOf("o__r-4");
    expect(versioned.recipe.pins).toEqual(["pytest==7.0.0"]);
    expect(versioned.asOf).toBe("2023-01-01T00:00:00Z");
    expect(plan.environmentOf("o__r-1").recipe.pins).toEqual([]);
  });

  it("gives tasks sharing a recipe one environment, as of the earliest of them", () => {
    const one = plan.environmentOf("o__r-1");
    expect(one.key).toBe(plan.environmentOf("o__r-2").key);
    expect(one.asOf).toBe("2020-01-01T00:00:00Z");
    expect(one.recipe.python).toBe("3.11");
    expect(plan.size).toBe(2);
    expect(plan.dependency("o__r-1")).toBe(one.key);
  });

  it("refuses a task whose recipe accepts no Python the executor offers, naming the field and both lists", () => {
    expect(plan.planned("o__r-3")).toBeUndefined();
    const refused = (() => {
      try {
        plan.environmentOf("o__r-3");
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(EnvironmentError);
    expect(refused).toMatchObject({ reason: "build_failed", field: "environment.python" });
    expect((refused as Error).message).toMatch(/^the recipe accepts Python 3\.6; the executor offers 3\.9, 3\.11 \(the test's Pythons\)/);
    expect(plan.dependency("o__r-3")).toBe((refused as Error).message);
  });
});

describe("the environment read back from qualify's record", () => {
  const env = plan.environmentOf("o__r-1");
  const task = { id: "o__r-1", snapshot: { repo: "o/r", base_commit: "a".repeat(40), environment: env.recipe } } as Task;
  const record = { task_id: "o__r-1", environment_key: env.key, as_of: env.asOf } as QualificationRecord;

  it("is the environment qualify planned and ran the task in", () => {
    expect(recordedEnvironment(task, record)).toEqual(env);
  });

  it("refuses a task whose recipe or date no longer gives the key qualify recorded, naming the record and the field", () => {
    const later = { ...record, as_of: "2021-03-01T00:00:00Z" };
    expect(() => recordedEnvironment(task, later)).toThrow(EnvironmentError);
    expect(() => recordedEnvironment(task, later)).toThrow(
      new RegExp(
        `^qualify's qualifications, record o__r-1, field environment_key: qualified in environment ${env.key}, but .* as of 2021-03-01T00:00:00Z is [0-9a-f]{64}$`,
      ),
    );
    const otherRecipe = { ...task, snapshot: { ...task.snapshot, environment: { ...env.recipe, pins: ["pytest==7.0.0"] } } } as Task;
    expect(() => recordedEnvironment(otherRecipe, record)).toThrow(/field environment_key/);
  });

  it("refuses a task qualify has no record of, naming the field", () => {
    expect(() => recordedEnvironment(task, undefined)).toThrow(expect.objectContaining({ reason: "malformed_record", field: "task_id" }));
  });
});
