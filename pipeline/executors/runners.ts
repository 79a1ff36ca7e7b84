import { writeFile } from "node:fs/promises";
import { join, posix } from "node:path";
import { djangoLabel } from "../test-results/test-ids.ts";
import type { EnvironmentRecipe } from "../schemas/repo-profile.ts";
import { quote, SYNC_SCRIPT_NAME } from "./recipe-scripts.ts";
import { GUARDED_CONFIG_NAME, GUARDED_RUNNER, GUARDED_RUNNER_NAME, type GuardedRun } from "./guarded.ts";

/**
 * pytest options the pipeline adds, after the repository's own configuration (its `addopts`
 * included: the configuration comes from the base revision and the held-out test patch, never from
 * a submission) so that these win.
 */
export const PYTEST_OPTIONS = [
  "-p",
  "no:cacheprovider",
  // xunit1 records each test's file, so results map back to exact node ids
  "-o",
  "junit_family=xunit1",
  // a non-strict XPASS looks like a pass in JUnit; strict makes it a failure we can see
  "-o",
  "xfail_strict=true",
  // a repository's -x (maxfail=1) in addopts would leave later tests unrun; 0 is no limit
  "--maxfail=0",
  "-q",
];

/** The Django settings module our runs use: the repository's test settings, reporting as JUnit XML. */
export const DJANGO_SETTINGS_MODULE = "switch_swe_django_settings";

function djangoSettings(resultsDir: string, reportName: string): string {
  return [
    "# Written by switch-swe for one test run: the repository's own test settings, with results",
    "# reported as JUnit XML by unittest-xml-reporting's Django runner.",
    "from test_sqlite import *  # noqa: F401,F403",
    "",
    'TEST_RUNNER = "xmlrunner.extra.djangotestrunner.XMLTestRunner"',
    `TEST_OUTPUT_DIR = ${JSON.stringify(resultsDir)}`,
    `TEST_OUTPUT_FILE_NAME = ${JSON.stringify(reportName)}`,
    "TEST_OUTPUT_VERBOSE = 1",
    "",
  ].join("\n");
}

export interface RunLayout {
  /** The environment's interpreter. */
  python: string;
  /** The results directory as the run sees it (outside the checkout); the report goes in it. */
  resultsDir: string;
  /** With a prepared revision: overlay the run's checkout onto the prepared one, and run there. */
  prepared?: { checkout: string; work: string; baseFiles: string; config: string };
  /** Copy the run's checkout to this directory, and run there. */
  copyFrom?: { from: string; to: string };
  /** The guarded runner's channel (fd 3) is made the process's standard output (containers). */
  channelOnStdout?: boolean;
  /**
   * Prepare the checkout as root, give it to this user ("uid:gid"), and run the tests as that
   * user with no capabilities at all (setpriv, from util-linux, which every Debian base has).
   */
  runAs?: string;
}

export const REPORT_NAME = "report.xml";

/** Files a run needs in its results directory (on the host at `hostResultsDir`) before it starts. */
export async function prepareRunFiles(hostResultsDir: string, recipe: EnvironmentRecipe, layout: RunLayout, guarded?: GuardedRun): Promise<void> {
  if (recipe.test_runner === "django") await writeFile(join(hostResultsDir, `${DJANGO_SETTINGS_MODULE}.py`), djangoSettings(layout.resultsDir, REPORT_NAME));
  if (guarded) {
    await writeFile(join(hostResultsDir, GUARDED_RUNNER_NAME), GUARDED_RUNNER);
    await writeFile(join(hostResultsDir, GUARDED_CONFIG_NAME), JSON.stringify({ submitted: guarded.submittedPaths, protected: guarded.protectedPaths }));
  }
}

