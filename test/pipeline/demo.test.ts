import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sha256 } from "../../pipeline/canonical.ts";
import { runPipeline } from "../../pipeline/engine.ts";
import { prepareDemoCopy } from "../helpers/demo-copy.ts";
import { tempDir } from "../helpers/tmp.ts";

/** The demo as the README runs it, in a temporary directory. */
async function runDemo() {
  const { corpus, options, workDir } = await prepareDemoCopy(tempDir());
  const summary = await runPipeline(options);
  const read = (stage: string, name: string) => readFileSync(join(workDir, "artifacts", stage, `${name}.jsonl`), "utf8");
  return { corpus, summary, read, options, records: readFileSync(corpus.recordsFile, "utf8") };
}

describe("the demo", () => {
  it("builds the same corpus and artifacts byte for byte on every run, and re-runs do no work", async () => {
    const a = await runDemo();
    const b = await runDemo();
    expect(a.corpus.records).toBe(10);
    expect(sha256(a.records)).toBe(sha256(b.records));
    for (const [stage, name] of [["mine", "candidates"], ["split", "splits"], ["split", "rejects"], ["locality", "pairs"]] as const) {
      expect(a.read(stage, name), `${stage}/${name}`).toBe(b.read(stage, name));
    }
    const again = await runPipeline(a.options);
    expect(again.stages.filter((s) => s.status === "ran")).toEqual([]);
  }, 120_000);

  it("exercises every split outcome and every locality class", async () => {
    const demo = await runDemo();
    const rejects = demo.read("split", "rejects").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    expect(rejects.map((r) => [r.record_id, r.reason])).toEqual([
      ["demo-org__geometry-16", "no_source_changes"],
      ["demo-org__geometry-17", "no_test_changes"],
    ]);
    const splits = demo.read("split", "splits").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const byId = Object.fromEntries(splits.map((s) => [s.task_id.replace("demo-org__geometry-", ""), s]));
    expect(byId["15"].source_dirs).toEqual([".", "src/geometry"]);
    expect(byId["18"].source_files).toEqual(["src/geometry/io/export.py", "src/geometry/io/writer.py"]);
    expect(byId["19"].excluded_files).toEqual([{ path: "docs/logo.png", class: "docs" }]);
    expect(byId["20"].files[0]).toMatchObject({ status: "deleted", class: "source" });
    const pairs = demo.read("locality", "pairs").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const classOf = (a: string, b: string) => {
      const p = pairs.find((x) => x.task_a === `demo-org__geometry-${a}` && x.task_b === `demo-org__geometry-${b}`);
      return p.eligible ? p.class : "ineligible";
    };
    expect(classOf("11", "12")).toBe("near");
    expect(classOf("11", "13")).toBe("far");
    expect(classOf("11", "14")).toBe("ineligible");
    expect(classOf("13", "18")).toBe("near");
    expect(pairs).toHaveLength((8 * 7) / 2);
  }, 120_000);
});
