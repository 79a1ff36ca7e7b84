import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { constants, tmpdir } from "node:os";
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
import { readCheckoutPins } from "./checkout-pins.ts";
import { prepareRunFiles, REPORT_NAME, type RunLayout, runScript } from "./runners.ts";
import { hostPythons, type PythonDownloads, pythonOffer } from "./python-offer.ts";
import {
  assertNotKilled,
  RUN_OUTPUT_LIMIT,
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

interface Completed {
  /** The exit status; 128 + the signal's number when a signal ended the process, as a shell says. */
  code: number;
  /** The signal that ended the process, if one did. */
  signal?: string;
  timedOut: boolean;
  output: string;
  seconds: number;
}

/** Every process started by a run carries this variable, with the run's own id, unless it drops its environment. */
const RUN_MARKER = "SWITCH_SWE_RUN";
/** How long output may still arrive after the process exited, before its pipes are closed on it. */
const OUTPUT_GRACE_MS = 1000;

/**
 * Kills every process that carries the run's marker: descendants that left the process group
 * (`setsid`, a daemonised helper) keep the variable, and with it would keep the run's pipes open.
 */
export function killMarkedProcesses(runId: string): number {
  let killed = 0;
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return 0; // no /proc: the process group is all we can reach
  }
  const needle = `${RUN_MARKER}=${runId}`;
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(needle)) continue;
      process.kill(Number(pid), "SIGKILL");
      killed++;
    } catch {
      // gone already, or not ours to read
    }
  }
  return killed;
}

/**
 * What kills a run's processes if we die first (SIGKILL, OOM): a watcher outside the run's group
 * holding one end of a pipe from us. At our death the pipe closes; the watcher then kills the
 * run's group and every process carrying its marker. A run that ends first says "done" on the
 * pipe, and the watcher leaves without killing anything (the group's id may be reused by then).
 */
const ORPHAN_WATCHER = [
  "IFS= read -r line",
  '[ "$line" = done ] && exit 0',
  'kill -KILL -- "-$1" 2>/dev/null',
  'for p in /proc/[0-9]*; do grep -qxzF -- "$2" "$p/environ" 2>/dev/null && kill -KILL "${p#/proc/}" 2>/dev/null; done',
  "exit 0",
].join("\n");

function watchForOrphans(group: number, runId: string): { release: () => void } {
  const watcher = spawn("sh", ["-c", ORPHAN_WATCHER, "orphan-watcher", String(group), `${RUN_MARKER}=${runId}`], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
    env: BASE_ENV,
  });
  watcher.on("error", () => undefined);
  watcher.stdin.on("error", () => undefined);
  watcher.unref();
  return { release: () => watcher.stdin.end("done\n") };
}

/**
 * The last `limit` bytes of a stream, kept as chunks and joined only when they grow past twice
 * the limit (appending to one string would copy it on every chunk), decoded once at the end.
 */
