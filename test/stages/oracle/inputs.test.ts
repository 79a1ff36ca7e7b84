import { describe, expect, it } from "vitest";
import { inputsOf } from "../../../pipeline/engine/stage.ts";
import { oracleStage } from "../../../stages/oracle/index.ts";

describe("what the oracle reads", () => {
  it("takes each task's environment from qualify's record, and nothing from mine (test/pipeline/profiles/ holds the reading)", () => {
    const read = inputsOf(oracleStage).map(([, spec]) => `${spec.stage}.${spec.name}`);
    expect(read).toContain("qualify.qualifications");
    expect(read.filter((r) => r.startsWith("mine."))).toEqual([]);
  });
});
