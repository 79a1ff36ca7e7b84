import type Docker from "dockerode";
import { createHash, randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { writeFileAtomic } from "../atomic.ts";
import { git } from "../git.ts";
import type { Logger } from "../logger.ts";
import type { AgentSpec, RequestUsage, SessionBehaviour, TrajectoryRequest } from "../schemas/agent.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import type { ScheduledRequest, SessionSpec } from "../schemas/session.ts";
import { buildNetworkSettings } from "../executors/types.ts";
import { runProcess } from "../executors/local.ts";
import { addUsage, NO_USAGE, readAttempt, usageSince, type AttemptReading } from "./usage.ts";
import { AgentEnvironment, type Attempt } from "./environment.ts";
import { isLoopbackUrl, RELAY_MOUNT, startModelRelay } from "./model-relay.ts";
import { agentExecutable, environmentExecutable, installDir } from "./install.ts";
import { changesBetween, provisionCheckout, snapshot, type HashCache, type Snapshot } from "../checkouts/snapshot.ts";

/** Sent, in the same conversation, when a request ran out of its budget: the same for every agent. */
export const CONTINUATION_MESSAGE = "Your time for the last request ran out before you finished. Continue that request from where you stopped.";

/** Repetitions of an attempt the provider failed (overloaded, unreachable) before the run ends on an infrastructure fault (the study's protocol). */
export const INFRASTRUCTURE_RETRIES = 2;

export interface SessionRunOptions {
  spec: SessionSpec;
  condition: "control" | "switched";
  agent: AgentSpec;
  /** The run's own directory: the workspace (the five checkouts), agent logs, the trajectory. */
  runDir: string;
  /** A bare mirror of the session's repository holding every checkout's base commit. */
  mirror: string;
  /**
   * Held-out assets by task id, for the scripted test agents that replay reference patches only.
   * A command agent never gets them, and nothing of them enters the workspace otherwise.
   */
  heldout?: (taskId: string) => HeldoutTask | undefined;
  log: Logger;
  /** Seconds between looks at the focus checkout while a focus return runs. */
  pollSeconds?: number;
  /** For an agent that `runs: environment`: the engine, the focus task's image, labels for its container. */
  environment?: { docker: Docker; image: string; labels: Record<string, string> };
  /** The model endpoint an agent with `model_endpoint` is pointed at; without it the harness uses its own defaults. */
  model?: ModelTarget;
  /** Where agents with `install` were installed (switch-swe agents install): their executables are looked up there first. */
  toolsDir?: string;
}

/** A model endpoint: its base URL, the key (never written to a file) and the model's name. */
export interface ModelTarget {
  url: string;
  key?: string;
  name?: string;
}

export interface SessionRunResult {
  /** The focus checkout on the host, to collect the artifact from. */
  focusCheckout: string;
  trajectoryFile: string;
  behaviour: SessionBehaviour;
}

/** One request as an agent sees it: the repository, the active checkout, the text; nothing else. */
export interface AgentRequest {
  repository: string;
  /** The active checkout's path where the agent runs (on the host, or the session's path in the environment). */
  checkout: string;
  text: string;
  /** Whether it continues the same conversation (every request after the first, and continuations). */
  continued: boolean;
}

/** Paths a command template may name, as the agent sees them. */
export interface AgentPaths {
  /** The directory holding the five checkouts. */
  workspace: string;
  /** The agent's own directory for the session (its home in the environment). */
  sessionDir: string;
  /** The model's name for `{model_name}`: the run's, else the adapter's default, else empty. */
  modelName?: string;
}

/**
 * `{message_file}`: the request's message, written afresh before each request, beside (never in)
 * the workspace, for a harness that takes its message from a file (aider's --message-file keeps a
 * multi-line message out of the command line it logs and later restores as history).
 */
export const messageFileOf = (paths: AgentPaths) => join(paths.sessionDir, "message.txt");

/** Runs a scripted test agent's step for one request; only these read the held-out assets. */
type ScriptedStep = (index: number, request: AgentRequest) => Promise<void>;

/**
 * The built-in scripted agents. `replay-reference` applies each task's reference implementation
 * at that task's last request, to the active checkout; `noop` never edits; `wrong-checkout`
 * applies the focus task's reference to the checkout of the request before, at the focus's first
 * return from another checkout (switched) or, when it never leaves (control), at its last request.
 */
function scriptedAgent(
  kind: NonNullable<AgentSpec["scripted"]>,
  schedule: ScheduledRequest[],
  focus: string,
  hostPath: (path: string) => string,
  heldout: SessionRunOptions["heldout"],
): ScriptedStep {
  const lastIndex = new Map(schedule.map((r, i) => [r.task_id, i] as const));
  const firstReturn = schedule.findIndex((r, i) => i > 0 && r.task_id === focus && schedule[i - 1]!.message.checkout !== r.message.checkout);
  const wrongAt = firstReturn >= 0 ? firstReturn : lastIndex.get(focus)!;
  const apply = async (taskId: string, dir: string, where: "own" | "other") => {
    const task = heldout?.(taskId);
    if (!task) throw new Error(`the ${kind} agent needs the held-out assets of ${taskId}`);
    if (!task.implementation_patch) return;
    // In another task's checkout the patch may not fit (a near task changed the same files):
    // what fits is written and the rest left as .rej files, as a hurried edit would leave it.
    const args = where === "own" ? ["apply", "--whitespace=nowarn", "--binary", "-"] : ["apply", "--whitespace=nowarn", "--binary", "--reject", "-"];
    await git(args, { cwd: dir, input: task.implementation_patch }).catch((error) => {
      if (where === "own") throw error;
    });
  };
  return async (index, request) => {
    const scheduled = schedule[index]!;
    if (kind === "noop") return;
    if (kind === "replay-reference") return lastIndex.get(scheduled.task_id) === index ? apply(scheduled.task_id, request.checkout, "own") : undefined;
    const previous = schedule[index - 1];
    if (scheduled.task_id !== focus || index !== wrongAt) return;
    const target = previous ? hostPath(previous.message.checkout) : request.checkout;
    await apply(focus, target, target === request.checkout ? "own" : "other");
  };
}

/** The message of a request, from the agent's template: repository, active checkout and text. */
export function agentMessage(agent: AgentSpec, request: AgentRequest): string {
  const values: Record<string, string> = { "{repository}": request.repository, "{checkout}": request.checkout, "{text}": request.text };
  return agent.message.replace(/\{(repository|checkout|text)\}/g, (m) => values[m]!);
}

/** A command agent's argv for a request, its placeholders filled in (each is one argv element's text: nothing is read by a shell). */
export function agentArgv(agent: AgentSpec, request: AgentRequest, paths: AgentPaths, conversation: string): string[] {
  const template = request.continued && agent.continue_command ? agent.continue_command : agent.command!;
  const values: Record<string, string> = {
    "{message}": agentMessage(agent, request),
    "{message_file}": messageFileOf(paths),
    "{text}": request.text,
    "{checkout}": request.checkout,
    "{workspace}": paths.workspace,
    "{repository}": request.repository,
    "{session_dir}": paths.sessionDir,
    "{conversation}": conversation,
    "{model_name}": paths.modelName ?? "",
  };
  const fill = (part: string) =>
    part.replace(/\{(message_file|message|text|checkout|workspace|repository|session_dir|conversation|model_name)\}/g, (m) => values[m]!);
  return template.map(fill);
}

/** A command agent's standard input for a request (its `stdin` template filled in), or empty. */
export function agentStdin(agent: AgentSpec, request: AgentRequest, paths: AgentPaths, conversation: string): string {
  if (agent.stdin === undefined) return "";
  // The same placeholders as a command's, filled the same way: one element of a one-element template.
  return agentArgv({ ...agent, command: [agent.stdin], continue_command: [agent.stdin] }, request, paths, conversation)[0]!;
}

/** A harness's output may be long (a stream of JSON events): kept whole up to this size. */
const AGENT_OUTPUT_LIMIT = 64 * 1024 * 1024;

/**
 * Runs one attempt of a command agent on the host in a process group of its own, killed (the
 * group, and whatever left it) at the budget, and with this process if it is killed first.
 */
async function runCommand(argv: string[], cwd: string, env: Record<string, string>, budgetSeconds: number, logFile: string, input: string): Promise<Attempt> {
  try {
    const done = await runProcess(argv[0]!, argv.slice(1), {
      cwd,
      env,
      timeoutSeconds: budgetSeconds,
      outputLimit: AGENT_OUTPUT_LIMIT,
      killWhenOrphaned: true,
      input,
    });
    await writeFile(logFile, done.output);
    return { exit: done.timedOut ? null : done.code, timedOut: done.timedOut };
  } catch (error) {
    await writeFile(logFile, `could not start ${argv[0]}: ${(error as Error).message}\n`);
    return { exit: 127, timedOut: false };
  }
}

/** The variables a command agent gets from the user's environment: the ones its spec names (and, on the host, enough to run). */
function agentVariables(agent: AgentSpec, host: boolean): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of [...(host ? ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "TERM"] : []), ...agent.env])
    if (process.env[key] !== undefined) env[key] = process.env[key]!;
  return env;
}

