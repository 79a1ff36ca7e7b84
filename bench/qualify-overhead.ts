// Qualify over the demo corpus: orchestration overhead = (qualify wall time × jobs) ÷ (sum of
// pytest's own wall time in all runs), with warm environments; and the number of environment
// builds against the number of distinct recipes, and minutes per build. Target (issue #6):
// overhead ≤ 1.15, builds ≤ distinct recipes (recipes that differ only in their second layer
// share the first). Runs each executor that is available. Usage: npm run bench:qualify
// (real repositories' builds: npm run bench:fidelity -- RECORDS.jsonl).
import { WorkLayout } from "../pipeline/work-layout.ts";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { ArtifactStore } from "../pipeline/engine/store.ts";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { dockerEngine } from "../pipeline/executors/docker-engine.ts";
import { dockerAvailable } from "../pipeline/executors/docker.ts";
import { requireFinished } from "../pipeline/engine/engine.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { prepareDemoCopy, withExecution } from "../test/helpers/demo-copy.ts";

const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-qualify-"));
try {
  const demo = await prepareDemoCopy(dir);
  requireFinished(await runProjectOnce(demo.options, { only: "mine" }), "bench/qualify-overhead.ts");
  requireFinished(await runProjectOnce(demo.options, { only: "split" }), "bench/qualify-overhead.ts");
  const jobs = availableParallelism();
  const layout = new WorkLayout(demo.workDir);
  const store = new ArtifactStore(layout);
  const executors: ("local" | "docker")[] = ["local", ...((await dockerAvailable(dockerEngine())) ? (["docker"] as const) : [])];
  for (const executor of executors) {
    const options = withExecution(demo.options, { executor, jobs });
    store.clearMetrics();
    // Cold (environments may be built; Docker images persist between runs of this benchmark).
    const cold = await runProjectOnce(options, { only: "qualify", force: true });
    const buildMetrics = store.readMetrics().filter((m) => m.environment_built);
    const builds = buildMetrics.length;
    const buildMinutes = buildMetrics.reduce((sum, m) => sum + Number(m.build_seconds ?? 0), 0) / 60;
    store.clearMetrics();
    const started = performance.now();
    const warm = await runProjectOnce(options, { only: "qualify", force: true });
    const wall = (performance.now() - started) / 1000;
    const runs = store.readMetrics().filter((m) => m.pytest_seconds !== undefined);
    const pytest = runs.reduce((s, m) => s + Number(m.pytest_seconds), 0);
    const processes = runs.reduce((s, m) => s + Number(m.wall_seconds), 0);
    const recipes = new Set(
      readFileSync(layout.artifact("qualify", "qualifications"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l).environment_key),
    ).size;
    console.log(
      `${executor}: ${warm.stages[0]!.in} tasks, ${runs.length} pytest runs, jobs ${jobs}; cold ${cold.stages[0]!.seconds.toFixed(1)}s, warm ${wall.toFixed(1)}s`,
    );
    console.log(
      `  overhead vs pytest's own session time: (${wall.toFixed(1)}s × ${jobs}) ÷ ${pytest.toFixed(1)}s = ${((wall * jobs) / pytest).toFixed(2)} (target ≤ 1.15)`,
    );
    console.log(
      `  overhead vs the test processes' wall time (interpreter start${executor === "docker" ? ", container start" : ""} included): (${wall.toFixed(1)}s × ${jobs}) ÷ ${processes.toFixed(1)}s = ${((wall * jobs) / processes).toFixed(2)}`,
    );
    console.log(
      `  environment builds in the cold run: ${builds}; distinct recipes: ${recipes}${builds ? `; ${(buildMinutes / builds).toFixed(2)} min per build` : " (all present from an earlier run)"}`,
    );
  }
  await demo.server.stop();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
