import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { constants, tmpdir } from "node:os";
import { join } from "node:path";
import { lowDiskSpace } from "../failures.ts";
import type { Logger } from "../logger.ts";
import { assertNotKilled, BuildFailed, buildFailure, BuildOnce, buildNetworkSettings, GUARD_REPORT_NAME, prepareGuardedRun, type EnvironmentSpec, type Executor, type TestRunRequest, type TestRunResult, testScript } from "./types.ts";

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
 * Runs a command in its own process group and with a marker in its environment, so that a
 * timeout, or its end, kills everything it started, even what left its group. It returns once the
 * process has exited and its output is read, or at most OUTPUT_GRACE_MS later: a descendant that
 * escaped and holds the pipes open cannot keep the caller waiting.
 */
export function runProcess(command: string, args: string[], options: { cwd: string; env: Record<string, string>; timeoutSeconds: number; input?: string }): Promise<Completed> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const runId = randomUUID();
    const child = spawn(command, args, { cwd: options.cwd, env: { ...options.env, [RUN_MARKER]: runId }, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    const keep = (d: Buffer) => {
      output = (output + d.toString()).slice(-20_000);
    };
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
      child.stdout.destroy();
      child.stderr.destroy();
      const status = code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : -1);
      resolve({ code: status, ...(signal ? { signal } : {}), timedOut, output, seconds: (performance.now() - started) / 1000 });
    };
    child.on("error", (error) => {
      clearTimeout(timer);
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

  constructor(private readonly root: string, private readonly log: Logger) {}

  private envDir(env: EnvironmentSpec): string {
    return join(this.root, env.key.slice(0, 16));
  }

  private pythonFor(env: EnvironmentSpec): string {
    return join(this.envDir(env), "bin", "python");
  }

  ensureEnvironment(env: EnvironmentSpec): Promise<{ built: boolean }> {
    return this.once.run(env.key, () => this.build(env));
  }

  private async build(env: EnvironmentSpec): Promise<{ built: boolean }> {
    const dir = this.envDir(env);
    if (existsSync(join(dir, ".ready"))) return { built: false };
    const interpreter = await this.findPython(env.recipe.python);
    const partial = `${dir}.partial-${process.pid}`;
    await rm(partial, { recursive: true, force: true });
    await mkdir(this.root, { recursive: true });
    this.log.info(`building environment ${env.key.slice(0, 12)} for ${env.repo} (Python ${env.recipe.python}, as of ${env.asOf ?? "today"})`);
    const network = buildNetworkSettings();
    const ca: Record<string, string> = network.caBundle ? { SSL_CERT_FILE: network.caBundle, PIP_CERT: network.caBundle } : {};
    const step = async (args: string[], what: string) => {
      const result = await runProcess(args[0]!, args.slice(1), { cwd: this.root, env: { ...BASE_ENV, ...network.vars, ...ca, HOME: tmpdir() }, timeoutSeconds: env.recipe.install_timeout_seconds });
      if (result.code !== 0 || result.timedOut) buildFailure(`${what} failed for ${env.repo}`, result.output, result.timedOut || Boolean(result.signal), lowDiskSpace(this.root));
    };
    try {
      await this.buildInto(partial, interpreter, env, step);
    } catch (error) {
      await rm(partial, { recursive: true, force: true });
      throw error;
    }
    await rm(dir, { recursive: true, force: true });
    await rename(partial, dir);
    this.built.push(env.key);
    return { built: true };
  }

  private async buildInto(partial: string, interpreter: string, env: EnvironmentSpec, step: (args: string[], what: string) => Promise<void>): Promise<void> {
    await step([interpreter, "-m", "venv", partial], "creating the virtual environment");
    // uv itself is today's; the exclusion date applies to what it resolves.
    await step([join(partial, "bin", "python"), "-m", "pip", "install", "--quiet", "uv"], "installing uv");
    const requirements = [...new Set(["pytest", ...env.recipe.pip_requirements])];
    const exclude = env.asOf ? ["--exclude-newer", env.asOf] : [];
    await step([join(partial, "bin", "uv"), "pip", "install", "--quiet", "--python", join(partial, "bin", "python"), ...exclude, ...requirements], "installing the requirements");
    await writeFile(join(partial, ".recipe.json"), JSON.stringify({ repo: env.repo, recipe: env.recipe, asOf: env.asOf }, null, 2));
    await writeFile(join(partial, ".ready"), "");
  }

  private async findPython(version: string): Promise<string> {
    for (const candidate of [`python${version}`, "python3"]) {
      const result = await runProcess(candidate, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], { cwd: tmpdir(), env: BASE_ENV, timeoutSeconds: 30 }).catch(() => undefined);
      if (result?.code === 0 && result.output.trim() === version) return candidate;
    }
    throw new BuildFailed(`Python ${version} is not installed on this machine (the local executor uses the machine's interpreters; install python${version} or use the docker executor)`);
  }

  async run(request: TestRunRequest): Promise<TestRunResult> {
    const results = await mkdtemp(join(tmpdir(), "switch-swe-results-"));
    try {
      const junit = join(results, "report.xml");
      if (request.guarded) await prepareGuardedRun(results, request.guarded);
      const script = testScript(request.env.recipe, this.pythonFor(request.env), request.tests, junit, request.guarded ? { resultsDir: results } : undefined);
      const done = await runProcess("bash", ["-s"], {
        cwd: request.checkoutDir,
        env: { ...BASE_ENV, PATH: `${join(this.envDir(request.env), "bin")}:${BASE_ENV.PATH}`, HOME: results, VIRTUAL_ENV: this.envDir(request.env) },
        timeoutSeconds: request.timeoutSeconds,
        input: script,
      });
      if (!done.timedOut && !request.guarded) assertNotKilled(done.code, done.signal ? `signal ${done.signal}` : undefined);
      // A timed-out run's files are never read: whatever they say was not finished.
      const junitXml = !done.timedOut && existsSync(junit) ? await readFile(junit, "utf8") : undefined;
      const guard = join(results, GUARD_REPORT_NAME);
      const guardJson = request.guarded && !done.timedOut && existsSync(guard) ? await readFile(guard, "utf8") : undefined;
      return { timedOut: done.timedOut, junitXml, exitCode: done.code, wallSeconds: done.seconds, outputTail: done.output.slice(-4000), ...(guardJson ? { guardJson } : {}) };
    } finally {
      await rm(results, { recursive: true, force: true });
    }
  }
}