const fillEndpoint = (text: string, model: ModelTarget | undefined, home: string) =>
  text.replace(/\{(model_url|model_key|model_name|home)\}/g, (m) =>
    m === "{home}" ? home : m === "{model_url}" ? (model?.url ?? "") : m === "{model_key}" ? (model?.key ?? "") : (model?.name ?? ""),
  );

/**
 * Everything set for the agent besides what it passes through: its constant variables, and where
 * it is pointed at a model endpoint, the endpoint's variables; the endpoint's files are written
 * into its home (a file never holds the key: the schema refuses it).
 */
async function agentSettings(agent: AgentSpec, model: ModelTarget | undefined, home: string, writeHome: string): Promise<Record<string, string>> {
  const env: Record<string, string> = { ...agent.constant_env };
  if (model && agent.model_endpoint) {
    if (!model.name && agent.model_endpoint.default_model) model = { ...model, name: agent.model_endpoint.default_model };
    for (const [key, value] of Object.entries(agent.model_endpoint.env)) {
      // A variable naming a model when none was given is left unset: the harness keeps its default.
      if (value.includes("{model_name}") && !model.name) continue;
      env[key] = fillEndpoint(value, model, home);
    }
    for (const file of agent.model_endpoint.files) {
      const path = join(writeHome, file.path);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, fillEndpoint(file.content, model, home));
    }
  }
  return env;
}

