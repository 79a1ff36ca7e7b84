import { spawn } from "node:child_process";
import type Docker from "dockerode";
import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { writeFileAtomic } from "../atomic.ts";
import { git } from "../git.ts";
import type { Logger } from "../logger.ts";
import type { AgentSpec, SessionBehaviour, TrajectoryRequest } from "../schemas/agent.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import type { ScheduledRequest, SessionSpec } from "../schemas/session.ts";
import { buildNetworkSettings } from "../executors/types.ts";
import { AgentEnvironment, type Attempt } from "./environment.ts";
import { changesBetween, provisionCheckout, snapshot, type HashCache, type Snapshot } from "../checkouts/snapshot.ts";

/** Sent, in the same conversation, when a request ran out of its budget: the same for every agent. */
export const CONTINUATION_MESSAGE = "Your time for the last request ran out before you finished. Continue that request from where you stopped.";

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
}

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

/** A command agent's argv for a request, its placeholders filled in. */
export function agentArgv(agent: AgentSpec, request: AgentRequest, paths: AgentPaths, conversation: string): string[] {
  const template = request.continued && agent.continue_command ? agent.continue_command : agent.command!;
  const values: Record<string, string> = {
    "{text}": request.text,
    "{checkout}": request.checkout,
    "{workspace}": paths.workspace,
    "{repository}": request.repository,
    "{session_dir}": paths.sessionDir,
    "{conversation}": conversation,
  };
  return template.map((part) => part.replace(/\{(text|checkout|workspace|repository|session_dir|conversation)\}/g, (m) => values[m]!));
}

/** Runs one attempt of a command agent, killed (its whole process group) at the budget. */
async function runCommand(argv: string[], cwd: string, env: NodeJS.ProcessEnv, budgetSeconds: number, logFile: string): Promise<Attempt> {
  const output: Buffer[] = [];
  const attempt = await new Promise<Attempt>((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    }, budgetSeconds * 1000);
    child.stdout!.on("data", (c: Buffer) => output.push(c));
    child.stderr!.on("data", (c: Buffer) => output.push(c));
    child.on("error", (error) => {
      clearTimeout(timer);
      output.push(Buffer.from(`could not start ${argv[0]}: ${error.message}\n`));
      resolve({ exit: 127, timedOut: false });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ exit: timedOut ? null : (code ?? null), timedOut });
    });
  });
  await writeFile(logFile, Buffer.concat(output));
  return attempt;
}

/** The variables a command agent gets from the user's environment: the ones its spec names (and, on the host, enough to run). */
function agentVariables(agent: AgentSpec, host: boolean): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of [...(host ? ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "TERM"] : []), ...agent.env])
    if (process.env[key] !== undefined) env[key] = process.env[key]!;
  return env;
}

