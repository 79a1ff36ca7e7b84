import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { formatSummary, orderStages } from "../../../pipeline/engine/engine.ts";
import { runProjectOnce, type ProjectRun } from "../../../pipeline/project/project.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { silentProgress } from "../../../pipeline/progress.ts";
import { defineStage, input, RecordError, type AnyStage } from "../../../pipeline/engine/stage.ts";
import { RunAbort } from "../../../pipeline/failures.ts";
import { MAX_INFRASTRUCTURE_RETRIES, withInfrastructureRetries } from "../../../pipeline/executors/retries.ts";
import { tempDir } from "../../helpers/tmp.ts";

const Item = z.object({ id: z.string(), value: z.number() });
type Item = z.infer<typeof Item>;

/** Two small stages over a list of numbers, counting the records they really work on. */
function makeStages(calls: { mine: string[]; split: string[] }, splitUsesSeed = false): AnyStage[] {
  const source = defineStage({
    name: "mine",
    summary: "reads numbers",
    example: "",
    version: "1",
    module: import.meta.url,
    configSchema: z.strictObject({ file: z.string() }),
    inputs: {},
    outputs: [{ name: "items", schema: Item, key: (i: Item) => i.id }],
    externalFiles: (config) => [config.file],
    async run(ctx) {
      const lines = ctx.files[0]!.text.split("\n").filter(Boolean);
      const items = await ctx.mapRecords(lines, {
        id: (line) => line.split("=")[0]!,
        work: (line) => {
          const [id, raw] = line.split("=");
          calls.mine.push(id!);
          if (raw === "bad") throw new RecordError("invalid_field", `record ${id}: field value: not a number`, { field: "value" });
          if (raw === "boom") throw new Error("unexpected");
          if (raw === "full") throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
          if (raw === "fleet") throw new RunAbort("no worker is in service");
          return { id: id!, value: Number(raw) };
        },
      });
      return { items };
    },
  });
  const double = defineStage({
    name: "split",
    summary: "doubles",
    example: "",
    version: "1",
    module: import.meta.url,
    configSchema: z.strictObject({ factor: z.number().default(2) }),
    usesSeed: splitUsesSeed,
    inputs: { items: input("mine", "items", Item) },
    outputs: [{ name: "doubled", schema: Item, key: (i: Item) => i.id }],
    async run(ctx, { items }) {
      const doubled = await ctx.mapRecords(items, {
        id: (i) => i.id,
        work: (i) => {
          calls.split.push(i.id);
          return { id: i.id, value: i.value * ctx.config.factor };
        },
      });
      if (ctx.config.factor > 2) ctx.note(`a factor of ${ctx.config.factor} leaves ${doubled.length} record(s) past the usual range`);
      return { doubled };
    },
  });
  return [double, source];
}

