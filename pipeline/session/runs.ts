import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve } from "node:path";
import type Docker from "dockerode";
import { parse } from "yaml";
import { writeFileAtomic } from "../atomic.ts";
import type { OpenedBenchmark } from "../project/benchmark.ts";
import { DockerExecutor, dockerAvailable } from "../executors/docker.ts";
import { environmentSpec } from "../executors/environment.ts";
import { WORK_LABEL } from "../executors/index.ts";
import { isRemoteCloneUrl } from "../git.ts";
import { type Logger, silentLogger } from "../logger.ts";
import { AgentSpec } from "../schemas/agent.ts";
import { SessionIndex, SessionSpec } from "../schemas/session.ts";
import { VerificationReport } from "../schemas/verification.ts";
import { describeFirstIssue, InputError, readJsonFile } from "../validation.ts";
import { focusCheckoutIn, runSession } from "./run.ts";
import type { ModelTarget } from "./types.ts";
import { verifySubmission } from "./score.ts";

export type Condition = "control" | "switched";

/** Bad input to `session run`: names the file and field, and nothing was run. */
export class SessionInputError extends InputError {
  override name = "SessionInputError";
}

/** How many adapters one may extend in a chain (a loop is refused long before). */
const MAX_EXTENDS = 4;

/** One AGENT.yaml as written, its `extends` followed: the base's keys, each replaced by this file's own. */
function agentYaml(file: string, seen: string[]): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new SessionInputError(`${file}: not a YAML agent description: ${(error as Error).message}`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new SessionInputError(`${file}: not a YAML agent description: not a mapping`);
  const { extends: base, ...own } = raw as Record<string, unknown>;
  // A home file's source is named relative to the adapter that names it, wherever it is extended from.
  if (Array.isArray(own.home_files))
    own.home_files = own.home_files.map((f: unknown) =>
      f && typeof f === "object" && typeof (f as { source?: unknown }).source === "string"
        ? { ...f, source: resolve(dirname(file), (f as { source: string }).source) }
        : f,
    );
  const relay = own.context_relay as { program?: unknown } | undefined;
  if (relay && typeof relay === "object" && typeof relay.program === "string") own.context_relay = { ...relay, program: resolve(dirname(file), relay.program) };
  if (base === undefined) return own;
  if (typeof base !== "string" || base === "") throw new SessionInputError(`${file}: extends: the path of another agent description, relative to this one`);
  // An adapter that extends another is a new adapter: it says its own name.
  if (typeof own.name !== "string") throw new SessionInputError(`${file}: name: an adapter that extends another names itself`);
  const baseFile = resolve(dirname(file), base);
  if (seen.includes(baseFile) || seen.length >= MAX_EXTENDS)
    throw new SessionInputError(`${file}: extends: ${base} makes a chain of ${[...seen, baseFile].join(" → ")}`);
  if (!existsSync(baseFile)) throw new SessionInputError(`${file}: extends: ${baseFile} does not exist`);
  return { ...agentYaml(baseFile, [...seen, baseFile]), ...own };
}

/**
 * An AGENT.yaml, validated; a bad one is refused naming the file and field. An adapter may
 * `extends: other.yaml` (the same harness run elsewhere, say): it is the other's keys with its own
 * in their place, whole (a key is replaced, never merged), validated as one adapter.
 */
export function loadAgent(file: string): AgentSpec {
  const raw = agentYaml(resolve(file), [resolve(file)]);
  const parsed = AgentSpec.safeParse(raw);
  if (!parsed.success) throw new SessionInputError(`${file}: ${describeFirstIssue(parsed.error, raw)}`);
  parsed.data.home_files.forEach((f, i) => {
    if (!existsSync(f.source)) throw new SessionInputError(`${file}: home_files[${i}].source: ${f.source} does not exist`);
  });
  const relay = parsed.data.context_relay;
  if (relay && !existsSync(relay.program)) throw new SessionInputError(`${file}: context_relay.program: ${relay.program} does not exist`);
  return parsed.data;
}