/** The runner's command line for the given tests (files or ids); empty runs the whole suite. */
export function runnerArgv(recipe: EnvironmentRecipe, tests: string[], layout: RunLayout, guarded: boolean): { argv: string[]; env: Record<string, string> } {
  const junit = `${layout.resultsDir}/${REPORT_NAME}`;
  switch (recipe.test_runner) {
    case "pytest":
    case "sympy": {
      // A guarded run reports on its channel; it writes no JUnit file (nothing would read it).
      if (guarded)
        return {
          argv: [
            layout.python,
            `${layout.resultsDir}/${GUARDED_RUNNER_NAME}`,
            `${layout.resultsDir}/${GUARDED_CONFIG_NAME}`,
            ...recipe.test_options,
            ...tests,
            ...PYTEST_OPTIONS,
          ],
          env: {},
        };
      return { argv: [layout.python, "-m", "pytest", ...recipe.test_options, ...tests, ...PYTEST_OPTIONS, `--junitxml=${junit}`], env: {} };
    }
    case "django":
      if (guarded) throw new Error("the django runner cannot run guarded (verify scores pytest-based runners only)");
      return {
        argv: [
          layout.python,
          "tests/runtests.py",
          `--settings=${DJANGO_SETTINGS_MODULE}`,
          "--parallel=1",
          "--verbosity=2",
          ...recipe.test_options,
          ...[...new Set(tests.map(djangoLabel))],
        ],
        // our settings module sits in the results directory; runtests.py puts tests/ on the path itself
        env: { PYTHONPATH: layout.resultsDir },
      };
  }
}

/** A person-readable form of the command a run executes, for records and held-out files. */
export function describeTestCommand(recipe: EnvironmentRecipe, tests: string[]): string {
  const { argv } = runnerArgv(recipe, tests, { python: "python", resultsDir: "RESULTS" }, false);
  const variables = Object.entries(recipe.test_env ?? {}).map(([key, value]) => `${key}=${quote(value)}`);
  return [...variables, ...argv].join(" ");
}

/** The recipe's test_env with `{venv}` made the virtual environment of `python` (its bin directory's parent). */
export function testVariables(recipe: EnvironmentRecipe, python: string): Record<string, string> {
  const venv = posix.dirname(posix.dirname(python));
  return Object.fromEntries(Object.entries(recipe.test_env ?? {}).map(([key, value]) => [key, value.replaceAll("{venv}", venv)]));
}

/** The shell script of one run: the overlay onto a prepared checkout when there is one, then the runner. */
export function runScript(recipe: EnvironmentRecipe, tests: string[], layout: RunLayout, guarded: boolean): string {
  const { argv, env } = runnerArgv(recipe, tests, layout, guarded);
  let script = "set -e\n";
  // In a container the channel leaves on standard output, which nothing else may write to: the
  // run's own output goes to standard error.
  if (guarded && layout.channelOnStdout) script += "exec 3>&1 1>&2\n";
  if (layout.copyFrom)
    script += `mkdir -p ${quote(layout.copyFrom.to)}\ncp -RP --preserve=mode ${quote(`${layout.copyFrom.from}/.`)} ${quote(layout.copyFrom.to)}\ncd ${quote(layout.copyFrom.to)}\n`;
  if (layout.prepared) {
    const { checkout, work, baseFiles, config } = layout.prepared;
    script += `${quote(layout.python)} ${quote(`${config}/${SYNC_SCRIPT_NAME}`)} overlay ${quote(checkout)} ${quote(work)} ${quote(baseFiles)}\n`;
    script += `cd ${quote(work)}\n`;
  }
  for (const [key, value] of Object.entries({ ...testVariables(recipe, layout.python), ...env })) script += `export ${key}=${quote(value)}\n`;
  let command = argv;
  if (layout.runAs) {
    const [uid, gid] = layout.runAs.split(":") as [string, string];
    // Only what the run itself put there changes owner (a revision image's checkout is the user's already).
    script += `find . ! -user ${uid} -exec chown -h ${layout.runAs} {} +\n`;
    command = ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--", ...argv];
  }
  return `${script}exec ${command.map(quote).join(" ")}\n`;
}
