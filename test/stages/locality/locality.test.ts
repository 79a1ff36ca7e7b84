import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatSummary } from "../../../pipeline/engine/engine.ts";
import { localityStage } from "../../../stages/locality/index.ts";
import { runStageOver } from "../../helpers/given-artifacts.ts";
import { taskRecord } from "../../helpers/task-records.ts";
import { tempDir } from "../../helpers/tmp.ts";

/**
 * The locality stage over the oracle's tasks (SPEC §2.6): the pairing itself is
 * test/pipeline/locality.test.ts's; here, what the stage makes of a pool: each same-repository pair
 * once, classed from the tasks' recorded source files and directories, never a pair across
 * repositories, in an order that does not depend on the pool's.
 */
const POOL = [
  taskRecord({ id: "o__r-1", repo: "o/r", files: ["pkg/a.py"] }),
  taskRecord({ id: "o__r-2", repo: "o/r", files: ["pkg/b.py"] }),
  taskRecord({ id: "o__r-3", repo: "o/r", files: ["pkg/a.py", "pkg/sub/c.py"] }),
  taskRecord({ id: "o__r-4", repo: "o/r", files: ["lib/d.py"] }),
  // Another repository with the same paths: never paired with o/r's tasks.
  taskRecord({ id: "o__s-1", repo: "o/s", files: ["pkg/a.py"] }),
];

const pair = (a: number, b: number, rest: object) => ({ repo: "o/r", task_a: `o__r-${a}`, task_b: `o__r-${b}`, ...rest });
const far = { eligible: true, class: "far", shared_files: [], shared_dirs: [] };
const near = { eligible: true, class: "near", shared_files: [], shared_dirs: ["pkg"] };

describe("the locality stage", () => {
  it("classes every same-repository pair of the pool once, from the tasks' source files and directories", async () => {
    const { summary, read } = await runStageOver(localityStage, { oracle: { tasks: POOL } }, { dir: tempDir() });
    expect(
      summary.stages.find((s) => s.stage === "locality"),
      formatSummary(summary),
    ).toMatchObject({ status: "ran", in: 5, rejected: 0 });
    expect(read("locality", "pairs")).toEqual([
      pair(1, 2, near),
      pair(1, 3, { eligible: false, shared_files: ["pkg/a.py"], shared_dirs: ["pkg"] }),
      pair(1, 4, far),
      pair(2, 3, near),
      pair(2, 4, far),
      pair(3, 4, far),
    ]);
  });

  it("writes the same bytes whatever order the oracle listed the tasks in", async () => {
    const first = tempDir();
    const second = tempDir();
    await runStageOver(localityStage, { oracle: { tasks: POOL } }, { dir: first });
    await runStageOver(localityStage, { oracle: { tasks: [...POOL].reverse() } }, { dir: second });
    const bytes = (dir: string) => readFileSync(join(dir, "work", "artifacts", "locality", "pairs.jsonl"), "utf8");
    expect(bytes(second)).toBe(bytes(first));
    expect(bytes(first).split("\n").filter(Boolean)).toHaveLength(6);
  });

  it("drops a task's pairs once the oracle no longer passes it", async () => {
    const dir = tempDir();
    await runStageOver(localityStage, { oracle: { tasks: POOL } }, { dir });
    const { summary, read } = await runStageOver(localityStage, { oracle: { tasks: POOL.filter((t) => t.id !== "o__r-3") } }, { dir });
    expect(summary.stages.find((s) => s.stage === "locality")!.status).toBe("ran");
    expect(read("locality", "pairs")).toEqual([pair(1, 2, near), pair(1, 4, far), pair(2, 4, far)]);
  });
});
