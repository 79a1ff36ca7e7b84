import picomatch from "picomatch";
import { GUARDED_RUN_ENV, IN_IMAGE, RUN_USER } from "../executors/docker.ts";
import { GUARDED_CONFIG_NAME, GUARDED_RUNNER, GUARDED_RUNNER_NAME } from "../executors/guarded.ts";
import { needsRevisionLayer } from "../executors/recipe-scripts.ts";
import { type RunLayout, runScript } from "../executors/runners.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import type { ClassificationRules } from "../schemas/repo-profile.ts";
import { EXCLUDED_DIRS, EXCLUDED_FILE, EXCLUDED_TOP_DIRS } from "../verifier/collect.ts";
import { RUNNER_MODULES, RUNNER_PACKAGES, TEST_CONFIGURATION } from "../verifier/submission.ts";
import { pathsOfPatch } from "../verifier/submission.ts";
import { requiredTests } from "../verifier/verify.ts";
import { PYTHON_FILES, VERIFIER_FILES, VERIFIER_OUTPUTS } from "./harbor-layout.ts";

/** Where the verifier container holds the scored checkout and the runner's files: the paths switch-swe's Docker executor gives them. */
const SCORED_CHECKOUT = "/checkout";
const RESULTS = "/results";
/** Harbor's verifier directory in the container (EnvironmentPaths.verifier_dir): its reward files are read from there. */
const HARBOR_VERIFIER_DIR = "/logs/verifier";

/** A profile glob as a regular expression Python's `re` reads as JavaScript does (picomatch's own translation). */
function globRegex(glob: string): string {
  return picomatch.makeRe(glob, { dot: true }).source;
}

/** The classification rules the verifier needs (which paths are tests), with each override's globs made regular expressions. */
function classificationData(rules: ClassificationRules): Record<string, unknown> {
  return {
    overrides: rules.overrides.map((o) => ({ class: o.class, regexes: o.globs.map(globRegex) })),
    conftest: rules.conftest,
    test_dirs: rules.test_dirs,
  };
}

/** The guarded run's layout, exactly as switch-swe's Docker executor lays out a guarded run (docker.ts run). */
function guardedLayout(heldout: HeldoutTask): RunLayout {
  const revision = needsRevisionLayer(heldout.environment);
  return {
    python: `${IN_IMAGE.venv}/bin/python`,
    resultsDir: RESULTS,
    channelOnStdout: true,
    runAs: RUN_USER,
    ...(revision
      ? { prepared: { checkout: SCORED_CHECKOUT, work: IN_IMAGE.work, baseFiles: IN_IMAGE.baseFiles, config: IN_IMAGE.config } }
      : { copyFrom: { from: SCORED_CHECKOUT, to: "/tmp/work" } }),
  };
}

export interface VerifierInput {
  heldout: HeldoutTask;
  rules: ClassificationRules;
  sessionId: string;
  condition: "control" | "switched";
  focusCheckout: string;
}

/** What the verifier helper reads (tests/task.json): the held-out test lists and paths, the rules, and where everything is. */
export function verifierTaskJson(input: VerifierInput): string {
  const { heldout } = input;
  if (heldout.environment.test_runner === "django")
    throw new Error(
      `${heldout.task_id}: its tests run with Django's runner, which the verifier does not run guarded (verify scores pytest-based runners only)`,
    );
  const [uid] = RUN_USER.split(":");
  const task = {
    session_id: input.sessionId,
    task_id: heldout.task_id,
    condition: input.condition,
    base_commit: heldout.base_commit,
    focus_checkout: input.focusCheckout,
    fail_to_pass: heldout.fail_to_pass,
    pass_to_pass: heldout.pass_to_pass,
    required: requiredTests(heldout),
    heldout_test_paths: [...pathsOfPatch(heldout.test_patch)].sort(),
    timeout_seconds: heldout.environment.test_timeout_seconds,
    base_archive: VERIFIER_FILES.baseArchive,
    test_patch: VERIFIER_FILES.testPatch,
    output_dir: HARBOR_VERIFIER_DIR,
    outputs: VERIFIER_OUTPUTS,
    runner: {
      checkout: SCORED_CHECKOUT,
      results: RESULTS,
      runner_file: VERIFIER_FILES.runner,
      runner_name: GUARDED_RUNNER_NAME,
      config_name: GUARDED_CONFIG_NAME,
      script: VERIFIER_FILES.runScript,
      env: Object.fromEntries(GUARDED_RUN_ENV.map((v) => [v.slice(0, v.indexOf("=")), v.slice(v.indexOf("=") + 1)])),
      run_uid: Number(uid),
    },
    collect: { excluded_dirs: [...EXCLUDED_DIRS].sort(), excluded_top_dirs: [...EXCLUDED_TOP_DIRS].sort(), excluded_file: EXCLUDED_FILE.source },
    classification: classificationData(input.rules),
    protected: {
      test_configuration: [...TEST_CONFIGURATION].sort(),
      runner_modules: [...RUNNER_MODULES].sort(),
      runner_packages: [...RUNNER_PACKAGES].sort(),
    },
  };
  return JSON.stringify(task, null, 2) + "\n";
}

/** Harbor runs tests/test.sh; it hands over to the helper with the image's own python3 (never the environment's). */
const TEST_SH = `#!/bin/sh
# Scores the agent's final focus checkout as switch-swe verify does (switch_swe_verify.py says how).
exec /usr/bin/python3 /tests/${VERIFIER_FILES.helper} /tests/${VERIFIER_FILES.task}
`;

/** Every file of a task's tests/ but its Dockerfile and the focus base archive: the verifier's own files and the held-out ones. */
export function verifierFiles(input: VerifierInput): Map<string, string> {
  const { heldout } = input;
  return new Map([
    [VERIFIER_FILES.script, TEST_SH],
    [VERIFIER_FILES.helper, PYTHON_FILES.verifier],
    [VERIFIER_FILES.runner, GUARDED_RUNNER],
    [VERIFIER_FILES.runScript, runScript(heldout.environment, requiredTests(heldout), guardedLayout(heldout), true)],
    [VERIFIER_FILES.task, verifierTaskJson(input)],
    [VERIFIER_FILES.testPatch, heldout.test_patch],
  ]);
}
