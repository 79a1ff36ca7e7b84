// The demo pipeline run twice in a fresh work directory: the second run's wall time as a ratio of
// the first. Target: under 0.05 once the stages are real (issue #2).
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../pipeline/config.ts";
import { buildDemoCorpus } from "../pipeline/demo-corpus.ts";
import { runPipeline } from "../pipeline/engine.ts";
import { silentLogger } from "../pipeline/logger.ts";
import { silentProgress } from "../pipeline/progress.ts";
import { BUILT_STAGES } from "../stages/index.ts";

const root = fileURLToPath(new URL("../", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-"));
try {
  cpSync(join(root, "data", "demo"), join(dir, "demo"), { recursive: true });
  const config = join(dir, "demo", "pipeline.yaml");
  writeFileSync(config, readFileSync(config, "utf8").replaceAll("../../.switch-swe/", "../out/"));
  const profile = join(dir, "demo", "repos", "demo-org__geometry.json");
  writeFileSync(profile, readFileSync(profile, "utf8").replace("../../../.switch-swe/", "../../out/"));
  await buildDemoCorpus(join(dir, "demo", "corpus.yaml"), join(dir, "out", "demo-corpus"));
  const loaded = loadConfig(config, BUILT_STAGES);
  const options = { workDir: loaded.workDir, baseDir: loaded.baseDir, stages: BUILT_STAGES, stageConfigs: loaded.config.stages, seed: loaded.config.seed, log: silentLogger, progress: silentProgress };

  const time = async () => {
    const start = performance.now();
    const summary = await runPipeline(options);
    return { ms: performance.now() - start, ran: summary.stages.filter((s) => s.status === "ran").map((s) => s.stage) };
  };
  const cold = await time();
  const warm = await time();
  console.log(`stages built: ${BUILT_STAGES.map((s) => s.name).join(", ")}`);
  console.log(`first run:  ${cold.ms.toFixed(1)} ms (ran: ${cold.ran.join(", ")})`);
  console.log(`second run: ${warm.ms.toFixed(1)} ms (ran: ${warm.ran.join(", ") || "nothing"})`);
  console.log(`ratio second/first: ${(warm.ms / cold.ms).toFixed(4)} (target < 0.05)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