export interface SessionRunOptions {
  session: string;
  condition: Condition;
  agent: AgentSpec;
  /** Where the verification report goes: `<out>/<session>.<condition>.json`, where `report` reads it. */
  out: string;
  /** Where the run's workspace, agent logs and trajectory go (outside `out`: `report` reads every JSON there). */
  work?: string;
  /**
   * The report of an earlier run whose verification met an infrastructure fault: its focus
   * checkout, when still in the run directory, is verified again, and the agent is not run again.
   */
  reverify?: VerificationReport;
  log: Logger;
  /** The model endpoint an agent with `model_endpoint` is pointed at, and where installed agents are. */
  model?: ModelTarget;
  toolsDir?: string;
  /** Replace a run folder that holds another agent's run (or anything but a run of this one). */
  force?: boolean;
}

/** Written into each run folder: whose run it holds, so another run never deletes it silently. */
const RUN_OWNER_FILE = ".switch-swe-run.json";

export interface RunOwner {
  agent: string;
  /** The report whose trajectory link points into the folder. */
  report: string;
}

/**
 * Checks that a run may take `runDir`: it is absent or empty, or holds an earlier run of the same
 * agent reported to the same file (replaced, and said). Another agent's run, a run reported
 * elsewhere, or a folder that is not a run is refused (InputError, exit 2) unless `force`: its
 * report's trajectory link would otherwise point at another run.
 */
export function checkRunDir(runDir: string, owner: RunOwner, force: boolean | undefined, log: Logger): void {
  if (!existsSync(runDir) || !readdirSync(runDir).length) return;
  let earlier: Partial<RunOwner> | undefined;
  try {
    earlier = JSON.parse(readFileSync(join(runDir, RUN_OWNER_FILE), "utf8")) as Partial<RunOwner>;
  } catch {
    earlier = undefined;
  }
  const same = earlier?.agent === owner.agent && earlier?.report === owner.report;
  if (same) {
    log.info(`${runDir}: replacing the earlier run of ${owner.agent} there (its report ${owner.report} is written anew)`);
    return;
  }
  const what = earlier?.agent
    ? `the run of agent ${earlier.agent} reported in ${earlier.report ?? "an unknown file"}`
    : "files that are not a run of switch-swe";
  if (force) {
    log.warn(`${runDir}: --force: replacing ${what}`);
    return;
  }
  throw new InputError(`${runDir} holds ${what}; it is not deleted: give another --work folder, or pass --force to replace it`);
}

/**
 * Replaces `runDir` with an empty run folder holding only its owner file. The folder is built
 * beside it (`<runDir>.partial-<pid>`) and renamed into place, so a run killed at any instant
 * leaves either no folder or one that names its owner: a folder made but not yet marked would be
 * refused as "not a run" by the next run (run-all resumed after a kill). A partial left by a
 * killed run of this folder is removed first.
 */
export async function takeRunDir(runDir: string, owner: RunOwner): Promise<void> {
  const parent = dirname(runDir);
  await mkdir(parent, { recursive: true });
  const partialOf = `${basename(runDir)}.partial-`;
  for (const name of readdirSync(parent))
    if (name.startsWith(partialOf) && /^\d+$/.test(name.slice(partialOf.length))) await rm(join(parent, name), { recursive: true, force: true });
  const partial = `${runDir}.partial-${process.pid}`;
  await mkdir(partial);
  await writeFile(join(partial, RUN_OWNER_FILE), JSON.stringify(owner) + "\n");
  await rm(runDir, { recursive: true, force: true });
  await rename(partial, runDir);
}

/**
 * The clone source the session names (emit writes it from the profile): a URL, or a local path
 * relative to the session file, used when it exists here; otherwise the config's profile decides.
 */
export function sessionCloneSource(spec: SessionSpec, sessionFile: string): string | undefined {
  const url = spec.clone_url;
  if (!url) return undefined;
  if (isRemoteCloneUrl(url)) return url;
  const path = resolve(dirname(resolve(sessionFile)), url);
  return existsSync(path) ? path : undefined;
}

