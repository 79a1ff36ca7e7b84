import { existsSync } from "node:fs";
import { writeFileAtomic } from "../atomic.ts";
import { join } from "node:path";
import { outputLooksTransient, TransientFailure } from "../failures.ts";
import type { BaseRevision, CheckoutOrigin } from "../checkouts/checkout.ts";
import type { GuardChannel, GuardedRun } from "./guarded.ts";
import type { EnvironmentRecipe } from "../schemas/repo-profile.ts";

/** An environment to run a repository's tests in: one per (repository, recipe, as-of date). */
export interface EnvironmentSpec {
  repo: string;
  recipe: EnvironmentRecipe;
  /** Dependencies are resolved only from releases published before this instant (uv --exclude-newer). */
  asOf: string | null;
  /** sha256 of the three above and ENVIRONMENT_SCHEME: names the virtual environment or image. */
  key: string;
}

export interface TestRunRequest {
  env: EnvironmentSpec;
  /** A prepared checkout on the host (patches applied). */
  checkoutDir: string;
  /** How `checkoutDir` was made (freshCheckout's origin): required by the queue executor, whose workers make their own. */
  source?: CheckoutOrigin;
  /** Tests to run: files or test ids (pytest node ids, Django unittest ids); empty for the whole suite. */
  tests: string[];
  timeoutSeconds: number;
  /**
   * The base revision the checkout was made from. Required when the recipe installs from the
   * checkout: the run then uses that revision's prepared environment.
   */
  baseCommit?: string;
  /**
   * Run through the verifier's guarded runner (pipeline/verifier/runner.py) instead of
   * `python -m pytest`: for untrusted submissions. Its results come back on a channel the test
   * process cannot forge from outside itself, never from a file; no JUnit report is read.
   */
  guarded?: GuardedRun;
}

/** How much of a run's output is kept (its end): what a failed run's saved log holds. */
export const RUN_OUTPUT_LIMIT = 1_000_000;

