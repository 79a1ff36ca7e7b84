import { cpSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../pipeline/config.ts";
import { buildDemoCorpus, type CorpusResult } from "../../pipeline/demo/build.ts";
import type { EngineOptions } from "../../pipeline/engine.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { silentProgress } from "../../pipeline/progress.ts";
import { BUILT_STAGES } from "../../stages/index.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The README's demo, set up inside `dir` instead of the clone: data/demo is copied and its paths
 * pointed at `dir/out`, the corpus is built there, and engine options for its config returned.
 */
export async function prepareDemoCopy(dir: string): Promise<{ corpus: CorpusResult; options: EngineOptions; workDir: string }> {
  cpSync(join(root, "data", "demo"), join(dir, "demo"), { recursive: true });
  const config = join(dir, "demo", "pipeline.yaml");
  writeFileSync(config, readFileSync(config, "utf8").replaceAll("../../.switch-swe/", "../out/"));
  for (const name of readdirSync(join(dir, "demo", "repos"))) {
    const profile = join(dir, "demo", "repos", name);
    writeFileSync(profile, readFileSync(profile, "utf8").replace("../../../.switch-swe/", "../../out/"));
  }
  const corpus = await buildDemoCorpus(join(dir, "demo", "corpus.yaml"), join(dir, "out", "demo-corpus"));
  const loaded = loadConfig(config, BUILT_STAGES);
  const options: EngineOptions = { workDir: loaded.workDir, baseDir: loaded.baseDir, stages: BUILT_STAGES, stageConfigs: loaded.config.stages, seed: loaded.config.seed, log: silentLogger, progress: silentProgress };
  return { corpus, options, workDir: loaded.workDir };
}
