import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../pipeline/project/config.ts";
import { BUILT_STAGES } from "../../../stages/index.ts";

const load = (name: string) => loadConfig(fileURLToPath(new URL(`../../../data/benchmarks/${name}.yaml`, import.meta.url)), BUILT_STAGES);

/**
 * docs/BENCHMARKS.md adds the dev half's sessions to the whole build's: that holds only while the
 * half is the same benchmark over fewer records (the same seed, session rules, extension files,
 * curation, audit decisions and select settings). An edit to one config and not the other fails here.
 */
describe("switch-swe-lite-dev.yaml, the dev-split half of switch-swe-lite.yaml", () => {
  const whole = load("switch-swe-lite");
  const half = load("switch-swe-lite-dev");

  it("validates, and builds in a work directory and an output of its own", () => {
    expect(half.workDir).not.toBe(whole.workDir);
    const out = (c: typeof whole) => (c.config.stages.emit as { out_dir: string }).out_dir;
    expect(out(half)).not.toBe(out(whole));
  });

  it("mines the whole benchmark's dev-split records, and none of the test half", () => {
    type Mine = { swebench: { file: string; repos: string[] }[] };
    const dev = (c: typeof whole) => (c.config.stages.mine as Mine).swebench.filter((s) => s.file.endsWith("swebench-lite-dev.jsonl"));
    expect((half.config.stages.mine as Mine).swebench).toEqual(dev(half));
    expect(dev(half)).toEqual(dev(whole));
    expect(dev(half)[0]!.repos.length).toBeGreaterThan(0);
  });

  it("is the whole benchmark in all else: seed, settings, profiles, every stage's settings and reviewed files", () => {
    // What a half may change: its name and where it writes, and which records it mines (above).
    const benchmark = ({ config }: typeof whole) => {
      const { name: _name, work_dir: _work, stages, ...settings } = config;
      const { mine: _mine, emit: _emit, audit, ...others } = stages;
      const { report_dir: _report, ...auditSettings } = audit as { report_dir: string };
      return { settings, stages: { ...others, audit: auditSettings } };
    };
    expect(benchmark(half)).toEqual(benchmark(whole));
    expect(Object.keys(benchmark(whole).stages)).toEqual(expect.arrayContaining(["split", "qualify", "audit", "select", "schedule"]));
  });
});
