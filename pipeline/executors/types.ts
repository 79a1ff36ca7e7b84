import { existsSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { outputLooksTransient, TransientFailure } from "../failures.ts";
import type { EnvironmentRecipe } from "../schemas/repo-profile.ts";

/** An environment to run a repository's tests in: one per (repository, recipe, as-of date). */
export interface EnvironmentSpec {
  repo: string;
  recipe: EnvironmentRecipe;
  /** Dependencies are resolved only from releases published before this instant (uv --exclude-newer). */
  asOf: string | null;
  /** sha256 of the three above: names the virtual environment or image. */
  key: string;
}

export interface TestRunRequest {
  env: EnvironmentSpec;
  /** A prepared checkout on the host (patches applied). */
  checkoutDir: string;
  /** pytest arguments selecting tests: files or node ids; empty for the whole suite. */
  tests: string[];
  timeoutSeconds: number;
  /**
   * Run through the verifier's guarded runner (pipeline/verifier/runner.py) instead of
   * `python -m pytest`: for untrusted submissions, whose own outcome record is returned too.
   */
  guarded?: { submittedPaths: string[] };
}

export interface TestRunResult {
  timedOut: boolean;
  /** The JUnit XML report, read from outside the checkout; absent when pytest wrote none. */
  junitXml?: string;
  exitCode: number;
  wallSeconds: number;
  /** The last lines of the run's output, for diagnosis. */
  outputTail: string;
  /** With `guarded`: the runner's own record of the session (see runner.py), if it finished. */
  guardJson?: string;
}

/** The machinery failed (engine down, image build broken, OOM kill): retried, never blamed on the task. */
export class InfrastructureFault extends TransientFailure {
  override name = "InfrastructureFault";
}

/** A test run exceeded its timeout. For qualification that is the machine's moment, not the task's. */
export class RunTimedOut extends TransientFailure {
  override name = "RunTimedOut";
}

/** The environment cannot be built from its recipe (a dependency that does not exist, say): the task's fault. */
export class BuildFailed extends Error {
  override name = "BuildFailed";
}

export interface Executor {
  readonly kind: "docker" | "local";
  /** Keys of the environments this executor built (not found ready-made), in build order. */
  readonly built: string[];
  /** Builds the environment unless it exists; returns whether it had to be built. */
  ensureEnvironment(env: EnvironmentSpec): Promise<{ built: boolean }>;
  run(request: TestRunRequest): Promise<TestRunResult>;
}

/** pytest options the pipeline always sets, after the repository's own, so they win. */
export const PYTEST_OPTIONS = [
  "-p", "no:cacheprovider",
  // xunit1 records each test's file, so results map back to exact node ids
  "-o", "junit_family=xunit1",
  // a non-strict XPASS looks like a pass in JUnit; strict makes it a failure we can see
  "-o", "xfail_strict=true",
  // the repository's addopts (-x, --lf, plugins' options) must not change what runs
  "-o", "addopts=",
  "-q",
];

/** The verifier's guarded pytest runner, copied next to the JUnit report (outside the checkout) for guarded runs. */
export const GUARDED_RUNNER = readFileSync(fileURLToPath(new URL("../verifier/runner.py", import.meta.url)), "utf8");
export const GUARDED_RUNNER_NAME = "switch_swe_runner.py";
export const GUARD_REPORT_NAME = "guard.json";
const SUBMITTED_PATHS_NAME = "submitted.json";

/** Puts the guarded runner and the submission's paths in a results directory (outside the checkout). */
export async function prepareGuardedRun(resultsDir: string, guarded: { submittedPaths: string[] }): Promise<void> {
  await writeFile(join(resultsDir, GUARDED_RUNNER_NAME), GUARDED_RUNNER);
  await writeFile(join(resultsDir, SUBMITTED_PATHS_NAME), JSON.stringify(guarded.submittedPaths));
}

/**
 * The shell command for one run: the recipe's install commands, then pytest with our options;
 * `guarded` names the results directory holding the guarded runner, which then replaces `-m pytest`.
 */
export function testScript(recipe: EnvironmentRecipe, python: string, tests: string[], junitPath: string, guarded?: { resultsDir: string }): string {
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const install = recipe.install.map((c) => `${c}\n`).join("");
  const runner = guarded ? [`${guarded.resultsDir}/${GUARDED_RUNNER_NAME}`, `${guarded.resultsDir}/${GUARD_REPORT_NAME}`, `${guarded.resultsDir}/${SUBMITTED_PATHS_NAME}`] : ["-m", "pytest"];
  const pytest = [python, ...runner, ...tests, ...PYTEST_OPTIONS, `--junitxml=${junitPath}`].map(quote).join(" ");
  return `set -e\n${install}exec ${pytest}\n`;
}

const BUILD_PASSTHROUGH = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX"];
const CA_CANDIDATES = ["SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE"];

/**
 * What an environment build needs from the host to reach the package index: proxy and index
 * settings, and the CA bundle this machine trusts (behind a TLS-intercepting proxy pip and uv
 * fail without it). Builds only: test runs get none of it, and no network.
 */
export function buildNetworkSettings(env: NodeJS.ProcessEnv = process.env): { vars: Record<string, string>; caBundle?: string } {
  const vars: Record<string, string> = {};
  for (const key of BUILD_PASSTHROUGH) if (env[key]) vars[key] = env[key]!;
  const caBundle = CA_CANDIDATES.map((k) => env[k]).find((v): v is string => Boolean(v)) ?? (existsSync("/etc/ssl/certs/ca-certificates.crt") ? "/etc/ssl/certs/ca-certificates.crt" : undefined);
  return { vars, caBundle };
}

/**
 * Throws the right error for a failed environment build: transient (a full disk, an unreachable
 * index, a killed or timed-out step: retried, never cached) or BuildFailed (the recipe cannot be
 * built: a property of the recipe, remembered).
 */
export function buildFailure(what: string, output: string, interrupted: boolean, lowSpace?: string): never {
  const tail = output.trim().split("\n").slice(-5).join(" | ");
  if (interrupted || lowSpace || outputLooksTransient(output)) throw new InfrastructureFault(`${what} for a reason that may not recur${interrupted ? " (interrupted or timed out)" : ""}${lowSpace ? ` (${lowSpace})` : ""}: ${tail}`);
  throw new BuildFailed(`${what}: ${tail}`);
}

/**
 * An unguarded test run that ends by SIGKILL or SIGTERM (exit 137 / 143) without our timeout was
 * killed from outside (an operator, the OOM killer, an engine restart): an infrastructure fault,
 * never "every test absent". Guarded runs (the verifier) are not judged this way: there the
 * submission's own code could kill the run to have it called an infrastructure fault.
 */
export function assertNotKilled(exitCode: number, signal?: string): void {
  if (exitCode === 137 || exitCode === 143) throw new InfrastructureFault(`the test run was killed from outside (exit ${exitCode}${signal ? `, ${signal}` : ""}) before it finished`);
}

/**
 * Builds each environment once per process: concurrent callers share one build; a BuildFailed
 * is remembered (that recipe will not build), any other failure is tried again by the next caller.
 */
export class BuildOnce {
  private readonly pending = new Map<string, Promise<{ built: boolean }>>();

  run(key: string, build: () => Promise<{ built: boolean }>): Promise<{ built: boolean }> {
    let pending = this.pending.get(key);
    if (!pending) {
      pending = build();
      this.pending.set(key, pending);
      pending.catch((error) => {
        if (!(error instanceof BuildFailed)) this.pending.delete(key);
      });
    }
    return pending;
  }
}