function setup(lines: string[], splitUsesSeed = false) {
  const dir = tempDir();
  writeFileSync(join(dir, "input.txt"), lines.join("\n") + "\n");
  const calls = { mine: [] as string[], split: [] as string[] };
  const options = (configs: Record<string, unknown> = {}, seed = "7"): ProjectRun => ({
    workDir: join(dir, "work"),
    baseDir: dir,
    stages: makeStages(calls, splitUsesSeed),
    stageConfigs: { mine: { file: "input.txt" }, split: {}, ...configs },
    seed,
    log: silentLogger,
    progress: silentProgress,
  });
  const read = (stage: string, name: string) =>
    readFileSync(join(dir, "work", "artifacts", stage, `${name}.jsonl`), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  return { dir, calls, options, read };
}

describe("engine cache", () => {
  it("does no work on an unchanged re-run and says the stages are up to date", async () => {
    const t = setup(["a=1", "b=2"]);
    const first = await runProjectOnce(t.options());
    expect(first.stages.filter((s) => s.status === "ran").map((s) => s.stage)).toEqual(["mine", "split"]);
    expect(t.calls).toEqual({ mine: ["a", "b"], split: ["a", "b"] });
    const lockBefore = readFileSync(join(t.dir, "work", "switch-swe.lock.json"), "utf8");

    const second = await runProjectOnce(t.options());
    expect(second.stages.filter((s) => s.stage === "mine" || s.stage === "split").map((s) => s.status)).toEqual(["up_to_date", "up_to_date"]);
    expect(t.calls).toEqual({ mine: ["a", "b"], split: ["a", "b"] });
    expect(readFileSync(join(t.dir, "work", "switch-swe.lock.json"), "utf8")).toBe(lockBefore);
    expect(t.read("split", "doubled")).toEqual([
      { id: "a", value: 2 },
      { id: "b", value: 4 },
    ]);
  });

  it("shows what a stage notes in the run's summary, again while it is up to date, and a rechecked stage runs with its records' caches", async () => {
    const t = setup(["a=1", "b=2"]);
    const first = await runProjectOnce(t.options({ split: { factor: 3 } }));
    expect(formatSummary(first)).toContain("notes:\n  split: a factor of 3 leaves 2 record(s) past the usual range");
    const again = await runProjectOnce(t.options({ split: { factor: 3 } }));
    expect(again.stages.find((s) => s.stage === "split")!.status).toBe("up_to_date");
    expect(formatSummary(again)).toContain("split: a factor of 3 leaves 2 record(s)");
    // recheck: the stage runs although nothing changed, and reuses every record's cached result.
    const rechecked = await runProjectOnce(t.options({ split: { factor: 3 } }), { recheck: ["mine"] });
    expect(rechecked.stages.find((s) => s.stage === "mine")).toMatchObject({ status: "ran", reused: 2 });
    expect(t.calls.mine).toEqual(["a", "b"]);
  });

  it("reruns a stage whose config changed, and only that stage onwards", async () => {
    const t = setup(["a=1", "b=2"]);
    await runProjectOnce(t.options());
    const summary = await runProjectOnce(t.options({ split: { factor: 3 } }));
    expect(summary.stages.find((s) => s.stage === "mine")!.status).toBe("up_to_date");
    expect(summary.stages.find((s) => s.stage === "split")!.status).toBe("ran");
    expect(t.calls.split).toEqual(["a", "b", "a", "b"]);
    expect(t.read("split", "doubled")).toEqual([
      { id: "a", value: 3 },
      { id: "b", value: 6 },
    ]);
  });

  it("reworks only the records of an input file that changed", async () => {
    const t = setup(["a=1", "b=2"]);
    await runProjectOnce(t.options());
    writeFileSync(join(t.dir, "input.txt"), "a=1\nb=5\nc=7\n");
    const summary = await runProjectOnce(t.options());
    expect(summary.stages.find((s) => s.stage === "mine")!.status).toBe("ran");
    expect(t.calls.mine).toEqual(["a", "b", "b", "c"]);
    expect(t.calls.split).toEqual(["a", "b", "b", "c"]);
    expect(summary.stages.find((s) => s.stage === "split")!.reused).toBe(1);
    expect(t.read("split", "doubled").map((r) => r.value)).toEqual([2, 10, 14]);
  });

  it("does not redo a stage that draws no random numbers when only the seed changes", async () => {
    const t = setup(["a=1"]);
    await runProjectOnce(t.options());
    const summary = await runProjectOnce(t.options({}, "another seed"));
    expect(summary.stages.filter((s) => s.status === "ran")).toEqual([]);
    expect(t.calls).toEqual({ mine: ["a"], split: ["a"] });

    const seeded = setup(["a=1"], true);
    await runProjectOnce(seeded.options());
    const redrawn = await runProjectOnce(seeded.options({}, "another seed"));
    expect(redrawn.stages.filter((s) => s.status === "ran").map((s) => s.stage)).toEqual(["split"]);
    expect(seeded.calls).toEqual({ mine: ["a"], split: ["a", "a"] });
  });

  it("reruns a stage whose output was edited or deleted on disk", async () => {
    const t = setup(["a=1"]);
    await runProjectOnce(t.options());
    writeFileSync(join(t.dir, "work", "artifacts", "split", "doubled.jsonl"), '{"id":"a","value":99}\n');
    const summary = await runProjectOnce(t.options());
    expect(summary.stages.find((s) => s.stage === "split")!.status).toBe("ran");
    expect(t.read("split", "doubled")).toEqual([{ id: "a", value: 2 }]);
  });

  it("honours --force, --from and --only", async () => {
    const t = setup(["a=1"]);
    await runProjectOnce(t.options());
    await runProjectOnce(t.options(), { force: true });
    expect(t.calls).toEqual({ mine: ["a", "a"], split: ["a", "a"] });

    const from = await runProjectOnce(t.options(), { from: "split" });
    expect(from.stages.find((s) => s.stage === "mine")!.status).toBe("up_to_date");
    expect(t.calls.split).toEqual(["a", "a", "a"]);

    const only = await runProjectOnce(t.options(), { only: "split", force: true });
    expect(only.stages.map((s) => s.stage)).toEqual(["split"]);
    expect(t.calls).toEqual({ mine: ["a", "a"], split: ["a", "a", "a", "a"] });
  });

  it("--only refuses to run a stage whose inputs were never built", async () => {
    const t = setup(["a=1"]);
    const summary = await runProjectOnce(t.options(), { only: "split" });
    expect(summary.ok).toBe(false);
    expect(summary.stages[0]!.error).toMatch(/input mine\/items is missing: run stage 'mine' first/);
  });

  it("lists the stages this build lacks as not built", async () => {
    const t = setup(["a=1"]);
    const summary = await runProjectOnce(t.options());
    expect(summary.stages.find((s) => s.stage === "qualify")!.status).toBe("not_built");
  });
});

describe("the stage order", () => {
  const stage = (name: "mine" | "split" | "qualify" | "locality", reads: ("mine" | "split" | "qualify" | "locality")[]): AnyStage =>
    defineStage({
      name,
      summary: "",
      example: "",
      version: "1",
      module: import.meta.url,
      configSchema: z.strictObject({}),
      inputs: Object.fromEntries(reads.map((r) => [r, input(r, "items", Item)])),
      outputs: [{ name: "items", schema: Item, key: (i: Item) => i.id }],
      run: async () => ({ items: [] }),
    });
  const names = (stages: AnyStage[]) => orderStages(stages).map((s) => s.name);

  it("puts each stage after the stages it reads, whatever order they are registered in", () => {
    expect(names([stage("qualify", ["split", "mine"]), stage("split", ["mine"]), stage("mine", [])])).toEqual(["mine", "split", "qualify"]);
    // A stage added last (as a plugin's would be) that reads mine alone keeps its registration place among stages ready with it.
    expect(names([stage("mine", []), stage("split", ["mine"]), stage("locality", ["mine"])])).toEqual(["mine", "split", "locality"]);
    expect(names([stage("mine", []), stage("locality", ["mine"]), stage("split", ["mine"])])).toEqual(["mine", "locality", "split"]);
  });

  it("refuses stages that read each other in a circle, and an input no stage writes", () => {
    expect(() => orderStages([stage("mine", []), stage("split", ["qualify"]), stage("qualify", ["split"])])).toThrow(
      /stages split, qualify read each other's outputs in a circle/,
    );
    expect(() => orderStages([stage("split", ["mine"])])).toThrow(/input 'mine' reads mine\/items, which no earlier stage writes/);
  });
});

describe("per-record isolation", () => {
  it("records a bad record as a reject with reason and field, and goes on with the rest", async () => {
    const t = setup(["a=1", "b=bad", "d=4"]);
    const summary = await runProjectOnce(t.options());
    expect(summary.ok).toBe(true);
    expect(t.read("mine", "items").map((i) => i.id)).toEqual(["a", "d"]);
    expect(t.read("mine", "rejects")).toEqual([
      { stage: "mine", record_id: "b", reason: "invalid_field", field: "value", message: "record b: field value: not a number" },
    ]);
    expect(summary.stages.find((s) => s.stage === "mine")).toMatchObject({ status: "ran", in: 3, out: 2, rejected: 1 });
    expect(t.read("split", "doubled").map((i) => i.id)).toEqual(["a", "d"]);
  });

  it("a transient failure or a bug is not a result: the stage is incomplete, later stages keep their outputs, the run fails", async () => {
    const t = setup(["a=1", "d=4"]);
    await runProjectOnce(t.options());
    writeFileSync(join(t.dir, "input.txt"), "a=1\nc=boom\nf=full\n");
    const summary = await runProjectOnce(t.options());
    expect(summary.ok).toBe(false);
    const mine = summary.stages.find((s) => s.stage === "mine")!;
    expect(mine).toMatchObject({ status: "incomplete", rejected: 2 });
    expect(mine.transient).toEqual(["internal_error: c: unexpected", "transient_failure: f: ENOSPC: ENOSPC: no space left on device, write"]);
    // Neither mine's partial output nor split over it replaced the last complete run's.
    expect(summary.stages.find((s) => s.stage === "split")).toBeUndefined();
    expect(t.read("mine", "items").map((i) => i.id)).toEqual(["a", "d"]);
    expect(t.read("split", "doubled").map((i) => i.id)).toEqual(["a", "d"]);
    expect(formatSummary(summary)).toMatch(
      /not finished \(the run exits non-zero[^\n]*\n  mine: records failed for reasons that may not recur[^\n]*\n    internal_error: c: unexpected\n    transient_failure: f: ENOSPC/,
    );

    // --keep-going lets later stages run all the same; the run still fails.
    const going = await runProjectOnce(t.options(), { keepGoing: true });
    expect(going.ok).toBe(false);
    expect(going.stages.find((s) => s.stage === "split")!.status).toBe("ran");
    expect(t.read("split", "doubled").map((i) => i.id)).toEqual(["a"]);
  });

  it("stops a stage at the first failure of what every record needs, without retrying it, and leaves the rest for the next run", async () => {
    const t = setup(["a=1", "b=fleet", "c=3", "d=4"]);
    const summary = await runProjectOnce(t.options());
    expect(summary.ok).toBe(false);
    const mine = summary.stages.find((s) => s.stage === "mine")!;
    expect(mine.status).toBe("incomplete");
    expect(mine.transient).toEqual(["transient_failure: b: no worker is in service (the stage stopped: 2 record(s) not started)"]);
    // One record at a time: the ones after it were never started.
    expect(t.calls.mine).toEqual(["a", "b"]);
    // Infrastructure retries give it up at once (retrying what stops the run only delays the stop).
    let attempts = 0;
    const attempt = async () => {
      attempts++;
      throw new RunAbort("no worker is in service");
    };
    await expect(withInfrastructureRetries("x", silentLogger, attempt, [0])).rejects.toThrow(RunAbort);
    expect(attempts).toBe(1);
    expect(MAX_INFRASTRUCTURE_RETRIES).toBe(2);
  });

  it("retries an unexpected error on the next run but keeps a deterministic reject cached", async () => {
    const t = setup(["b=bad", "c=boom"]);
    await runProjectOnce(t.options());
    writeFileSync(join(t.dir, "input.txt"), "b=bad\nc=boom\ne=5\n");
    await runProjectOnce(t.options());
    // b's reject came from a RecordError and is reused; c crashed unexpectedly and is tried again.
    expect(t.calls.mine).toEqual(["b", "c", "c", "e"]);
  });

  it("runs a stage again, even unchanged, while some of its records failed for reasons that may not recur", async () => {
    const t = setup(["a=1", "c=boom"]);
    await runProjectOnce(t.options());
    const again = await runProjectOnce(t.options());
    expect(again.stages.find((s) => s.stage === "mine")!.status).toBe("incomplete");
    expect(t.calls.mine).toEqual(["a", "c", "c"]);
    writeFileSync(join(t.dir, "input.txt"), "a=1\n");
    await runProjectOnce(t.options());
    const settled = await runProjectOnce(t.options());
    expect(settled.stages.find((s) => s.stage === "mine")!.status).toBe("up_to_date");
  });
});

describe("run lock", () => {
  it("refuses a second run on the same work directory while the first holds it", async () => {
    const t = setup(["a=1"]);
    const { mkdirSync } = await import("node:fs");
    mkdirSync(join(t.dir, "work"), { recursive: true });
    writeFileSync(join(t.dir, "work", ".run.lock"), String(process.pid));
    await expect(runProjectOnce(t.options())).rejects.toThrow(/another switch-swe run \(pid \d+\)/);
    // a lock left by a dead process is taken over
    writeFileSync(join(t.dir, "work", ".run.lock"), "999999");
    await expect(runProjectOnce(t.options())).resolves.toMatchObject({ ok: true });
    expect(existsSync(join(t.dir, "work", ".run.lock"))).toBe(false);
  });

  it("takes over a lock whose process id now names another process, and removes what the killed run left", async () => {
    const t = setup(["a=1"]);
    const { mkdirSync } = await import("node:fs");
    const work = join(t.dir, "work");
    mkdirSync(join(work, "envs", "0123456789abcdef.partial-4242"), { recursive: true });
    mkdirSync(join(work, "git", "o__r.git.partial-4243"), { recursive: true });
    mkdirSync(join(work, "scratch", "checkout-x1", "repo"), { recursive: true });
    mkdirSync(join(work, "envs", "0123456789abcdef"), { recursive: true });
    // pid 1 is alive, but it is not the process that took this lock: its start time differs.
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    writeFileSync(join(work, ".run.lock"), JSON.stringify({ pid: 1, start: "1", boot }));
    await expect(runProjectOnce(t.options())).resolves.toMatchObject({ ok: true });
    const { readdirSync } = await import("node:fs");
    expect(readdirSync(join(work, "envs"))).toEqual(["0123456789abcdef"]);
    expect(readdirSync(join(work, "git"))).toEqual([]);
    expect(readdirSync(join(work, "scratch"))).toEqual([]);
    // The same process id with its real start time is a live run: refused.
    const stat = readFileSync(`/proc/${process.pid}/stat`, "utf8");
    writeFileSync(join(work, ".run.lock"), JSON.stringify({ pid: process.pid, start: stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19], boot }));
    await expect(runProjectOnce(t.options())).rejects.toThrow(/another switch-swe run \(pid \d+\)/);
  });
});

describe("the run summary", () => {
  it("counts each stage's rejects by reason, and states a gate's verdict even when it rejected nothing", () => {
    const base = { status: "ran" as const, out: 0, seconds: 0, reused: 0 };
    const text = formatSummary({
      ok: true,
      stages: [
        { ...base, stage: "split", in: 5, rejected: 3, by_reason: { no_test_changes: 1, no_source_changes: 2 } },
        { ...base, stage: "qualify", in: 2, rejected: 0, by_reason: {} },
        { ...base, stage: "oracle", in: 2, rejected: 0, by_reason: {}, gate: "task(s)" },
      ],
    });
    expect(text.split("rejects by reason:\n")[1]).toBe("  split: 3 rejected (no_source_changes 2, no_test_changes 1)\n  oracle: 0 of 2 task(s) rejected");
  });

  it("lists a listing gate's every reject with its reason, and each stage's notes, marking those of a stage up to date as its last run's", () => {
    const base = { out: 0, seconds: 0, reused: 0 };
    const text = formatSummary({
      ok: true,
      stages: [
        {
          ...base,
          stage: "audit",
          status: "ran",
          in: 4,
          rejected: 2,
          by_reason: { unjustified_test: 1, audit_excluded: 1 },
          gate: "task(s)",
          listed: ["a-1: audit_excluded: by ann", "b-2: unjustified_test: a test"],
          notes: ["judge m: $0.01"],
        },
        { ...base, stage: "oracle", status: "up_to_date", in: 2, rejected: 0, by_reason: {}, gate: "task(s)", notes: ["ran twice"] },
      ],
    });
    expect(text.split("rejects by reason:\n")[1]).toBe(
      "  audit: 2 of 4 task(s) rejected (audit_excluded 1, unjustified_test 1)\n    a-1: audit_excluded: by ann\n    b-2: unjustified_test: a test\n  oracle: 0 of 2 task(s) rejected\n\nnotes:\n  audit: judge m: $0.01\n  oracle: ran twice (its last run)",
    );
  });
});

describe("a stage's code identity", () => {
  it("is its import graph: editing a module the stage imports runs the stage again", async () => {
    const t = setup(["a=1"]);
    const code = join(t.dir, "code");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(join(code, "shared"), { recursive: true });
    writeFileSync(join(code, "stage.ts"), 'import { helper } from "./shared/helper.ts";\nexport const x = helper;\n');
    writeFileSync(join(code, "shared", "helper.ts"), 'export { deep } from "./deep.ts";\nexport const helper = 1;\n');
    writeFileSync(join(code, "shared", "deep.ts"), "export const deep = 1;\n");
    const options = () => {
      const o = t.options();
      o.stages = o.stages.map((s) => (s.name === "split" ? { ...s, module: join(code, "stage.ts") } : s));
      return o;
    };
    await runProjectOnce(options());
    expect((await runProjectOnce(options())).stages.find((s) => s.stage === "split")!.status).toBe("up_to_date");
    writeFileSync(join(code, "shared", "deep.ts"), "export const deep = 2; // changed behaviour, two imports away\n");
    const after = await runProjectOnce(options());
    expect(after.stages.find((s) => s.stage === "split")!.status).toBe("ran");
    expect(after.stages.find((s) => s.stage === "mine")!.status).toBe("up_to_date");
  });

  it("covers what the real stages use from elsewhere", async () => {
    const { importGraph } = await import("../../../pipeline/code-version.ts");
    const { BUILT_STAGES } = await import("../../../stages/index.ts");
    const graph = (name: string) => importGraph(BUILT_STAGES.find((s) => s.name === name)!.module).map((p) => p.replace(/^.*?\/(pipeline|stages)\//, "$1/"));
    // schedule writes the finalization text into every session; the oracle runs qualify's and split's code and the verifier's runner.
    expect(graph("schedule")).toContain("pipeline/engine/settings.ts");
    expect(graph("oracle")).toEqual(
      expect.arrayContaining([
        "pipeline/executors/retries.ts",
        "pipeline/changes/classify.ts",
        "pipeline/executors/guarded.ts",
        "pipeline/verifier/suspicious.ts",
        "pipeline/profiles/environments.ts",
        "pipeline/verifier/runner.py",
        "pipeline/schemas/heldout.ts",
      ]),
    );
  });
});

describe("optional input files", () => {
  it("reads an absent optional file as no files, and runs the stage again once it appears", async () => {
    const dir = tempDir();
    const seen: number[] = [];
    const notes = defineStage({
      name: "mine",
      summary: "counts notes",
      example: "",
      version: "1",
      module: import.meta.url,
      configSchema: z.strictObject({ notes: z.string() }),
      inputs: {},
      outputs: [{ name: "items", schema: Item, key: (i: Item) => i.id }],
      externalFiles: (config) => [{ path: config.notes, optional: true }],
      async run(ctx) {
        seen.push(ctx.files.length);
        return { items: [{ id: "notes", value: ctx.files.length }] };
      },
    });
    const options: ProjectRun = {
      workDir: join(dir, "work"),
      baseDir: dir,
      stages: [notes],
      stageConfigs: { mine: { notes: "notes" } },
      seed: "1",
      log: silentLogger,
      progress: silentProgress,
    };
    expect((await runProjectOnce(options)).ok).toBe(true);
    expect((await runProjectOnce(options)).stages[0]!.status).toBe("up_to_date");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(join(dir, "notes"));
    writeFileSync(join(dir, "notes", "a.yaml"), "x: 1\n");
    expect((await runProjectOnce(options)).stages[0]!.status).toBe("ran");
    expect(seen).toEqual([0, 1]);
  });
});