/** Where `switch-swe agents install` puts harnesses, and the session runner looks for them, by default. */
export const DEFAULT_TOOLS_DIR = join(".switch-swe", "agents");

/** Where one session and condition's run goes: its workspace, agent logs and trajectory. */
const runDirOf = (bench: OpenedBenchmark, options: { work?: string; agent: AgentSpec }, sessionId: string, condition: Condition) =>
  resolve(options.work ?? bench.project.layout.sessionRuns(options.agent.name), `${sessionId}.${condition}`);

/** The report file of one session and condition under a results directory. */
export const reportFileOf = (out: string, sessionId: string, condition: Condition) => join(out, `${sessionId}.${condition}.json`);

/**
 * One condition of one session, from provisioning to the verification report, which carries
 * what the agent did (`behaviour`) beside the verdict.
 */
export async function runAndScoreSession(bench: OpenedBenchmark, options: SessionRunOptions): Promise<VerificationReport> {
  const spec = readJsonFile(options.session, SessionSpec, "a session specification (manifests/<benchmark>/sessions/<session>.json)");
  bench.profile(spec.repo);
  const source = bench.cloneSource(spec.repo, sessionCloneSource(spec, options.session));
  let mirror = "";
  for (const checkout of spec.checkouts) mirror = await bench.workspace.mirrors.ensure(spec.repo, source, checkout.base_commit);
  const runDir = runDirOf(bench, options, spec.session_id, options.condition);
  const reportFile = reportFileOf(options.out, spec.session_id, options.condition);
  const kept =
    options.reverify?.behaviour && existsSync(focusCheckoutIn(runDir, spec))
      ? { focusCheckout: focusCheckoutIn(runDir, spec), behaviour: options.reverify.behaviour }
      : undefined;
  if (kept)
    options.log.info(
      `session ${spec.session_id} (${options.condition}): its verification met an infrastructure fault; verifying the kept focus checkout again (the agent is not run again)`,
    );
  const run = kept ?? (await runAgent(bench, options, { spec, mirror, runDir, reportFile }));
  const { report } = await verifySubmission(bench, { session: options.session, checkout: run.focusCheckout, condition: options.condition, log: options.log });
  const withBehaviour = VerificationReport.parse({ ...report, behaviour: run.behaviour });
  await writeFileAtomic(reportFile, JSON.stringify(withBehaviour, null, 2) + "\n");
  return withBehaviour;
}

/** Runs the agent through the session from freshly provisioned checkouts; the behaviour names the trajectory relative to the report. */
async function runAgent(bench: OpenedBenchmark, options: SessionRunOptions, at: { spec: SessionSpec; mirror: string; runDir: string; reportFile: string }) {
  const { spec, runDir } = at;
  const environment = options.agent.runs === "environment" ? await agentImage(bench, spec, at.mirror) : undefined;
  // Only the scripted test agents may read held-out assets; a command agent is never given them.
  const heldout = options.agent.scripted ? (taskId: string) => bench.heldout(taskId) : undefined;
  const owner = { agent: options.agent.name, report: resolve(at.reportFile) };
  checkRunDir(runDir, owner, options.force, options.log);
  await takeRunDir(runDir, owner);
  const run = await runSession({
    spec,
    condition: options.condition,
    agent: options.agent,
    runDir,
    mirror: at.mirror,
    heldout,
    log: options.log,
    environment,
    ...(options.model ? { model: options.model } : {}),
    toolsDir: resolve(options.toolsDir ?? DEFAULT_TOOLS_DIR),
  });
  return { focusCheckout: run.focusCheckout, behaviour: { ...run.behaviour, trajectory: relative(dirname(resolve(at.reportFile)), run.trajectoryFile) } };
}

/**
 * The focus task's environment image, built unless it exists, for an agent that runs in the
 * environment: the image the verifier runs the focus task's tests in, so the agent's tests see
 * what the verifier's will. Only the recipe is read from the held-out asset, on the host.
 */
