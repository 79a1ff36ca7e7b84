import { writeFile } from "node:fs/promises";
import type Docker from "dockerode";
import { demultiplex } from "../executors/docker.ts";

/** One attempt of an agent at a request: its exit status (null when killed at the budget). */
export interface Attempt {
  exit: number | null;
  timedOut: boolean;
}

export interface AgentEnvironmentOptions {
  docker: Docker;
  /** The focus task's environment image. */
  image: string;
  /** Host directory → path in the container (the five checkouts, the agent's own directory). */
  mounts: { host: string; container: string; readOnly?: boolean }[];
  /** The agent's home in the container (a mounted directory, so its state outlives any one request). */
  home: string;
  /** Who the agent runs as: the host's user, so what it writes in the checkouts stays that user's. */
  user: string;
  network: boolean;
  /** Labels naming the run's work directory (for cleaning up after a killed run), never a task or a role. */
  labels: Record<string, string>;
}

/** Where an attempt's process group is recorded, to kill the whole group at the budget. */
const ATTEMPT_PID_FILE = "/tmp/.attempt.pid";
/**
 * An attempt runs as its own session (setsid), so one kill ends it and everything it started; its
 * standard input is the file given first (the empty /dev/null when it has none).
 */
const ATTEMPT_WRAPPER = ["setsid", "--wait", "sh", "-c", `echo $$ > ${ATTEMPT_PID_FILE} && input=$1 && shift && exec "$@" < "$input"`, "agent"];
/** How long a killed attempt's output stream may take to end before it is cut. */
const DRAIN_MS = 10_000;

/**
 * The agent's environment for `runs: environment`: one container of the focus task's image for
 * the whole session (its home and any process state persist from request to request), with the
 * checkouts bind-mounted at the session's paths. Nothing in it names a task or a role; the
 * held-out assets never enter it. Each attempt is a `docker exec` in the active checkout.
 */
export class AgentEnvironment {
  private constructor(
    private readonly docker: Docker,
    private readonly container: Docker.Container,
    private readonly options: AgentEnvironmentOptions,
  ) {}

  static async start(options: AgentEnvironmentOptions): Promise<AgentEnvironment> {
    const container = await options.docker.createContainer({
      Image: options.image,
      // The image's own PATH (its virtual environment first) is kept.
      Cmd: ["sleep", "infinity"],
      Env: ["LANG=C.UTF-8", `HOME=${options.home}`],
      Labels: options.labels,
      HostConfig: {
        Binds: options.mounts.map((m) => `${m.host}:${m.container}${m.readOnly ? ":ro" : ""}`),
        NetworkMode: options.network ? "bridge" : "none",
        Init: true,
      },
    });
    try {
      await container.start();
    } catch (error) {
      await container.remove({ force: true }).catch(() => undefined);
      throw error;
    }
    return new AgentEnvironment(options.docker, container, options);
  }

  /**
   * Runs one command in the container from `cwd` (its standard input `inputFile`, a path in the
   * container), its output to `logFile`, killed with its whole
   * process group at `budgetSeconds`. `env` is passed to this exec only (never to the container's
   * configuration, where `docker inspect` would show an API key).
   */
  async exec(
    argv: string[],
    options: { cwd: string; env: Record<string, string>; budgetSeconds: number; logFile: string; asRoot?: boolean; inputFile?: string },
  ): Promise<Attempt> {
    const exec = await this.container.exec({
      Cmd: [...ATTEMPT_WRAPPER, options.inputFile ?? "/dev/null", ...argv],
      WorkingDir: options.cwd,
      Env: [`HOME=${this.options.home}`, ...Object.entries(options.env).map(([k, v]) => `${k}=${v}`)],
      User: options.asRoot ? "0:0" : this.options.user,
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = await exec.start({ hijack: true, stdin: false });
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    const ended = new Promise<void>((resolve) => {
      stream.on("end", resolve);
      stream.on("close", resolve);
      stream.on("error", () => resolve());
    });
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    let drain: NodeJS.Timeout | undefined;
    // At the budget the group is killed; the output then has DRAIN_MS to end. A process that left
    // the group (setsid) and still holds the output would otherwise keep the attempt open forever.
    const cut = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        timedOut = true;
        void this.killAttempt();
        drain = setTimeout(resolve, DRAIN_MS);
      }, options.budgetSeconds * 1000);
    });
    await Promise.race([ended, cut]);
    clearTimeout(timer);
    clearTimeout(drain);
    stream.destroy();
    await writeFile(options.logFile, demultiplex(Buffer.concat(chunks)));
    if (timedOut) return { exit: null, timedOut: true };
    const info = await exec.inspect();
    return { exit: info.ExitCode ?? null, timedOut: false };
  }

  /**
   * Starts a command that lives as long as the container (the model relay), as the agent's user
   * and outside any attempt's process group, so no budget kill ends it.
   */
  async startDetached(argv: string[]): Promise<void> {
    const exec = await this.container.exec({ Cmd: argv, User: this.options.user, AttachStdout: false, AttachStderr: false });
    // The engine answers a detached start at once, but the answer's connection stays open (and with
    // it this process) until it is read to its end or let go.
    const answer: unknown = await exec.start({ Detach: true });
    if (answer && typeof (answer as { destroy?: unknown }).destroy === "function") (answer as { destroy: () => void }).destroy();
  }

  /** Kills the running attempt's process group (as root: the agent may have changed its own user). */
  private async killAttempt(): Promise<void> {
    try {
      const kill = await this.container.exec({
        Cmd: ["sh", "-c", `kill -KILL -"$(cat ${ATTEMPT_PID_FILE})" 2>/dev/null; true`],
        User: "0:0",
        AttachStdout: true,
        AttachStderr: true,
      });
      const stream = await kill.start({ hijack: true, stdin: false });
      stream.resume();
      await new Promise<void>((resolve) => {
        stream.on("end", resolve);
        stream.on("close", resolve);
        stream.on("error", () => resolve());
      });
    } catch {
      // The container is gone: so is the attempt.
    }
  }

  /** Removes the container, and with it every process the agent left running. */
  async stop(): Promise<void> {
    await this.container.remove({ force: true }).catch(() => undefined);
  }
}
