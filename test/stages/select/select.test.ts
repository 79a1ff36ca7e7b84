import { describe, expect, it } from "vitest";
import { selectSessions } from "../../../stages/select/select.ts";
import { validateSession } from "../../../stages/validate/validate.ts";
import { PATHS, pool, specFor } from "../../helpers/session-pool.ts";

describe("seeded draws", () => {
  it("gives the same sessions for the same seed and other, still valid ones for another seed", async () => {
    const tasks = pool(Array.from({ length: 30 }, (_, i) => ({ dir: ["pkg", "lib", "pkg/a"][i % 3]!, file: `f${i}.py`, stages: 2 + (i % 3), repo: "o/one" })));
    const byId = new Map(tasks.map((t) => [t.id, t]));
    const run = async (seed: string) =>
      (await selectSessions(tasks, { seed, sizes: { near: 4, far: 4 }, interruptions: 4, minFocusStages: 2 })).sessions.map((s) => specFor(s, byId));
    expect(JSON.stringify(await run("a"))).toBe(JSON.stringify(await run("a")));
    const other = await run("b");
    expect(JSON.stringify(other)).not.toBe(JSON.stringify(await run("a")));
    for (const spec of other) expect(validateSession(spec, new Map(tasks.map((t) => [t.id, t])), PATHS, 4).every((c) => c.passed)).toBe(true);
  });
});