export interface TestRunResult {
  timedOut: boolean;
  /** The JUnit XML report, read from outside the checkout; absent when pytest wrote none. */
  junitXml?: string;
  exitCode: number;
  wallSeconds: number;
  /** The run's output, its last RUN_OUTPUT_LIMIT bytes at most: saved whole when the run failed. */
  outputTail: string;
  /** With `guarded`: what the runner's channel carried up to its `finish` record (nothing of a timed-out run). */
  channel?: GuardChannel;
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

/**
 * The Python versions an executor can give an environment: interpreters it has without a
 * download (base images, this machine's), and whether uv's managed downloads can be had too.
 */
export interface PythonOffer {
  installed: string[];
  downloads: boolean;
  /** Where the installed ones come from, for messages ("Debian base images: 3.9 (bullseye), …"). */
  describe: string;
}

export interface Executor {
  readonly kind: "docker" | "local";
  /** Keys of the environments this executor built (not found ready-made), in build order. */
  readonly built: string[];
  /** How long each of those builds took. */
  readonly buildSeconds: ReadonlyMap<string, number>;
  /**
   * Builds the environment unless it exists, and, when the recipe installs from the checkout, the
   * base revision's layer from `base`; returns whether anything had to be built.
   */
  ensureEnvironment(env: EnvironmentSpec, base?: BaseRevision): Promise<{ built: boolean }>;
  /** The Python versions this executor can give an environment (a recipe's choice is made from them). */
  pythonOffer(): Promise<PythonOffer>;
  run(request: TestRunRequest): Promise<TestRunResult>;
  /** Releases what the executor holds open (the queue executor's connections); the engine calls it at the end of a run. */
  close?(): Promise<void>;
}

const BUILD_PASSTHROUGH = [
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "PIP_INDEX_URL",
  "PIP_EXTRA_INDEX_URL",
  "UV_INDEX_URL",
  "UV_EXTRA_INDEX_URL",
  "UV_DEFAULT_INDEX",
];
export const CA_CANDIDATES = ["SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE"];

/**
 * What an environment build needs from the host to reach the package index: proxy and index
 * settings, and the CA bundle this machine trusts (behind a TLS-intercepting proxy pip and uv
 * fail without it). Builds only: test runs get none of it, and no network.
 */
export function buildNetworkSettings(env: NodeJS.ProcessEnv = process.env): { vars: Record<string, string>; caBundle?: string } {
  const vars: Record<string, string> = {};
  for (const key of BUILD_PASSTHROUGH) if (env[key]) vars[key] = env[key]!;
  const caBundle =
    CA_CANDIDATES.map((k) => env[k]).find((v): v is string => Boolean(v)) ??
    (existsSync("/etc/ssl/certs/ca-certificates.crt") ? "/etc/ssl/certs/ca-certificates.crt" : undefined);
  return { vars, caBundle };
}

/**
 * Keeps a build's whole log; returns its path, or undefined when it could not be written (the
 * disk that just filled up, say): the build's own failure is what must be reported then.
 */
export async function saveBuildLog(dir: string, name: string, text: string): Promise<string | undefined> {
  try {
    const path = join(dir, `${name}.log`);
    await writeFileAtomic(path, text);
    return path;
  } catch {
    return undefined;
  }
}

/** Printed before each build step, so a failure names the step it happened in. */
export const STEP_MARKER = "switch-swe step:";

/**
 * What a failed build's log says went wrong: the step it was in (the last STEP_MARKER line) and
 * the lines that look like the error (uv's and pip's), or its last lines when none do.
 */
export function summariseBuildLog(output: string): string {
  const lines = output.split("\n").map((l) => l.trimEnd());
  let stepAt = -1;
  lines.forEach((line, i) => {
    if (line.startsWith(STEP_MARKER)) stepAt = i;
  });
  const step = stepAt >= 0 ? lines[stepAt]!.slice(STEP_MARKER.length).trim() : undefined;
  const after = lines.slice(stepAt + 1).filter((l) => l.trim());
  const errors = after.filter((l) =>
    /^\s*(×|╰─▶|error|ERROR|Error|hint|Because|And because|Caused by|help:)|No solution found|No matching distribution|Could not find a version|ModuleNotFoundError|ImportError|SyntaxError/.test(
      l,
    ),
  );
  const shown = (errors.length ? errors : after.slice(-5)).slice(0, 12).map((l) => l.trim());
  return `${step ? `step '${step}' failed` : "the build failed"}: ${shown.join(" | ")}`;
}

/**
 * Throws the right error for a failed environment build: transient (a full disk, an unreachable
 * index, a killed or timed-out step: retried, never cached) or BuildFailed (the recipe cannot be
 * built: a property of the recipe, remembered). `logPath` is where the whole log was saved.
 */
export function buildFailure(what: string, output: string, interrupted: boolean, lowSpace?: string, logPath?: string, pythons?: string): never {
  const summary = summariseBuildLog(output);
  const log = logPath ? ` (whole log: ${logPath})` : "";
  // No interpreter of the version, and no way to download one: a property of this setup, said plainly.
  const managed = /^step 'downloading a uv-managed Python ([\d.]+)'/.exec(summary);
  if (managed && !interrupted && !lowSpace)
    throw new BuildFailed(
      `${what}: Python ${managed[1]} is not available here${pythons ? ` (${pythons})` : ""} and uv could not download a managed Python ${managed[1]} (no internet?): ${summary}${log}`,
    );
  if (interrupted || lowSpace || outputLooksTransient(output))
    throw new InfrastructureFault(
      `${what} for a reason that may not recur${interrupted ? " (interrupted or timed out)" : ""}${lowSpace ? ` (${lowSpace})` : ""}: ${summary}${log}`,
    );
  throw new BuildFailed(`${what}: ${summary}${log}`);
}

/**
 * An unguarded test run that ends by SIGKILL or SIGTERM (exit 137 / 143) without our timeout was
 * killed from outside (an operator, the OOM killer, an engine restart): an infrastructure fault,
 * never "every test absent". Guarded runs (the verifier) are not judged this way: there the
 * submission's own code could kill the run to have it called an infrastructure fault.
 */
export function assertNotKilled(exitCode: number, signal?: string): void {
  if (exitCode === 137 || exitCode === 143)
    throw new InfrastructureFault(`the test run was killed from outside (exit ${exitCode}${signal ? `, ${signal}` : ""}) before it finished`);
}

/**
 * Builds each environment once per executor: its concurrent callers share one build; a BuildFailed
 * is remembered (that recipe will not build), any other failure is tried again by the next caller.
 * Executors that build into one place take turns per key (see the constructor).
 */
export class BuildOnce {
  private readonly pending = new Map<string, Promise<{ built: boolean }>>();
  /** Builds under way in this process, by the place they build into and their key. */
  private static readonly underWay = new Map<unknown, Map<string, Promise<unknown>>>();

  /**
   * `place` is where builds go (an environments directory, a Docker engine's client): executors
   * sharing it in one process — a queue worker makes one per job's limits — build one key at a
   * time, the later finding the earlier's result in place instead of building over it.
   */
  constructor(private readonly place?: unknown) {}

  run(key: string, build: () => Promise<{ built: boolean }>): Promise<{ built: boolean }> {
    let pending = this.pending.get(key);
    if (!pending) {
      pending = this.place === undefined ? build() : BuildOnce.oneAtATime(this.place, key, build);
      this.pending.set(key, pending);
      pending.catch((error) => {
        if (!(error instanceof BuildFailed)) this.pending.delete(key);
      });
    }
    return pending;
  }

  private static oneAtATime<T>(place: unknown, key: string, build: () => Promise<T>): Promise<T> {
    let byKey = BuildOnce.underWay.get(place);
    if (!byKey) BuildOnce.underWay.set(place, (byKey = new Map()));
    const before = byKey.get(key) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(build);
    byKey.set(key, mine);
    void mine
      .catch(() => undefined)
      .then(() => {
        if (byKey.get(key) === mine) byKey.delete(key);
        if (!byKey.size) BuildOnce.underWay.delete(place);
      });
    return mine;
  }
}