async function agentImage(
  bench: OpenedBenchmark,
  spec: SessionSpec,
  mirror: string,
): Promise<{ docker: Docker; image: string; labels: Record<string, string> }> {
  const { workspace } = bench;
  if (!(await dockerAvailable(workspace.docker)))
    throw new Error("the agent runs in the environment (runs: environment), but no Docker engine answers: start dockerd, or run the agent on the host");
  const focus = bench.requireHeldout(spec.focus, "whose environment the agent runs in");
  const env = environmentSpec(focus.repo, focus.environment, focus.environment_as_of);
  // Docker's whatever the verification's executor: the image is the environment the agent works in.
  await (await workspace.executor("docker")).ensureEnvironment(env, workspace.baseRevision(mirror, focus.base_commit));
  return { docker: workspace.docker, image: DockerExecutor.imageTag(env), labels: { [WORK_LABEL]: workspace.dir } };
}

/**
 * Every session of an emitted benchmark in the conditions asked, `jobs` at a time. Resumable: a
 * session and condition whose report exists is not run again, and a killed run left no report (it
 * is written whole, at the end), so it runs again from scratch.
 */
export async function runAllSessions(
  bench: OpenedBenchmark,
  options: {
    manifest: string;
    conditions: Condition[];
    agent: AgentSpec;
    out: string;
    work?: string;
    jobs: number;
    log: Logger;
    only?: string[];
    model?: ModelTarget;
    toolsDir?: string;
    force?: boolean;
  },
): Promise<{ ran: VerificationReport[]; skipped: number; failed: { session: string; condition: Condition; error: string }[] }> {
  const sessionsDir = join(options.manifest, "sessions");
  const index = readJsonFile(join(sessionsDir, "index.json"), SessionIndex, "the benchmark's list of sessions");
  const work = index.sessions
    .filter((s) => !options.only || options.only.includes(s.session_id))
    .flatMap((s) => options.conditions.map((condition) => ({ file: join(sessionsDir, s.file), sessionId: s.session_id, condition })));
  // Scored means a report with a verdict: one whose verification met an infrastructure fault is done again.
  const earlier = (w: { sessionId: string; condition: Condition }) => {
    const file = reportFileOf(options.out, w.sessionId, w.condition);
    if (!existsSync(file)) return undefined;
    try {
      return readJsonFile(file, VerificationReport, "a verification report");
    } catch (error) {
      options.log.warn(`${(error as Error).message.split("\n")[0]}: run again`);
      return undefined;
    }
  };
  const todo = work.map((w) => ({ ...w, report: earlier(w) })).filter((w) => !w.report || w.report.infrastructure_fault);
  // Every folder this run will take, checked before any runs: another agent's run stops it at once.
  for (const w of todo)
    checkRunDir(
      runDirOf(bench, options, w.sessionId, w.condition),
      { agent: options.agent.name, report: resolve(reportFileOf(options.out, w.sessionId, w.condition)) },
      options.force,
      silentLogger,
    );
  const ran: VerificationReport[] = [];
  const failed: { session: string; condition: Condition; error: string }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      const item = todo[next++]!;
      options.log.info(`session ${item.sessionId} (${item.condition}) with ${options.agent.name}`);
      try {
        ran.push(
          await runAndScoreSession(bench, {
            session: item.file,
            condition: item.condition,
            agent: options.agent,
            out: options.out,
            work: options.work,
            ...(item.report ? { reverify: item.report } : {}),
            log: options.log,
            ...(options.model ? { model: options.model } : {}),
            ...(options.toolsDir ? { toolsDir: options.toolsDir } : {}),
            ...(options.force ? { force: true } : {}),
          }),
        );
      } catch (error) {
        // One session that cannot run does not stop the others; it has no report, so the next run-all tries it again.
        const message = (error as Error).message.split("\n")[0]!;
        options.log.error(`session ${item.sessionId} (${item.condition}) with ${options.agent.name} failed: ${message}`);
        failed.push({ session: item.sessionId, condition: item.condition, error: message });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.jobs) }, worker));
  return { ran, skipped: work.length - todo.length, failed };
}