class OutputTail {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly limit: number) {}

  add(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size > 2 * this.limit) this.trim();
  }

  private trim(): void {
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined.subarray(Math.max(0, joined.length - this.limit))];
    this.size = this.chunks[0]!.length;
  }

  text(): string {
    if (this.size > this.limit) this.trim();
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

/**
 * Runs a command in its own process group and with a marker in its environment, so that a
 * timeout, or its end, kills everything it started, even what left its group. It returns once the
 * process has exited and its output is read, or at most OUTPUT_GRACE_MS later: a descendant that
 * escaped and holds the pipes open cannot keep the caller waiting. With `killWhenOrphaned` (builds
 * and test runs), the run also dies if this process is killed before it ends.
 */
export function runProcess(
  command: string,
  args: string[],
  options: {
    cwd: string;
    env: Record<string, string>;
    timeoutSeconds: number;
    input?: string;
    outputLimit?: number;
    channel?: (chunk: Buffer, stop: () => void) => void;
    ownPidNamespace?: boolean;
    killWhenOrphaned?: boolean;
  },
): Promise<Completed> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const runId = randomUUID();
    // In a PID namespace of its own, every descendant dies with the run's first process, whatever
    // session, group or environment it moved to.
    const [file, argv] =
      options.ownPidNamespace && pidNamespaceAvailable() ? ["unshare", ["--pid", "--fork", "--kill-child", "--", command, ...args]] : [command, args];
    const child = spawn(file, argv, {
      cwd: options.cwd,
      env: { ...options.env, [RUN_MARKER]: runId },
      detached: true,
      stdio: options.channel ? ["pipe", "pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe"],
    });
    const orphans = options.killWhenOrphaned && child.pid ? watchForOrphans(child.pid, runId) : undefined;
    const output = new OutputTail(options.outputLimit ?? RUN_OUTPUT_LIMIT);
    const keep = (d: Buffer) => output.add(d);
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    const killAll = () => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // the group is gone
      }
      killMarkedProcesses(runId);
    };
    const channel = options.channel ? (child.stdio[3] as NodeJS.ReadableStream & { destroy(): void }) : undefined;
    channel?.on("data", (chunk: Buffer) => options.channel!(chunk, killAll));
    channel?.on("error", () => undefined);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killAll();
    }, options.timeoutSeconds * 1000);
    let settled = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      orphans?.release();
      child.stdout.destroy();
      child.stderr.destroy();
      channel?.destroy();
      const status = code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : -1);
      resolve({ code: status, ...(signal ? { signal } : {}), timedOut, output: output.text(), seconds: (performance.now() - started) / 1000 });
    };
    child.on("error", (error) => {
      clearTimeout(timer);
      orphans?.release();
      reject(error);
    });
    child.on("exit", (code, signal) => {
      // Whatever the run left behind goes too, in its group or out of it; then its output is read.
      killAll();
      const grace = setTimeout(() => finish(code, signal), OUTPUT_GRACE_MS);
      child.on("close", () => {
        clearTimeout(grace);
        finish(code, signal);
      });
    });
    // A process that exits without reading its input (killed, or done early) closes the pipe:
    // that is not an error of ours, and its exit status says what happened.
    child.stdin.on("error", () => undefined);
    child.stdin.end(options.input ?? "");
  });
}

let pidNamespace: boolean | undefined;

/** Whether this machine lets us start a process in a PID namespace of its own (root, or user namespaces). */
export function pidNamespaceAvailable(): boolean {
  pidNamespace ??= spawnSync("unshare", ["--pid", "--fork", "--kill-child", "--", "true"], { stdio: "ignore", timeout: 10_000 }).status === 0;
  return pidNamespace;
}

const BASE_ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C.UTF-8", PYTHONDONTWRITEBYTECODE: "1", PIP_DISABLE_PIP_VERSION_CHECK: "1" };

/**
 * A virtual environment per environment key on this machine, for the demo and for users without
 * Docker. Nothing is sandboxed: the repository's tests run as this user, with this network.
 * They do get a clean environment: no variable of ours (GITHUB_TOKEN included) reaches them.
 */
export class LocalExecutor implements Executor {
  readonly kind = "local" as const;
  private readonly once = new BuildOnce();
  readonly built: string[] = [];
  readonly buildSeconds = new Map<string, number>();
  /** One run at a time per prepared revision: its checkout is shared, and restored before each run. */
  private readonly revisionLocks = new Map<string, Promise<unknown>>();

  constructor(
    private readonly root: string,
    private readonly log: Logger,
    private readonly options: { pythonDownloads?: PythonDownloads } = {},
  ) {}

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
    return join(this.root, "uv-cache");
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
    const logPath = await saveBuildLog(join(this.root, "build-logs"), logName, result.output);
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
        revisionScript(env, { ...paths, python }, await revisionVersion(checkout.dir), await readCheckoutPins(checkout.dir, env.recipe.requirements_files));
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
    const previous = this.revisionLocks.get(dir) ?? Promise.resolve();
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
    this.revisionLocks.set(dir, mine);
    try {
      return await mine;
    } finally {
      if (this.revisionLocks.get(dir) === mine) this.revisionLocks.delete(dir);
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
        // The runner takes its token on standard input, so the script is a file; the channel is fd 3.
        await writeFile(join(results, "run.sh"), script);
        const token = channelToken();
        let reader: ChannelReader | undefined;
        const done = await runProcess("bash", [join(results, "run.sh")], {
          cwd: request.checkoutDir,
          env,
          timeoutSeconds: request.timeoutSeconds,
          input: `${token}\n`,
          ownPidNamespace: true,
          killWhenOrphaned: true,
          channel: (chunk, stop) => {
            reader ??= new ChannelReader(token, stop);
            reader.push(chunk);
          },
        });
        // A run that timed out has nothing to say: its channel is not read.
        const channel = done.timedOut ? undefined : (reader?.channel ?? { records: [], finished: false, foreign: [] });
        return { timedOut: done.timedOut, exitCode: done.code, wallSeconds: done.seconds, outputTail: done.output, ...(channel ? { channel } : {}) };
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
