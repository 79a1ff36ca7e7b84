// What the verifier's guarded runner costs: the same required tests of every demo task that passed
// the oracle, on the same checkouts (reference + held-out tests), run through `python -m pytest`
// and through the guarded runner (its channel, audit hook and integrity checks, with the test
// files the verifier protects), alternating, 3 times each; wall time of the test process, summed,
// and its ratio (the guarded runner writes no JUnit report, so pytest's own session time is not
// compared). Also the oracle stage's wall time per
// verifier run. Runs each executor that is available. Usage: npm run bench:verify
import { WorkLayout } from "../pipeline/work-layout.ts";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dockerEngine } from "../pipeline/executors/docker-engine.ts";
import { orderStages, requireFinished } from "../pipeline/engine/engine.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { environmentSpec } from "../pipeline/executors/environment.ts";
import { createExecutor, DEFAULT_LIMIT_SETTINGS } from "../pipeline/executors/index.ts";
import { dockerAvailable } from "../pipeline/executors/docker.ts";
import { MirrorCache } from "../pipeline/git.ts";
import { silentLogger } from "../pipeline/logger.ts";
import { HeldoutTask } from "../pipeline/schemas/heldout.ts";
import { requiredTests, testFilesOf } from "../pipeline/verifier/verify.ts";
import { pathsOfPatch } from "../pipeline/verifier/submission.ts";
import { loadProfiles } from "../pipeline/profiles/load.ts";
import { freshCheckout } from "../pipeline/checkouts/checkout.ts";
import { prepareDemoCopy, withExecution } from "../test/helpers/demo-copy.ts";

const REPEATS = 3;
const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-verify-"));
try {
  const demo = await prepareDemoCopy(dir);
  const layout = new WorkLayout(demo.workDir);
  const order = orderStages(demo.options.stages);
  const upTo = (last: string) => order.slice(0, order.findIndex((s) => s.name === last) + 1);
  const executors: ("local" | "docker")[] = ["local", ...((await dockerAvailable(dockerEngine())) ? (["docker"] as const) : [])];
  // qualify runs locally; the oracle (run alone below) on each executor in turn.
  requireFinished(await runProjectOnce({ ...withExecution(demo.options, { executor: "local" }), stages: upTo("audit") }), "bench/verify-guard.ts");
  const mirrors = new MirrorCache(layout.mirrors);
  const profileDir = join(dir, "demo", "repos");
  const profiles = loadProfiles(
    readdirSync(profileDir).map((name) => ({ path: join(profileDir, name), text: readFileSync(join(profileDir, name), "utf8") })),
  ).profiles;
  const rulesOf = (repo: string) => profiles.get(repo)!.profile.classification;
  const scratch = join(dir, "checkouts");
  mkdirSync(scratch, { recursive: true });
  for (const kind of executors) {
    const oracle = await runProjectOnce({ ...withExecution(demo.options, { executor: kind }), stages: upTo("oracle") }, { only: "oracle", force: true });
    const stage = oracle.stages.find((s) => s.stage === "oracle")!;
    const heldout = readFileSync(layout.artifact("oracle", "heldout"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => HeldoutTask.parse(JSON.parse(l)));
    const executor = await createExecutor({ executor: kind, limits: DEFAULT_LIMIT_SETTINGS }, { workDir: demo.workDir, log: silentLogger });
    const totals = { plain: 0, guarded: 0 };
    for (const task of heldout) {
      const env = environmentSpec(task.repo, task.environment, task.environment_as_of);
      const mirror = await mirrors.ensure(task.repo, join(demo.corpus.dir, "repos", task.repo.replace("/", "__")), task.base_commit);
      const checkout = await freshCheckout(
        mirror,
        task.base_commit,
        [
          { name: "reference", text: task.implementation_patch },
          { name: "test", text: task.test_patch },
        ],
        scratch,
      );
      try {
        const guarded = {
          submittedPaths: [...pathsOfPatch(task.implementation_patch)],
          protectedPaths: await testFilesOf(checkout.dir, rulesOf(task.repo), pathsOfPatch(task.test_patch)),
        };
        for (let i = 0; i < REPEATS; i++) {
          for (const mode of ["plain", "guarded"] as const) {
            const result = await executor.run({
              env,
              checkoutDir: checkout.dir,
              tests: requiredTests(task),
              timeoutSeconds: 300,
              ...(mode === "guarded" ? { guarded } : {}),
            });
            totals[mode] += result.wallSeconds;
          }
        }
      } finally {
        await checkout.dispose();
      }
    }
    const runs = heldout.length * REPEATS;
    console.log(`${kind}: ${heldout.length} tasks × ${REPEATS} runs in each mode`);
    console.log(
      `  test process wall time: plain ${totals.plain.toFixed(1)}s, guarded ${totals.guarded.toFixed(1)}s, ratio ${(totals.guarded / totals.plain).toFixed(3)} (${((1000 * (totals.guarded - totals.plain)) / runs).toFixed(0)} ms a run)`,
    );
    // A check stops at its first contrary run, so a rejected task has fewer than 6.
    const verifierRuns = readFileSync(layout.artifact("oracle", "results"), "utf8")
      .split("\n")
      .filter(Boolean)
      .reduce((n, l) => n + JSON.parse(l).runs.length, 0);
    console.log(
      `  oracle stage: ${stage.in} tasks (${stage.rejected} rejected), ${verifierRuns} verifier runs in ${stage.seconds.toFixed(1)}s (${((1000 * stage.seconds) / verifierRuns).toFixed(0)} ms of stage wall time a run)`,
    );
  }
  await demo.server.stop();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
