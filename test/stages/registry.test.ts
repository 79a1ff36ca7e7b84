import { fileURLToPath } from "node:url";
import seedrandom from "seedrandom";
import { describe, expect, it } from "vitest";
import { orderStages } from "../../pipeline/engine/engine.ts";
import { inputsOf } from "../../pipeline/engine/stage.ts";
import { StageName } from "../../pipeline/schemas/common.ts";
import { BUILT_STAGES } from "../../stages/index.ts";

/**
 * The stage registry (stages/index.ts), the list every command runs. How the engine orders stages
 * in general is test/pipeline/engine/engine.test.ts's; here, that the registry this build ships
 * makes SPEC §2's pipeline.
 */
const names = BUILT_STAGES.map((s) => s.name);

describe("the stages this build has", () => {
  it("are every stage of SPEC §2, each once", () => {
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual([...StageName.options].sort());
  });

  it("read only what an earlier stage writes, with its schema, and the engine orders them as SPEC §2 does, however they are registered", () => {
    expect(orderStages(BUILT_STAGES).map((s) => s.name)).toEqual(StageName.options);
    const rng = seedrandom("registry");
    for (let i = 0; i < 20; i++) {
      const shuffled = [...BUILT_STAGES].sort(() => rng() - 0.5);
      expect(orderStages(shuffled).map((s) => s.name)).toEqual(StageName.options);
    }
    // Each input names an artifact its producer declares, with the very schema it writes.
    for (const stage of BUILT_STAGES)
      for (const [arg, spec] of inputsOf(stage)) {
        const output = BUILT_STAGES.find((s) => s.name === spec.stage)?.outputs.find((o) => o.name === spec.name);
        expect(output?.schema, `${stage.name}.${arg} reads ${spec.stage}/${spec.name}`).toBe(spec.schema);
      }
  });

  it("each name its own folder's index.ts as its code, so editing a stage's files runs that stage again", () => {
    for (const stage of BUILT_STAGES) expect(fileURLToPath(stage.module)).toMatch(new RegExp(`/stages/${stage.name}/index\\.ts$`));
  });

  it("each run with no section of its own in a config, and each command-line flag sets a key its config keeps", () => {
    for (const stage of BUILT_STAGES) {
      expect(stage.configSchema.safeParse({}).success, stage.name).toBe(true);
      for (const flag of stage.flags ?? []) {
        const value = flag.flag.includes("<") ? (flag.parse ? flag.parse("2") : "2") : true;
        const path = flag.key.split(".");
        const section = path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value);
        const parsed = stage.configSchema.safeParse(section);
        expect(parsed.success, `${stage.name} ${flag.flag}`).toBe(true);
        expect(
          path.reduce<any>((at, key) => at?.[key], parsed.data),
          `${stage.name} ${flag.flag} sets ${flag.key}`,
        ).toEqual(value);
      }
    }
  });
});
