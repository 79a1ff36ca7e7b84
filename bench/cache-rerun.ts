// The demo pipeline run twice in a fresh work directory: the second run's wall time as a ratio of
// the first. Target: under 0.05 once the stages are real (issue #2).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { BUILT_STAGES } from "../stages/index.ts";
import { prepareDemoCopy } from "../test/helpers/demo-copy.ts";

const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-"));
try {
  const { options, server } = await prepareDemoCopy(dir);
  const time = async () => {
    const start = performance.now();
    const summary = await runProjectOnce(options);
    return { ms: performance.now() - start, ran: summary.stages.filter((s) => s.status === "ran").map((s) => s.stage) };
  };
  const cold = await time();
  const warm = await time();
  console.log(`stages built: ${BUILT_STAGES.map((s) => s.name).join(", ")}`);
  console.log(`first run:  ${cold.ms.toFixed(1)} ms (ran: ${cold.ran.join(", ")})`);
  console.log(`second run: ${warm.ms.toFixed(1)} ms (ran: ${warm.ran.join(", ") || "nothing"})`);
  console.log(`ratio second/first: ${(warm.ms / cold.ms).toFixed(4)} (target < 0.05)`);
  await server.stop();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