const modelNameOf = (agent: AgentSpec, model: ModelTarget | undefined): { modelName?: string } => {
  const name = model?.name ?? (model ? agent.model_endpoint?.default_model : undefined);
  return name ? { modelName: name } : {};
};

/** command[0] of an installed agent, from its tools directory when it is there. */
function installedCommand(agent: AgentSpec, toolsDir: string | undefined, argv: string[]): string[] {
  if (!agent.install || !toolsDir) return argv;
  return [agentExecutable(toolsDir, agent, argv[0]!), ...argv.slice(1)];
}

/** Where a command agent runs, and how one attempt is run there. */
interface AgentPlace {
  paths: AgentPaths;
  /** The path the agent is given for a checkout of the session. */
  checkout: (sessionPath: string) => string;
  /** Where a file the agent names (its message file, its usage log) is on this machine. */
  hostFile: (path: string) => string;
  attempt: (argv: string[], checkout: string, budgetSeconds: number, logFile: string, input: string) => Promise<Attempt>;
  close: () => Promise<void>;
}

/** The agent's own directory in its environment (its home): the run's `agent` directory on this machine. */
const AGENT_HOME = "/agent";

/** The session paths' common parent (/workspace for /workspace/w00 ...), or / when they have none. */
function commonParent(paths: string[]): string {
  const parents = new Set(paths.map((p) => p.replace(/\/[^/]+\/?$/, "") || "/"));
  return parents.size === 1 ? [...parents][0]! : "/";
}

/**
 * The agent's place: on the host, the checkouts under the run's directory; in the environment,
 * one container of the focus task's image with each checkout mounted at its session path, the
 * agent's own directory at /agent (its home), and the spec's setup commands run first.
 */
async function agentPlace(options: SessionRunOptions, hostPath: (path: string) => string, logs: string): Promise<AgentPlace> {
  const { agent, spec, runDir } = options;
  if (agent.runs === "host") {
    // An isolated home is the run's own: the harness's settings, state and conversations stay in the run.
    const home = agent.isolated_home ? join(runDir, "home") : (process.env.HOME ?? runDir);
    if (agent.isolated_home) await mkdir(home, { recursive: true });
    const isolated: Record<string, string> = agent.isolated_home
      ? {
          HOME: home,
          XDG_CONFIG_HOME: join(home, ".config"),
          XDG_DATA_HOME: join(home, ".local", "share"),
          XDG_CACHE_HOME: join(home, ".cache"),
          XDG_STATE_HOME: join(home, ".local", "state"),
        }
      : {};
    const env = { ...agentVariables(agent, true), ...isolated, ...(await agentSettings(agent, options.model, home, home)) };
    return {
      paths: { workspace: join(runDir, "workspace"), sessionDir: runDir, ...modelNameOf(agent, options.model) },
      checkout: hostPath,
      hostFile: (path) => path,
      attempt: (argv, checkout, budget, logFile, input) => runCommand(installedCommand(agent, options.toolsDir, argv), checkout, env, budget, logFile, input),
      close: async () => undefined,
    };
  }
  return environmentPlace(options, hostPath, logs);
}

/** Where an installed harness's directory is mounted in the environment (read-only). */
const AGENT_TOOLS = "/opt/switch-swe-agent";
/** Where a request's standard input is put for the environment to read (in the agent's directory). */
const REQUEST_INPUT = "request-input.txt";

