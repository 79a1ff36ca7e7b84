import { existsSync } from "node:fs";
import { environmentsLayout } from "../work-layout.ts";
import { cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { lowDiskSpace } from "../failures.ts";
import type { Logger } from "../logger.ts";
import { ChannelReader, channelToken } from "./guarded.ts";
import {
  environmentLayerKey,
  environmentScript,
  needsRevisionLayer,
  quote,
  revisionKey,
  revisionScript,
  revisionVersion,
  SYNC_SCRIPT_NAME,
} from "./recipe-scripts.ts";
import { fromDirectory, readCheckoutPins } from "./checkout-pins.ts";
import { BASE_ENV, runProcess } from "./processes.ts";

import { prepareRunFiles, REPORT_NAME, type RunLayout, runScript } from "./runners.ts";
import { hostPythons, type PythonDownloads, pythonOffer } from "./python-offer.ts";
import {
  assertNotKilled,
  BuildFailed,
  buildFailure,
  BuildOnce,
  buildNetworkSettings,
  saveBuildLog,
  type EnvironmentSpec,
  type Executor,
  type PythonOffer,
  type TestRunRequest,
  type TestRunResult,
} from "./types.ts";
import { type BaseRevision } from "../checkouts/checkout.ts";

/**
 * A virtual environment per environment key on this machine, for the demo and for users without
 * Docker. Nothing is sandboxed: the repository's tests run as this user, with this network.
 * They do get a clean environment: no variable of ours (GITHUB_TOKEN included) reaches them.
 */
/**
 * One run at a time per prepared revision, by its directory: its checkout is shared, and restored
 * before each run. Held for the process, not an executor: a queue worker makes one per job's limits.
 */
const revisionLocks = new Map<string, Promise<unknown>>();

export class LocalExecutor implements Executor {
  readonly kind = "local" as const;
  private readonly once: BuildOnce;
  readonly built: string[] = [];
  readonly buildSeconds = new Map<string, number>();

  constructor(
    private readonly root: string,
    private readonly log: Logger,
    private readonly options: { pythonDownloads?: PythonDownloads } = {},
  ) {
    this.once = new BuildOnce(`local:${root}`);
  }

  /** This machine's interpreters (python3, python3.X), and uv's downloads where they can be had. */
  pythonOffer(): Promise<PythonOffer> {
    return pythonOffer(hostPythons(), "this machine's interpreters", this.options.pythonDownloads ?? "auto");
  }

  private envDir(env: EnvironmentSpec): string {
    return join(this.root, environmentLayerKey(env).slice(0, 16));
  }

  private revisionDir(env: EnvironmentSpec, commit: string): string {
    return join(this.root, `rev-${revisionKey(env, commit).slice(0, 16)}`);
  }

  private get cacheDir(): string {
    return environmentsLayout(this.root).uvCache;
  }

  async ensureEnvironment(env: EnvironmentSpec, base?: BaseRevision): Promise<{ built: boolean }> {
    if (!needsRevisionLayer(env.recipe)) return this.once.run(environmentLayerKey(env), () => this.buildEnvironment(env));
    if (!base) throw new Error(`the recipe of ${env.repo} installs from the checkout, so its environment needs a base revision`);
    return this.once.run(revisionKey(env, base.commit), () => this.buildRevision(env, base));
  }

  /** Runs a build script; a failure is classified (transient or the recipe's) with its whole log saved. */
  private async runBuildScript(script: string, cwd: string, env: EnvironmentSpec, what: string, logName: string): Promise<void> {
    const network = buildNetworkSettings();
    const ca: Record<string, string> = network.caBundle ? { SSL_CERT_FILE: network.caBundle, PIP_CERT: network.caBundle } : {};
    const result = await runProcess("sh", ["-c", script], {
      cwd,
      env: { ...BASE_ENV, ...network.vars, ...ca, HOME: tmpdir() },
      timeoutSeconds: env.recipe.install_timeout_seconds,
      outputLimit: 16_000_000,
      killWhenOrphaned: true,
    });
    const logPath = await saveBuildLog(environmentsLayout(this.root).buildLogs, logName, result.output);
    if (result.code !== 0 || result.timedOut)
      buildFailure(
        `${what} failed`,
        result.output,
        result.timedOut || Boolean(result.signal),
        lowDiskSpace(this.root),
        logPath,
        "the local executor found no such interpreter on this machine's PATH",
      );
  }

  private async checkDebianPackages(env: EnvironmentSpec): Promise<void> {
    const missing: string[] = [];
    for (const name of env.recipe.debian_packages) {
      const result = await runProcess("dpkg-query", ["-W", "-f=${Status}", name], { cwd: tmpdir(), env: BASE_ENV, timeoutSeconds: 30 }).catch(() => undefined);
      if (!result || result.code !== 0 || !result.output.includes("install ok installed")) missing.push(name);
    }
    if (missing.length)
      throw new BuildFailed(
        `the recipe of ${env.repo} needs Debian packages this machine lacks: ${missing.join(", ")} (the local executor cannot install them; install them or use the docker executor)`,
      );
  }

  private async buildEnvironment(env: EnvironmentSpec): Promise<{ built: boolean }> {
    const dir = this.envDir(env);
    if (existsSync(join(dir, ".ready"))) return { built: false };
    await this.checkDebianPackages(env);
    const interpreter = await this.findPython(env.recipe.python);
    // This process's own directory until it is whole (one build of a key at a time here: BuildOnce).
    const partial = `${dir}.partial-${process.pid}`;
    await rm(partial, { recursive: true, force: true });
    await mkdir(this.root, { recursive: true });
    const key = environmentLayerKey(env);
    this.log.info(
      `building environment ${key.slice(0, 12)} for ${env.repo} (Python ${env.recipe.python}${interpreter ? "" : ", uv-managed"}, as of ${env.asOf ?? "today"})`,
    );
    const started = performance.now();
    try {
      const script = environmentScript(env, {
        venv: partial,
        config: join(partial, ".switch-swe"),
        cache: this.cacheDir,
        interpreter: interpreter && quote(interpreter),
      });
      await this.runBuildScript(script, this.root, env, `building the environment of ${env.repo}`, key.slice(0, 16));
      await writeFile(join(partial, ".recipe.json"), JSON.stringify({ repo: env.repo, recipe: env.recipe, asOf: env.asOf }, null, 2));
      await writeFile(join(partial, ".ready"), "");
    } catch (error) {
      await rm(partial, { recursive: true, force: true });
      throw error;
    }
    await rm(dir, { recursive: true, force: true });
    await rename(partial, dir);
    this.built.push(key);
    this.buildSeconds.set(key, (performance.now() - started) / 1000);
    return { built: true };
  }

  /**
   * The revision layer on this machine: an environment of its own (virtual environments cannot be
   * stacked or moved), built in place because the repository's editable install records its path,
   * with the checkout at the base revision prepared in `work` and kept pristine in `pristine`.
   */
  private async buildRevision(env: EnvironmentSpec, base: BaseRevision): Promise<{ built: boolean }> {
    const dir = this.revisionDir(env, base.commit);
    if (existsSync(join(dir, ".ready"))) return { built: false };
    await this.checkDebianPackages(env);
    const interpreter = await this.findPython(env.recipe.python);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    this.log.info(
      `building environment ${basename(dir)}: ${env.repo} at ${base.commit.slice(0, 12)} (Python ${env.recipe.python}, as of ${env.asOf ?? "today"})`,
    );
    const paths = {
      venv: join(dir, "venv"),
      config: join(dir, "config"),
      cache: this.cacheDir,
      work: join(dir, "work"),
      baseFiles: join(dir, "base-files.txt"),
    };
    const checkout = await base.checkout();
    const started = performance.now();
    try {
      const python = quote(join(paths.venv, "bin", "python"));
      const copy = `mkdir -p ${quote(paths.work)} && ${python} ${quote(join(paths.config, SYNC_SCRIPT_NAME))} overlay ${quote(checkout.dir)} ${quote(paths.work)} /dev/null\n`;
      const script =
        environmentScript(env, { ...paths, interpreter: interpreter && quote(interpreter) }) +
        copy +
        revisionScript(
          env,
          { ...paths, python },
          await revisionVersion(checkout.dir),
          await readCheckoutPins(fromDirectory(checkout.dir), env.recipe.requirements_files),
        );
      await this.runBuildScript(script, dir, env, `installing ${env.repo} at ${base.commit.slice(0, 12)}`, basename(dir));
      await cp(paths.work, join(dir, "pristine"), { recursive: true, verbatimSymlinks: true });
      await writeFile(join(dir, ".ready"), "");
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    } finally {
      await checkout.dispose();
    }
    this.built.push(revisionKey(env, base.commit));
    this.buildSeconds.set(revisionKey(env, base.commit), (performance.now() - started) / 1000);
    return { built: true };
  }

  /** This machine's interpreter of that version, or null: the build then asks uv for a managed one. */
  private async findPython(version: string): Promise<string | null> {
    for (const candidate of [`python${version}`, "python3"]) {
      const result = await runProcess(candidate, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], {
        cwd: tmpdir(),
        env: BASE_ENV,
        timeoutSeconds: 30,
      }).catch(() => undefined);
      if (result?.code === 0 && result.output.trim() === version) return candidate;
    }
    return null;
  }

  async run(request: TestRunRequest): Promise<TestRunResult> {
    const { env } = request;
    if (!needsRevisionLayer(env.recipe)) return this.runIn(request, join(this.envDir(env), "bin", "python"), this.envDir(env));
    if (!request.baseCommit) throw new Error(`the recipe of ${env.repo} installs from the checkout: a run must name its base commit`);
    const dir = this.revisionDir(env, request.baseCommit);
    // One run at a time in a prepared checkout, restored to its pristine state first.
    const previous = revisionLocks.get(dir) ?? Promise.resolve();
    const mine = previous
      .catch(() => undefined)
      .then(async () => {
        await rm(join(dir, "work"), { recursive: true, force: true });
        await cp(join(dir, "pristine"), join(dir, "work"), { recursive: true, verbatimSymlinks: true });
        return this.runIn(request, join(dir, "venv", "bin", "python"), join(dir, "venv"), {
          checkout: request.checkoutDir,
          work: join(dir, "work"),
          baseFiles: join(dir, "base-files.txt"),
          config: join(dir, "config"),
        });
      });
    revisionLocks.set(dir, mine);
    try {
      return await mine;
    } finally {
      if (revisionLocks.get(dir) === mine) revisionLocks.delete(dir);
    }
  }

  private async runIn(request: TestRunRequest, python: string, venv: string, prepared?: RunLayout["prepared"]): Promise<TestRunResult> {
    const results = await mkdtemp(join(tmpdir(), "switch-swe-results-"));
    try {
      const layout: RunLayout = { python, resultsDir: results, ...(prepared ? { prepared } : {}) };
      await prepareRunFiles(results, request.env.recipe, layout, request.guarded);
      const script = runScript(request.env.recipe, request.tests, layout, Boolean(request.guarded));
      const env = { ...BASE_ENV, PATH: `${join(venv, "bin")}:${BASE_ENV.PATH}`, HOME: results, VIRTUAL_ENV: venv };
      if (request.guarded) {
        await writeFile(join(results, "run.sh"), script);
        return await runGuardedScript(join(results, "run.sh"), { cwd: request.checkoutDir, env, timeoutSeconds: request.timeoutSeconds });
      }
      const done = await runProcess("bash", ["-s"], {
        cwd: request.checkoutDir,
        env,
        timeoutSeconds: request.timeoutSeconds,
        input: script,
        ownPidNamespace: true,
        killWhenOrphaned: true,
      });
      if (!done.timedOut) assertNotKilled(done.code, done.signal ? `signal ${done.signal}` : undefined);
      // A timed-out run's files are never read: whatever they say was not finished.
      const junit = join(results, REPORT_NAME);
      const junitXml = !done.timedOut && existsSync(junit) ? await readFile(junit, "utf8") : undefined;
      return { timedOut: done.timedOut, junitXml, exitCode: done.code, wallSeconds: done.seconds, outputTail: done.output };
    } finally {
      await rm(results, { recursive: true, force: true });
    }
  }
}

/**
 * A guarded run's script, run on this machine in a PID namespace of its own: the runner takes its
 * token on standard input (so the script is a file) and reports on fd 3, read as it arrives; the
 * run is killed at the runner's finish record. A run that timed out has nothing to say: its
 * channel is not read.
 */
export async function runGuardedScript(
  scriptFile: string,
  options: { cwd: string; env: Record<string, string>; timeoutSeconds: number },
): Promise<TestRunResult> {
  const token = channelToken();
  let reader: ChannelReader | undefined;
  const done = await runProcess("bash", [scriptFile], {
    cwd: options.cwd,
    env: options.env,
    timeoutSeconds: options.timeoutSeconds,
    input: `${token}\n`,
    ownPidNamespace: true,
    killWhenOrphaned: true,
    channel: (chunk, stop) => {
      reader ??= new ChannelReader(token, stop);
      reader.push(chunk);
    },
  });
  const channel = done.timedOut ? undefined : (reader?.channel ?? { records: [], finished: false, foreign: [] });
  return { timedOut: done.timedOut, exitCode: done.code, wallSeconds: done.seconds, outputTail: done.output, ...(channel ? { channel } : {}) };
}
