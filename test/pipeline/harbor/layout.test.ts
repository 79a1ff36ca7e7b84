import { describe, expect, it } from "vitest";
import { taskDirName } from "../../../pipeline/harbor/layout.ts";

/**
 * The name Harbor 0.26's local Docker environment gives a trial's image, from the task's name
 * (harbor/models/trial/config.py `generate_trial_name`: the first 32 characters, trailing `_` and
 * `-` stripped, `__` and a 7-character id; docker.py: the compose project lowercased, every
 * character but letters, digits, `_` and `-` made `-`; the image `<project>__env-main`).
 */
const harborImageName = (taskName: string) => `${taskName.slice(0, 32).replace(/[_-]+$/, "")}__AbCdEfG__env-main`.toLowerCase().replace(/[^a-z0-9_-]/g, "-");

/** A Docker image name's path component: alphanumeric runs joined by one separator each (`.`, `_`, `__` or dashes). */
const DOCKER_NAME = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;

describe("Harbor task names", () => {
  it("survive Harbor's cut to 32 characters as a valid Docker image name, wherever the cut falls", () => {
    // The session whose trial never started when the condition followed a `.`: its 32nd character was that `.`.
    expect(harborImageName("session-sqlfluff__sqlfluff-2386.switched")).not.toMatch(DOCKER_NAME);
    for (const session of ["session-sqlfluff__sqlfluff-2386", "session-pydicom__pydicom-1694", "session-sympy__sympy-18532", "s", "session-a.b__c-1"])
      for (const pad of ["", "x", "xx", "x_", "x-"])
        for (const condition of ["control", "switched"]) {
          const name = taskDirName(session + pad, condition);
          expect(name).toMatch(/^[A-Za-z0-9_-]+$/);
          expect(harborImageName(name)).toMatch(DOCKER_NAME);
        }
  });

  it("keep sessions and conditions apart", () => {
    const names = ["session-a", "session-b"].flatMap((s) => ["control", "switched"].map((c) => taskDirName(s, c)));
    expect(new Set(names).size).toBe(4);
    expect(taskDirName("session-a", "switched")).toBe("session-a--switched");
  });
});
