import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatSummary, orderStages, type RunSummary } from "../../../pipeline/engine/engine.ts";
import { runProjectOnce } from "../../../pipeline/project/project.ts";
import type { StageName } from "../../../pipeline/schemas/common.ts";
import { BUILT_STAGES } from "../../../stages/index.ts";
import { FaultRow, faultCorpus, isRoot, SmallDisk } from "../../helpers/fault-rows.ts";
import { fileTempDir } from "../../helpers/tmp.ts";

/**
 * The fault matrix (local executor): each row runs the pipeline with one fault, checks the run
 * failed and said so, then runs it again once the fault is gone, with no --force, and checks every
 * artifact and published file is byte-identical to a clean run's. Nothing a fault did may be
 * cached as a result, and nothing good may be lost.
 */
describe("faults are never results", () => {
  let base: string;
  let corpus: string;
  let clean: Record<string, string>;
  const rows: FaultRow[] = [];
  const disks: SmallDisk[] = [];

  const row = async (name: string, extra?: { mine?: string }) => {
    const r = await new FaultRow(base, name, corpus, "local", extra).setUp();
    rows.push(r);
    return r;
  };

  /** The second run after the fault: it finishes, and everything equals the clean run. */
  const expectRecovered = async (r: FaultRow) => {
    const summary = await runProjectOnce(r.options());
    expect(summary.ok, formatSummary(summary)).toBe(true);
    expect(r.outputs()).toEqual(clean);
  };

  beforeAll(async () => {
    base = fileTempDir("switch-swe-faults-");
    corpus = await faultCorpus(base);
    const reference = await row("clean");
    const summary = await runProjectOnce(reference.options());
    expect(summary.ok, formatSummary(summary)).toBe(true);
    clean = reference.outputs();
    // The reference means something: three tasks kept, the regression rejected and cached.
    expect(clean["artifacts/oracle/tasks.jsonl"]!.split("\n").filter(Boolean)).toHaveLength(3);
    expect(clean["artifacts/qualify/rejects.jsonl"]).toContain('"reason":"regression"');
  });

  afterAll(async () => {
    for (const disk of disks) disk.unmount();
    for (const r of rows) await r.server.stop();
  });

  /**
   * A row whose fault is a full disk: `subdir` of the work directory is a tmpfs of `size`; the
   * faulted run fails, `check` says how; then the disk grows to `grown` and the next run recovers.
   */
  const diskFullRow = async (name: string, subdir: string, size: string, grown: string, check: (faulted: RunSummary, r: FaultRow) => void) => {
    const r = await row(name);
    const disk = new SmallDisk(join(r.workDir, subdir)).mount(size);
    disks.push(disk);
    const faulted = await runProjectOnce(r.options());
    expect(faulted.ok).toBe(false);
    check(faulted, r);
    disk.grow(grown);
    await expectRecovered(r);
    return r;
  };
  const stage = (summary: RunSummary, name: string) => summary.stages.find((s) => s.stage === name)!;

  it.skipIf(!isRoot && !process.env.CI)("disk full while an environment is built", async () => {
    await diskFullRow("env-disk-full", "envs", "4m", "2g", (faulted) => {
      expect(stage(faulted, "qualify").status).toBe("incomplete");
      expect(stage(faulted, "qualify").transient!.join("\n")).toMatch(/infrastructure_fault: .*No space left on device/);
      // Nothing after qualify ran over the incomplete results, and no environment was remembered as broken.
      expect(faulted.stages.map((s) => s.stage)).toEqual(["mine", "split", "qualify"]);
    });
  });

  it.skipIf(!isRoot && !process.env.CI)("disk full while an artifact is written", async () => {
    await diskFullRow("artifact-disk-full", "artifacts", "4k", "64m", (faulted, r) => {
      expect(faulted.stages.at(-1)).toMatchObject({ stage: "mine", status: "failed" });
      // One clear message naming the file the write was for, never the bare errno.
      expect(faulted.stages.at(-1)!.error).toMatch(/^no space left on the disk holding \S*\/artifacts\/mine\/candidates\.jsonl: free some/);
      // The write left no partial file behind.
      expect(readdirSync(join(r.workDir, "artifacts", "mine")).filter((f) => f.includes(".tmp-"))).toEqual([]);
    });
  });

  it.skipIf(!isRoot && !process.env.CI)("disk full while a repository is cloned", async () => {
    const r = await diskFullRow("clone-disk-full", "git", "64k", "64m", (faulted) => {
      expect(stage(faulted, "mine").status).toBe("incomplete");
      expect(stage(faulted, "mine").transient!.join("\n")).toMatch(/transient_failure: demo-org__geometry-\d+: [\s\S]*No space left on device/);
    });
    // The half-made clone was removed, not mistaken for a mirror.
    expect(readdirSync(join(r.workDir, "git")).filter((f) => f.includes(".partial-"))).toEqual([]);
  });

  it("a 200 answer whose JSON body is cut short", async () => {
    const r = await row("truncated-body");
    // More broken answers than the retry plugin's tries: the requests fail for good this run. One
    // body is cut by a dropped connection, the other arrives whole but holds half a JSON document.
    r.server.inject({ kind: "truncate", count: 5, path: /\/pulls\/5\/reviews/ }, { kind: "cut_json", count: 5, path: /\/pulls\/9\/comments/ });
    const faulted = await runProjectOnce(r.options());
    expect(faulted.ok).toBe(false);
    const mine = faulted.stages.find((s) => s.stage === "mine")!;
    expect(mine.status).toBe("incomplete");
    expect(mine.transient).toEqual([
      expect.stringMatching(/^transient_failure: demo-org__geometry-5: /),
      expect.stringMatching(/^transient_failure: demo-org__geometry-9: .*is not complete JSON/),
    ]);
    // No broken body reached the HTTP cache, where a 304 would replay it on every later run.
    const cacheDir = join(r.workDir, "http-cache");
    const entries = readdirSync(cacheDir, { recursive: true }).filter((f) => String(f).endsWith(".json"));
    expect(entries.length).toBeGreaterThan(5);
    for (const entry of entries) expect(typeof JSON.parse(readFileSync(join(cacheDir, String(entry)), "utf8")).data).toBe("object");
    await expectRecovered(r);
  });

  it("GitHub unreachable after a config change: the run fails and the published benchmark stands", async () => {
    const r = await row("unreachable");
    expect((await runProjectOnce(r.options())).ok).toBe(true);
    const before = r.outputs();
    await r.server.stop(); // ECONNREFUSED from now on
    r.writeConfig({ mine: "concurrency: 3" });
    const faulted = await runProjectOnce(r.options());
    expect(faulted.ok).toBe(false);
    const mine = faulted.stages.find((s) => s.stage === "mine")!;
    expect(mine.status).toBe("incomplete");
    expect(mine.transient!.join("\n")).toMatch(/transient_failure: demo-org\/geometry: could not list pull requests: .*(ECONNREFUSED|fetch failed)/);
    expect(faulted.stages.map((s) => s.stage)).toEqual(["mine"]);
    // Every artifact and the published benchmark are the last complete run's: nothing emptied.
    expect(r.outputs()).toEqual(before);
    expect(existsSync(join(r.dir, "out", "benchmark", "manifest.jsonl"))).toBe(true);
    await r.startServer();
    r.writeConfig({ mine: "concurrency: 3" });
    await expectRecovered(r);
  });
});

