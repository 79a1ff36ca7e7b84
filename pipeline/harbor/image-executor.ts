import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GUARDED_RUN_ENV, IN_IMAGE, RUN_USER } from "../executors/in-image.ts";
import { runGuardedScript } from "../executors/local.ts";
import { needsRevisionLayer } from "../executors/recipe-scripts.ts";
import { prepareRunFiles, type RunLayout, runScript } from "../executors/runners.ts";
import type { Executor, PythonOffer, TestRunRequest, TestRunResult } from "../executors/types.ts";

/**
 * The executor of verify inside an exported task's verifier image (pipeline/harbor/verifier-program.ts):
 * the environment is the image's own (built with it, at /env, the focus base prepared at /work
 * where the recipe installs from the checkout), and a guarded run is run in this container as
 * switch-swe's Docker executor runs one in a container of that image: the same run script
 * (runners.ts), the runner (pipeline/verifier/runner.py) and its configuration outside the
 * checkout, the checkout copied (or overlaid on the prepared one) and the tests run as the
 * run user with no capabilities, the channel read as it arrives. What the container's limits
 * are is Harbor's to set (task.toml's verifier environment).
 */
export class ImageExecutor implements Executor {
  readonly kind = "local" as const;
  readonly built: string[] = [];
  readonly buildSeconds = new Map<string, number>();
  /** The last run's outcome, for the verifier's record of what it graded. */
  lastRun?: TestRunResult;
  private preparedUsed = false;

  ensureEnvironment(): Promise<{ built: boolean }> {
    return Promise.resolve({ built: false });
  }

  pythonOffer(): Promise<PythonOffer> {
    return Promise.reject(new Error("the verifier's image holds its environment, built with it: no recipe is planned here"));
  }

  async run(request: TestRunRequest): Promise<TestRunResult> {
    if (!request.guarded) throw new Error("the verifier's image runs guarded runs only");
    const revision = needsRevisionLayer(request.env.recipe);
    // The prepared checkout is the image's, overlaid by a run: a second run would not start from the base.
    if (revision && this.preparedUsed) throw new Error(`${IN_IMAGE.work}: the prepared checkout was used by an earlier run in this container`);
    this.preparedUsed = revision;
    const results = await mkdtemp(join(tmpdir(), "switch-swe-results-"));
    const work = join(tmpdir(), `switch-swe-work-${process.pid}-${Date.now()}`);
    try {
      // The runner's directory is readable by the run user, never writable (it reports on its channel).
      await chmod(results, 0o755);
      const layout: RunLayout = {
        python: `${IN_IMAGE.venv}/bin/python`,
        resultsDir: results,
        runAs: RUN_USER,
        ...(revision
          ? { prepared: { checkout: request.checkoutDir, work: IN_IMAGE.work, baseFiles: IN_IMAGE.baseFiles, config: IN_IMAGE.config } }
          : { copyFrom: { from: request.checkoutDir, to: work } }),
      };
      await prepareRunFiles(results, request.env.recipe, layout, request.guarded);
      await writeFile(join(results, "run.sh"), runScript(request.env.recipe, request.tests, layout, true));
      const env = Object.fromEntries(GUARDED_RUN_ENV.map((v) => [v.slice(0, v.indexOf("=")), v.slice(v.indexOf("=") + 1)]));
      this.lastRun = await runGuardedScript(join(results, "run.sh"), { cwd: request.checkoutDir, env, timeoutSeconds: request.timeoutSeconds });
      return this.lastRun;
    } finally {
      await rm(results, { recursive: true, force: true });
      await rm(work, { recursive: true, force: true });
    }
  }
}