/** Docker's names for machines, as Node names them. */
const NODE_ARCH: Record<string, string> = { amd64: "x64", arm64: "arm64", arm: "arm", "386": "ia32", ppc64le: "ppc64", s390x: "s390x" };

/**
 * An installed harness for the environment: its directory, to mount, and its commands' paths in
 * the container. It was installed for this machine, so the engine must run this machine's kind
 * of binaries (a Docker Desktop's Linux engine on macOS does not).
 */
async function environmentTools(
  options: SessionRunOptions,
): Promise<{ mount: { host: string; container: string; readOnly: true }; command: (argv: string[]) => string[] } | undefined> {
  const { agent, toolsDir } = options;
  if (!agent.install) return undefined;
  const install = agent.install;
  if (!toolsDir) throw new Error(`${agent.name}: the harness is installed from ${install.registry} (${install.package}), and no tools directory was given`);
  const engine = await options.environment!.docker.version();
  const engineArch = NODE_ARCH[engine.Arch] ?? engine.Arch;
  if (engine.Os !== "linux" || process.platform !== "linux" || engineArch !== process.arch)
    throw new Error(
      `${agent.name}: the harness installed in ${toolsDir} is for this machine (${process.platform}-${process.arch}), and the Docker engine runs ${engine.Os}-${engineArch}: it could not run in the environment`,
    );
  const paths = new Map<string, string>();
  const at = (name: string) => {
    if (!paths.has(name)) paths.set(name, environmentExecutable(toolsDir, { ...agent, install }, name).path);
    return `${AGENT_TOOLS}/${paths.get(name)!}`;
  };
  // Every executable a command names is found before the container starts: a missing one is the adapter's error, said once.
  for (const argv of [agent.command, agent.continue_command]) if (argv) at(argv[0]!);
  return { mount: { host: installDir(toolsDir, install), container: AGENT_TOOLS, readOnly: true }, command: (argv) => [at(argv[0]!), ...argv.slice(1)] };
}