/** Where a command agent runs, and how one attempt is run there. */
interface AgentPlace {
  paths: AgentPaths;
  /** The path the agent is given for a checkout of the session. */
  checkout: (sessionPath: string) => string;
  attempt: (argv: string[], checkout: string, budgetSeconds: number, logFile: string) => Promise<Attempt>;
  close: () => Promise<void>;
}

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
    return {
      paths: { workspace: join(runDir, "workspace"), sessionDir: runDir },
      checkout: hostPath,
      attempt: (argv, checkout, budget, logFile) => runCommand(argv, checkout, agentVariables(agent, true), budget, logFile),
      close: async () => undefined,
    };
  }
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
  const environment = await AgentEnvironment.start({
    docker: options.environment.docker,
    image: options.environment.image,
    mounts: [
      ...spec.checkouts.map((c) => ({ host: hostPath(c.path), container: c.path })),
      { host: agentDir, container: "/agent" },
      ...(network.caBundle ? [{ host: network.caBundle, container: "/run/host-ca.crt", readOnly: true }] : []),
    ],
    home: "/agent",
    user: `${uid}:${gid}`,
    network: agent.network,
    labels: options.environment.labels,
  });
  const variables = { ...network.vars, ...ca, ...agentVariables(agent, false) };
  try {
    for (const [i, command] of agent.setup.entries()) {
      const logFile = join(logs, `setup-${i}.log`);
      const result = await environment.exec(command, { cwd: "/", env: variables, budgetSeconds: agent.setup_timeout_seconds, logFile, asRoot: true });
      if (result.exit !== 0)
        throw new Error(
          `the agent ${agent.name}'s setup command ${JSON.stringify(command)} ${result.timedOut ? `took more than ${agent.setup_timeout_seconds}s` : `exited with ${result.exit}`} (its output: ${logFile})`,
        );
    }
  } catch (error) {
    await environment.stop();
    throw error;
  }
  return {
    paths: { workspace: commonParent(spec.checkouts.map((c) => c.path)), sessionDir: "/agent" },
    checkout: (path) => path,
    attempt: (argv, checkout, budget, logFile) => environment.exec(argv, { cwd: checkout, env: variables, budgetSeconds: budget, logFile }),
    close: () => environment.stop(),
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
  const place = agent.scripted ? undefined : await agentPlace(options, hostPath, logs);
  let requests: { lines: TrajectoryRequest[]; everChanged: Set<string>; agentMs: number };
  try {
    requests = await deliverRequests(options, { hostPath, focusPath, logs, hashes, snapshots, place });
  } finally {
    await place?.close();
  }
  const trajectoryFile = join(runDir, "trajectory.jsonl");
  await writeFileAtomic(trajectoryFile, requests.lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  const lost = [...requests.everChanged].filter((p) => snapshots.get(focusPath)!.get(p) === base.get(focusPath)!.get(p)).length;
  const behaviour = summarise(agent.name, requests.lines, lost, Math.max(0, (Date.now() - runStarted - requests.agentMs) / 1000), trajectoryFile);
  return { focusCheckout: focusCheckoutIn(runDir, spec), trajectoryFile, behaviour };
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

/** Delivers every request of the condition in order, and records what each did. */
async function deliverRequests(options: SessionRunOptions, d: Delivery): Promise<{ lines: TrajectoryRequest[]; everChanged: Set<string>; agentMs: number }> {
  const { spec, condition, agent, log } = options;
  const schedule = spec.conditions[condition];
  const conversation = createHash("sha256")
    .update(`${spec.session_id}/${condition}/${agent.name}`)
    .digest("hex")
    .slice(0, 32)
    .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, "$1-$2-$3-$4-$5");
  const scripted = agent.scripted ? scriptedAgent(agent.scripted, schedule, spec.focus, d.hostPath, options.heldout) : undefined;
  const budget = spec.budget.per_request_seconds;
  const everChanged = new Set<string>();
  const lines: TrajectoryRequest[] = [];
  let agentMs = 0;
  for (const [index, scheduled] of schedule.entries()) {
    const active = scheduled.message.checkout;
    const isFocus = scheduled.task_id === spec.focus;
    const focusReturn = isFocus && index > 0 && schedule[index - 1]!.task_id !== spec.focus;
    const started = Date.now();
    const watcher = focusReturn
      ? watchFirstChange(d.hostPath(d.focusPath), d.snapshots.get(d.focusPath)!, started, options.pollSeconds ?? 0.5, d.hashes)
      : undefined;
    const exits: (number | null)[] = [];
    let continuations = 0;
    let timedOut = false;
    for (let attempt = 0; ; attempt++) {
      const request: AgentRequest = {
        repository: scheduled.message.repository,
        checkout: d.place ? d.place.checkout(active) : d.hostPath(active),
        text: attempt === 0 ? scheduled.message.text : CONTINUATION_MESSAGE,
        continued: index > 0 || attempt > 0,
      };
      const attemptStarted = Date.now();
      const logFile = join(d.logs, `request-${String(index).padStart(2, "0")}-attempt-${attempt}.log`);
      const result: Attempt = scripted
        ? await scripted(index, request).then(() => ({ exit: 0, timedOut: false }))
        : await d.place!.attempt(agentArgv(agent, request, d.place!.paths, conversation), request.checkout, budget, logFile);
      agentMs += Date.now() - attemptStarted;
      exits.push(result.exit);
      timedOut = result.timedOut;
      if (!result.timedOut || continuations >= spec.budget.timeout_continuations) break;
      continuations++;
      log.info(
        `${spec.session_id} (${condition}) request ${index}: out of its ${budget}s budget; continuation ${continuations} of ${spec.budget.timeout_continuations}`,
      );
    }
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
      budget_seconds: budget,
      continuations,
      timed_out: timedOut,
      exits,
      changes,
      ...(focusFirst !== undefined ? { focus_first_change_seconds: focusFirst } : {}),
    });
  }
  return { lines, everChanged, agentMs };
}

/** The behaviour the study discusses, from a run's trajectory. */
function summarise(agent: string, lines: TrajectoryRequest[], workLostFiles: number, runnerSeconds: number, trajectory: string): SessionBehaviour {
  const elsewhere = (l: TrajectoryRequest) => Object.entries(l.changes).filter(([path]) => path !== l.checkout);
  return {
    agent,
    requests: lines.length,
    cross_task_write_requests: lines.filter((l) => elsewhere(l).length > 0).length,
    cross_task_write_files: lines.reduce((n, l) => n + elsewhere(l).reduce((m, [, c]) => m + c.added.length + c.modified.length + c.deleted.length, 0), 0),
    focus_recovery_seconds: lines.filter((l) => l.focus_first_change_seconds !== undefined).map((l) => l.focus_first_change_seconds ?? null),
    work_lost_files: workLostFiles,
    continuations_used: lines.reduce((n, l) => n + l.continuations, 0),
    timed_out_requests: lines.filter((l) => l.timed_out).length,
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
