import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../pipeline/project/config.ts";
import { BUILT_STAGES } from "../../../stages/index.ts";
import { tempDir } from "../../helpers/tmp.ts";

function configFile(text: string, name = "pipeline.yaml"): string {
  const path = join(tempDir(), name);
  writeFileSync(path, text);
  return path;
}

describe("pipeline config", () => {
  it("loads YAML and resolves the work directory against the config file", () => {
    const path = configFile("name: demo\nseed: 7\nwork_dir: out\nstages:\n  split:\n    check_apply: false\n");
    const loaded = loadConfig(path, BUILT_STAGES);
    expect(loaded.config.seed).toBe("7");
    expect(loaded.workDir).toBe(join(loaded.baseDir, "out"));
  });

  it("loads JSON too", () => {
    const path = configFile(JSON.stringify({ name: "x", seed: "s", work_dir: "w" }), "p.json");
    expect(loadConfig(path, BUILT_STAGES).config.name).toBe("x");
  });

  it("names the file, key and line of a wrongly typed stage setting", () => {
    const path = configFile("name: demo\nseed: 7\nwork_dir: out\nstages:\n  split:\n    check_apply: sometimes\n");
    expect(() => loadConfig(path, BUILT_STAGES)).toThrow(new RegExp(`${path}: key stages\\.split\\.check_apply \\(line 6\\): .*boolean`));
  });

  it("names an unknown key instead of ignoring it", () => {
    const path = configFile("name: demo\nseed: 7\nwork_dir: out\nstages:\n  mine:\n    swebnech: [a.jsonl]\n");
    expect(() => loadConfig(path, BUILT_STAGES)).toThrow(/key stages\.mine\.swebnech \(line 6\): unknown key/);
  });

  it("names a missing top-level key and an unknown stage", () => {
    expect(() => loadConfig(configFile("name: demo\nwork_dir: out\n"), BUILT_STAGES)).toThrow(/key seed \(line 1\): is required/);
    expect(() => loadConfig(configFile("name: demo\nseed: 1\nwork_dir: out\nstages:\n  qualfy: {}\n"), BUILT_STAGES)).toThrow(/key stages\.qualfy/);
  });

  it("reports YAML syntax errors with their line", () => {
    expect(() => loadConfig(configFile("name: demo\nseed: [1\n"), BUILT_STAGES)).toThrow(/line \d+: not valid YAML or JSON/);
  });
});
