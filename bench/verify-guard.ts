// What the verifier's guarded runner costs: the same required tests of every demo task that passed
// the oracle, on the same checkouts (reference + held-out tests), run through `python -m pytest`
// and through the guarded runner, alternating, 3 times each; wall time of the test process and
// pytest's own session time, summed, and their ratios. Also the oracle stage's wall time per
// verifier run. Runs each executor that is available. Usage: npm run bench:verify
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { runPipeline } from "../pipeline/engine.ts";
import { environmentSpec } from "../pipeline/executors/environment.ts";
import { createExecutor } from "../pipeline/executors/index.ts";
import { dockerAvailable } from "../pipeline/executors/docker.ts";
import { MirrorCache } from "../pipeline/git.ts";
import { parseJunitReport } from "../pipeline/domain/junit.ts";
import { silentLogger } from "../pipeline/logger.ts";
import { HeldoutTask } from "../pipeline/schemas/heldout.ts";
import { STAGE_ORDER } from "../pipeline/schemas/common.ts";
import { requiredTests } from "../pipeline/verifier/verify.ts";
import { freshCheckout } from "../pipeline/domain/checkout.ts";
import { prepareDemoCopy, withExecution } from "../test/helpers/demo-copy.ts";

const REPEATS = 3;
const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-verify-"));
try {
  const demo = await prepareDemoCopy(dir);
  const upTo = (last: string) => demo.options.stages.filter((s) => STAGE_ORDER.indexOf(s.name) <= STAGE_ORDER.indexOf(last as never));
  const executors: ("local" | "docker")[] = ["local", ...((await dockerAvailable(new Docker())) ? (["docker"] as const) : [])];
  // qualify runs locally; the oracle (run alone below) on each executor in turn.
  await runPipeline({ ...withExecution(demo.options, { executor: "local" }), stages: upTo("audit") });
  const mirrors = new MirrorCache(join(demo.workDir, "git"));
  const scratch = join(dir, "scratch");
  mkdirSync(scratch, { recursive: true });
  for (const kind of executors) {
    const oracle = await runPipeline({ ...withExecution(demo.options, { executor: kind }), stages: upTo("oracle") }, { only: "oracle", force: true });
    const stage = oracle.stages.find((s) => s.stage === "oracle")!;
    const heldout = readFileSync(join(demo.workDir, "artifacts", "oracle", "heldout.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => HeldoutTask.parse(JSON.parse(l)));
    const executor = await createExecutor(kind, { envRoot: join(demo.workDir, "envs"), log: silentLogger });
    const totals = { plain: { wall: 0, pytest: 0 }, guarded: { wall: 0, pytest: 0 } };
    for (const task of heldout) {
      const env = environmentSpec(task.repo, task.environment, task.environment_as_of);
      const mirror = await mirrors.ensure(task.repo, join(demo.corpus.dir, "repos", task.repo.replace("/", "__")), task.base_commit);
      const checkout = await freshCheckout(mirror, task.base_commit, [{ name: "reference", text: task.implementation_patch }, { name: "test", text: task.test_patch }], scratch);
      try {
        for (let i = 0; i < REPEATS; i++) {
          for (const mode of ["plain", "guarded"] as const) {
            const result = await executor.run({ env, checkoutDir: checkout.dir, tests: requiredTests(task), timeoutSeconds: 300, ...(mode === "guarded" ? { guarded: { submittedPaths: [] } } : {}) });
            totals[mode].wall += result.wallSeconds;
            totals[mode].pytest += result.junitXml ? parseJunitReport(result.junitXml).sessionSeconds : 0;
          }
        }
      } finally {
        await checkout.dispose();
      }
    }
    const runs = heldout.length * REPEATS;
    console.log(`${kind}: ${heldout.length} tasks × ${REPEATS} runs in each mode`);
    console.log(`  test process wall time: plain ${totals.plain.wall.toFixed(1)}s, guarded ${totals.guarded.wall.toFixed(1)}s, ratio ${(totals.guarded.wall / totals.plain.wall).toFixed(3)} (${((1000 * (totals.guarded.wall - totals.plain.wall)) / runs).toFixed(0)} ms a run)`);
    console.log(`  pytest session time:    plain ${totals.plain.pytest.toFixed(2)}s, guarded ${totals.guarded.pytest.toFixed(2)}s, ratio ${(totals.guarded.pytest / totals.plain.pytest).toFixed(3)}`);
    // A check stops at its first contrary run, so a rejected task has fewer than 6.
    const verifierRuns = readFileSync(join(demo.workDir, "artifacts", "oracle", "results.jsonl"), "utf8").split("\n").filter(Boolean).reduce((n, l) => n + JSON.parse(l).runs.length, 0);
    console.log(`  oracle stage: ${stage.in} tasks (${stage.rejected} rejected), ${verifierRuns} verifier runs in ${stage.seconds.toFixed(1)}s (${((1000 * stage.seconds) / verifierRuns).toFixed(0)} ms of stage wall time a run)`);
  }
  await demo.server.stop();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