describe("a partly warm cache", () => {
  /** The artifact each stage maps its records over: changing one of its records leaves the others cached. */
  const MAPPED_INPUT: Partial<Record<StageName, string>> = {
    split: "mine/candidates",
    qualify: "split/splits",
    reconstruct: "qualify/qualifications",
    audit: "reconstruct/tasks",
    oracle: "audit/tasks",
    locality: "oracle/tasks",
    select: "oracle/tasks",
    schedule: "select/sessions",
    validate: "schedule/sessions",
    emit: "validate/sessions",
  };

  it("gives every stage the same outputs as a cold run after one input record changes", async () => {
    const base = fileTempDir("switch-swe-warm-");
    // Enough pull requests of one repository for sessions, so that every stage has records.
    const r = await new FaultRow(base, "warm", await faultCorpus(base), "local", { select: "near: 4, far: 4" }, [3, 5, 7, 9, 11, 13, 20, 22, 25, 29]).setUp();
    try {
      expect((await runProjectOnce(r.options())).ok).toBe(true);
      const artifacts = join(r.workDir, "artifacts");
      const stageOutputs = (stage: string) =>
        Object.fromEntries(
          Object.entries(r.outputs()).filter(
            ([path]) =>
              path.startsWith(`artifacts/${stage}/`) || (stage === "emit" && path.startsWith("benchmark/")) || (stage === "audit" && path.startsWith("audit/")),
          ),
        );
      let changed = 0;
      const skipped: string[] = [];
      for (const { name: stage } of orderStages(BUILT_STAGES)) {
        const input = MAPPED_INPUT[stage];
        if (!input) continue;
        const file = join(artifacts, `${input}.jsonl`);
        const records = readFileSync(file, "utf8").split("\n").filter(Boolean);
        if (records.length < 2) {
          skipped.push(`${stage} (${input}: ${records.length} record(s))`);
          continue;
        }
        // One record changes (it goes); every other one is unchanged and its result cached.
        writeFileSync(
          file,
          records
            .slice(1)
            .map((l) => `${l}\n`)
            .join(""),
        );
        changed++;
        const warm = await runProjectOnce(r.options(), { only: stage });
        expect(warm.ok, `${stage}: ${formatSummary(warm)}`).toBe(true);
        const warmOutputs = stageOutputs(stage);
        const cold = await runProjectOnce(r.options(), { only: stage, force: true });
        expect(cold.stages[0]!.reused).toBe(0);
        expect(warmOutputs, stage).toEqual(stageOutputs(stage));
        // Put the input back, so the next stage is checked on the whole pipeline's outputs.
        writeFileSync(file, records.map((l) => `${l}\n`).join(""));
        expect((await runProjectOnce(r.options(), { only: stage })).ok).toBe(true);
      }
      expect(skipped).toEqual([]);
      expect(changed).toBe(Object.keys(MAPPED_INPUT).length);
    } finally {
      await r.server.stop();
    }
  });
});