/** The agent's place in the focus task's environment: its container, setup run, and a relay to a loopback endpoint. */
async function environmentPlace(options: SessionRunOptions, hostPath: (path: string) => string, logs: string): Promise<AgentPlace> {
  const { agent, spec, runDir } = options;
  if (!options.environment) throw new Error(`the agent ${agent.name} runs in the environment, which needs a Docker engine and the focus task's image`);
  const agentDir = join(runDir, "agent");
  await mkdir(agentDir, { recursive: true });
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  // With the network, the container reaches it as image builds do: the host's proxy settings and
  // the CA bundle it trusts (behind a TLS-intercepting proxy nothing connects without it).
  const network = agent.network ? buildNetworkSettings() : { vars: {} };
  const ca: Record<string, string> = network.caBundle
    ? { SSL_CERT_FILE: "/run/host-ca.crt", PIP_CERT: "/run/host-ca.crt", REQUESTS_CA_BUNDLE: "/run/host-ca.crt", NODE_EXTRA_CA_CERTS: "/run/host-ca.crt" }
    : {};
  const tools = await environmentTools(options);
  // An endpoint on this machine's loopback is out of the container's reach: it goes through a relay.
  const relay = options.model && isLoopbackUrl(options.model.url) ? await startModelRelay(options.model.url) : undefined;
  let environment: AgentEnvironment;
  try {
    environment = await AgentEnvironment.start({
      docker: options.environment.docker,
      image: options.environment.image,
      mounts: [
        ...spec.checkouts.map((c) => ({ host: hostPath(c.path), container: c.path })),
        { host: agentDir, container: AGENT_HOME },
        ...(network.caBundle ? [{ host: network.caBundle, container: "/run/host-ca.crt", readOnly: true }] : []),
        ...(relay ? [{ host: relay.dir, container: RELAY_MOUNT }] : []),
        ...(tools ? [tools.mount] : []),
      ],
      home: AGENT_HOME,
      user: `${uid}:${gid}`,
      network: agent.network,
      labels: options.environment.labels,
    });
  } catch (error) {
    await relay?.close();
    throw error;
  }
  const model = options.model && relay ? { ...options.model, url: relay.containerUrl } : options.model;
  const variables = { ...network.vars, ...ca, ...agentVariables(agent, false), ...(await agentSettings(agent, model, AGENT_HOME, agentDir)) };
  const stop = async () => {
    await environment.stop();
    await relay?.close();
  };
  try {
    await relay?.startIn(environment, options.environment.image, join(logs, "model-relay.log"));
    for (const [i, command] of agent.setup.entries()) {
      const logFile = join(logs, `setup-${i}.log`);
      const result = await environment.exec(command, { cwd: "/", env: variables, budgetSeconds: agent.setup_timeout_seconds, logFile, asRoot: true });
      if (result.exit !== 0)
        throw new Error(
          `the agent ${agent.name}'s setup command ${JSON.stringify(command)} ${result.timedOut ? `took more than ${agent.setup_timeout_seconds}s` : `exited with ${result.exit}`} (its output: ${logFile})`,
        );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    paths: { workspace: commonParent(spec.checkouts.map((c) => c.path)), sessionDir: AGENT_HOME, ...modelNameOf(agent, options.model) },
    checkout: (path) => path,
    hostFile: (path) => {
      if (path === AGENT_HOME || path.startsWith(`${AGENT_HOME}/`)) return join(agentDir, path.slice(AGENT_HOME.length));
      const checkout = spec.checkouts.find((c) => path === c.path || path.startsWith(`${c.path}/`));
      if (checkout) return join(hostPath(checkout.path), path.slice(checkout.path.length));
      throw new Error(`${path} is not in a directory the agent's environment shares with this machine (${AGENT_HOME} or a checkout)`);
    },
    attempt: async (argv, checkout, budget, logFile, input) => {
      if (agent.stdin !== undefined) await writeFile(join(agentDir, REQUEST_INPUT), input);
      const inputFile = agent.stdin !== undefined ? `${AGENT_HOME}/${REQUEST_INPUT}` : undefined;
      return environment.exec(tools ? tools.command(argv) : argv, {
        cwd: checkout,
        env: variables,
        budgetSeconds: budget,
        logFile,
        ...(inputFile ? { inputFile } : {}),
      });
    },
    close: stop,
  };
}

/** Polls the focus checkout while a focus return runs; resolves to the seconds to its first change. */
function watchFirstChange(dir: string, before: Snapshot, startedAt: number, pollSeconds: number, hashes: HashCache): { stop: () => Promise<number | null> } {
  let found: number | null = null;
  let stopped = false;
  const loop = (async () => {
    while (!stopped && found === null) {
      await new Promise((r) => setTimeout(r, pollSeconds * 1000));
      if (changesBetween(before, await snapshot(dir, hashes))) found = (Date.now() - startedAt) / 1000;
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return found;
    },
  };
}

/**
 * Drives an agent through one condition of a session (SPEC §2.8, §3): provisions the five
 * checkouts at their base revisions under the session's paths, delivers each message in order
 * with only repository, checkout and text, gives each request its budget and at most
 * `timeout_continuations` continuations, and records a trajectory: every request's times,
 * budget used, continuations, exits, and the files changed in every checkout during it.
 */
export async function runSession(options: SessionRunOptions): Promise<SessionRunResult> {
  const { spec, condition, agent, runDir } = options;
  const runStarted = Date.now();
  const workspace = join(runDir, "workspace");
  const logs = join(runDir, "logs");
  await mkdir(logs, { recursive: true });
  // The session's absolute paths (/workspace/w00, ...) map to directories of the same names here.
  const hostPath = (path: string) => join(workspace, basename(path));
  for (const checkout of spec.checkouts) await provisionCheckout(options.mirror, checkout.base_commit, hostPath(checkout.path));
  const focusPath = focusPathOf(spec);
  const hashes: HashCache = new Map();
  const snapshots = new Map<string, Snapshot>();
  for (const checkout of spec.checkouts) snapshots.set(checkout.path, await snapshot(hostPath(checkout.path), hashes));
  const base = new Map(snapshots);
  if (!agent.scripted && agent.runs === "host") warnOfInstructionsAbove(workspace, options.log);
  const place = agent.scripted ? undefined : await agentPlace(options, hostPath, logs);
  let requests: Awaited<ReturnType<typeof deliverRequests>>;
  try {
    requests = await deliverRequests(options, { hostPath, focusPath, logs, hashes, snapshots, place });
  } finally {
    await place?.close();
  }
  const trajectoryFile = join(runDir, "trajectory.jsonl");
  await writeFileAtomic(trajectoryFile, requests.lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  const lost = [...requests.everChanged].filter((p) => snapshots.get(focusPath)!.get(p) === base.get(focusPath)!.get(p)).length;
  const behaviour = {
    ...summarise(agent, requests.lines, lost, Math.max(0, (Date.now() - runStarted - requests.agentMs) / 1000), trajectoryFile, requests.infrastructureFault),
    ...(requests.conversation ? { conversation: requests.conversation } : {}),
  };
  return { focusCheckout: focusCheckoutIn(runDir, spec), trajectoryFile, behaviour };
}

/** Files harnesses read as instructions or settings from the directories above where they run. */
const HARNESS_INSTRUCTIONS = ["CLAUDE.md", "AGENTS.md", ".claude", "opencode.json", "opencode.jsonc", ".opencode", "CONVENTIONS.md", ".aider.conf.yml"];

/**
 * Harnesses read instructions from the directories above their working directory (Claude Code's
 * CLAUDE.md, Codex's AGENTS.md up to the git root, OpenCode's project config): any found above
 * the workspace would reach the agent although no session has it, so the run says so.
 */
function warnOfInstructionsAbove(workspace: string, log: Logger): void {
  const found: string[] = [];
  for (let dir = dirname(resolve(workspace)); ; dir = dirname(dir)) {
    for (const name of HARNESS_INSTRUCTIONS) if (existsSync(join(dir, name))) found.push(join(dir, name));
    if (dirname(dir) === dir) break;
  }
  if (found.length)
    log.warn(
      `above the workspace ${workspace}: ${found.join(", ")}; a harness may read them as instructions: keep session runs (--work) outside that directory`,
    );
}

const focusPathOf = (spec: SessionSpec) => spec.checkouts.find((c) => c.task_id === spec.focus)!.path;

/** Where a run in `runDir` keeps the focus checkout (the session's path, under its workspace). */
export const focusCheckoutIn = (runDir: string, spec: SessionSpec) => join(runDir, "workspace", basename(focusPathOf(spec)));

interface Delivery {
  hostPath: (path: string) => string;
  focusPath: string;
  logs: string;
  hashes: HashCache;
  /** Each checkout's state after the last request; updated as requests end. */
  snapshots: Map<string, Snapshot>;
  /** Where a command agent runs (none for a scripted agent). */
  place?: AgentPlace;
}

/** What the runner learnt from one request's attempts: usage summed over them, the last failure, the retries the provider cost. */
interface RequestOutcome {
  exits: (number | null)[];
  continuations: number;
  timedOut: boolean;
  usage: RequestUsage | null;
  failure?: NonNullable<TrajectoryRequest["failure"]>;
  infrastructureRetries: number;
}

/**
 * The conversation id for `{conversation}`: fixed (from session, condition and agent), fresh (a new
 * one each run, so a re-run never continues an earlier run's), or captured from the harness's first
 * output (undefined until then).
 */
function conversationOf(agent: AgentSpec, sessionId: string, condition: string): string | undefined {
  if (agent.conversation === "fresh") return randomUUID();
  if (agent.conversation !== "fixed") return undefined;
  return createHash("sha256")
    .update(`${sessionId}/${condition}/${agent.name}`)
    .digest("hex")
    .slice(0, 32)
    .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5");
}

/** Delivers every request of the condition in order, and records what each did. */
async function deliverRequests(
  options: SessionRunOptions,
  d: Delivery,
): Promise<{ lines: TrajectoryRequest[]; everChanged: Set<string>; agentMs: number; infrastructureFault?: string; conversation?: string }> {
  const { spec, condition, agent } = options;
  const schedule = spec.conditions[condition];
  const scripted = agent.scripted ? scriptedAgent(agent.scripted, schedule, spec.focus, d.hostPath, options.heldout) : undefined;
  const state: { conversation: string | undefined; agentMs: number; runningTotal?: RequestUsage; usageFileRead?: number } = {
    conversation: conversationOf(agent, spec.session_id, condition),
    agentMs: 0,
  };
  const everChanged = new Set<string>();
  const lines: TrajectoryRequest[] = [];
  let infrastructureFault: string | undefined;
  for (const [index, scheduled] of schedule.entries()) {
    const active = scheduled.message.checkout;
    const isFocus = scheduled.task_id === spec.focus;
    const focusReturn = isFocus && index > 0 && schedule[index - 1]!.task_id !== spec.focus;
    const started = Date.now();
    const watcher = focusReturn
      ? watchFirstChange(d.hostPath(d.focusPath), d.snapshots.get(d.focusPath)!, started, options.pollSeconds ?? 0.5, d.hashes)
      : undefined;
    const outcome = await deliverOne(options, d, index, scripted, state);
    const firstChange = watcher ? await watcher.stop() : undefined;
    const ended = Date.now();
    const changes = await recordChanges(
      spec.checkouts.map((c) => c.path),
      d.hostPath,
      d.snapshots,
      d.hashes,
    );
    for (const p of pick(changes, d.focusPath)) everChanged.add(p);
    // A change seen only at the end of the request still counts as the first, at its end.
    const focusFirst = focusReturn ? (firstChange ?? (changes[d.focusPath] ? (ended - started) / 1000 : null)) : undefined;
    lines.push({
      request: index,
      task_id: scheduled.task_id,
      focus: isFocus,
      ...(scheduled.stage !== undefined ? { stage: scheduled.stage } : {}),
      finalization: scheduled.finalization,
      checkout: active,
      started_at: new Date(started).toISOString(),
      ended_at: new Date(ended).toISOString(),
      seconds: (ended - started) / 1000,
      budget_seconds: spec.budget.per_request_seconds,
      continuations: outcome.continuations,
      timed_out: outcome.timedOut,
      exits: outcome.exits,
      changes,
      ...(focusFirst !== undefined ? { focus_first_change_seconds: focusFirst } : {}),
      ...(agent.usage ? { usage: outcome.usage } : {}),
      ...(outcome.failure ? { failure: outcome.failure } : {}),
      ...(outcome.infrastructureRetries ? { infrastructure_retries: outcome.infrastructureRetries } : {}),
    });
    if (outcome.failure?.kind === "infrastructure") {
      // Out of retries: the provider, not the agent, ended the run; what it did so far stands.
      infrastructureFault = `request ${index}: ${outcome.failure.detail}`;
      options.log.warn(
        `${spec.session_id} (${condition}): an infrastructure fault outlasted ${INFRASTRUCTURE_RETRIES} retries at ${infrastructureFault}; the run ends there`,
      );
      break;
    }
  }
  return {
    lines,
    everChanged,
    agentMs: state.agentMs,
    ...(infrastructureFault ? { infrastructureFault } : {}),
    ...(state.conversation && !scripted ? { conversation: state.conversation } : {}),
  };
}

/**
 * One request: attempts until it ends within its budget (continuations after a timeout, in the same
 * conversation) or the provider fails it more than INFRASTRUCTURE_RETRIES times. A model-side
 * error or a non-zero exit is the agent's and is never retried.
 */
async function deliverOne(
  options: SessionRunOptions,
  d: Delivery,
  index: number,
  scripted: ScriptedStep | undefined,
  state: { conversation: string | undefined; agentMs: number; runningTotal?: RequestUsage; usageFileRead?: number },
): Promise<RequestOutcome> {
  const { spec, condition, agent, log } = options;
  const scheduled = spec.conditions[condition][index]!;
  const budget = spec.budget.per_request_seconds;
  const outcome: RequestOutcome = { exits: [], continuations: 0, timedOut: false, usage: null, infrastructureRetries: 0 };
  let text = scheduled.message.text;
  for (let attempt = 0; ; attempt++) {
    const request: AgentRequest = {
      repository: scheduled.message.repository,
      checkout: d.place ? d.place.checkout(scheduled.message.checkout) : d.hostPath(scheduled.message.checkout),
      text,
      // A captured conversation continues only once the harness has said its id.
      continued: (index > 0 || attempt > 0) && state.conversation !== undefined,
    };
    const attemptStarted = Date.now();
    const logFile = join(d.logs, `request-${String(index).padStart(2, "0")}-attempt-${attempt}.log`);
    const cwd = agent.working_directory === "workspace" && d.place ? d.place.paths.workspace : request.checkout;
    const argv = scripted ? [] : agentArgv(agent, request, d.place!.paths, state.conversation ?? "");
    if (!scripted && argv.some((a) => a.includes(messageFileOf(d.place!.paths))))
      await writeFile(d.place!.hostFile(messageFileOf(d.place!.paths)), agentMessage(agent, request));
    const result: Attempt = scripted
      ? await scripted(index, request).then(() => ({ exit: 0, timedOut: false }))
      : await d.place!.attempt(argv, cwd, budget, logFile, agentStdin(agent, request, d.place!.paths, state.conversation ?? ""));
    state.agentMs += Date.now() - attemptStarted;
    outcome.exits.push(result.exit);
    outcome.timedOut = result.timedOut;
    const reading: AttemptReading | undefined = agent.usage ? readAttempt(agent.usage, await attemptOutput(agent, d, request, logFile, state)) : undefined;
    if (reading?.usage) {
      // A running total (Codex's) becomes this attempt's own by the difference from the last one seen.
      const own = reading.cumulative ? usageSince(reading.usage, state.runningTotal) : reading.usage;
      if (reading.cumulative) state.runningTotal = reading.usage;
      outcome.usage = addUsage(outcome.usage ?? NO_USAGE, own);
    }
    if (state.conversation === undefined && typeof agent.conversation === "object")
      state.conversation = await capturedConversation(agent.conversation.capture, logFile);
    outcome.failure =
      reading?.failure ?? (!result.timedOut && result.exit !== 0 ? { kind: "exit", detail: `exited with ${result.exit} (its output: ${logFile})` } : undefined);
    if (result.timedOut) {
      if (outcome.continuations >= spec.budget.timeout_continuations) break;
      outcome.continuations++;
      text = CONTINUATION_MESSAGE;
      log.info(
        `${spec.session_id} (${condition}) request ${index}: out of its ${budget}s budget; continuation ${outcome.continuations} of ${spec.budget.timeout_continuations}`,
      );
      continue;
    }
    if (outcome.failure?.kind !== "infrastructure" || outcome.infrastructureRetries >= INFRASTRUCTURE_RETRIES) break;
    outcome.infrastructureRetries++;
    log.info(
      `${spec.session_id} (${condition}) request ${index}: ${outcome.failure.detail}; retry ${outcome.infrastructureRetries} of ${INFRASTRUCTURE_RETRIES}`,
    );
  }
  return outcome;
}

/** What an attempt said: its output, and what it added to the agent's usage file during it. */
async function attemptOutput(agent: AgentSpec, d: Delivery, request: AgentRequest, logFile: string, state: { usageFileRead?: number }): Promise<string> {
  const output = await readFile(logFile, "utf8").catch(() => "");
  if (!agent.usage_file || !d.place) return output;
  // The file is named as the agent sees it; in its environment it is in a directory shared with this machine.
  const file = d.place.hostFile(agentArgv({ ...agent, command: [agent.usage_file], continue_command: [agent.usage_file] }, request, d.place.paths, "")[0]!);
  const all = await readFile(file, "utf8").catch(() => "");
  const added = all.slice(state.usageFileRead ?? 0);
  state.usageFileRead = all.length;
  return `${output}\n${added}`;
}

/** The conversation id a harness printed in its first request's output (the capture regex's first group). */
async function capturedConversation(pattern: string, logFile: string): Promise<string | undefined> {
  const output = await readFile(logFile, "utf8").catch(() => "");
  return new RegExp(pattern).exec(output)?.[1];
}

/** The behaviour the study discusses, from a run's trajectory. */
function summarise(
  agent: AgentSpec,
  lines: TrajectoryRequest[],
  workLostFiles: number,
  runnerSeconds: number,
  trajectory: string,
  infrastructureFault: string | undefined,
): SessionBehaviour {
  const elsewhere = (l: TrajectoryRequest) => Object.entries(l.changes).filter(([path]) => path !== l.checkout);
  // Switch-Focus: the substantive focus requests after intervening work (not the first, not the finalization).
  const resumed = lines.filter((l, i) => l.focus && !l.finalization && i > 0 && !lines[i - 1]!.focus);
  const total = (ls: TrajectoryRequest[]) => ls.reduce((sum, l) => (l.usage ? addUsage(sum, l.usage) : sum), NO_USAGE);
  return {
    agent: agent.name,
    requests: lines.length,
    cross_task_write_requests: lines.filter((l) => elsewhere(l).length > 0).length,
    cross_task_write_files: lines.reduce((n, l) => n + elsewhere(l).reduce((m, [, c]) => m + c.added.length + c.modified.length + c.deleted.length, 0), 0),
    focus_recovery_seconds: lines.filter((l) => l.focus_first_change_seconds !== undefined).map((l) => l.focus_first_change_seconds ?? null),
    work_lost_files: workLostFiles,
    continuations_used: lines.reduce((n, l) => n + l.continuations, 0),
    timed_out_requests: lines.filter((l) => l.timed_out).length,
    failed_requests: lines.filter((l) => l.failure).length,
    ...(infrastructureFault ? { infrastructure_fault: infrastructureFault } : {}),
    ...(agent.usage ? { usage: { all: total(lines), focus_resumed: total(resumed) } } : {}),
    runner_seconds: runnerSeconds,
    trajectory,
  };
}

/** Snapshots every checkout after a request, updates `snapshots`, and says what changed where. */
async function recordChanges(
  paths: string[],
  hostPath: (path: string) => string,
  snapshots: Map<string, Snapshot>,
  hashes: HashCache,
): Promise<TrajectoryRequest["changes"]> {
  const changes: TrajectoryRequest["changes"] = {};
  for (const path of paths) {
    const after = await snapshot(hostPath(path), hashes);
    const changed = changesBetween(snapshots.get(path)!, after);
    if (changed) changes[path] = changed;
    snapshots.set(path, after);
  }
  return changes;
}

/** The files a request changed in one checkout, whatever the kind of change. */
function pick(changes: TrajectoryRequest["changes"], path: string): string[] {
  const c = changes[path];
  return c ? [...c.added, ...c.modified, ...c.deleted] : [];
}
