import { existsSync, mkdirSync, readFileSync } from "node:fs";
import Docker from "dockerode";
import { rm } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { type Command, Option } from "commander";
import { parse } from "yaml";
import { emitStage } from "../../stages/emit/index.ts";
import { BUILT_STAGES } from "../../stages/index.ts";
import { writeFileAtomic } from "../../pipeline/atomic.ts";
import { loadConfig } from "../../pipeline/engine/config.ts";
import { cloneSourceOf, loadProfilesDir } from "../../pipeline/profiles/load.ts";
import { parseStageConfig } from "../../pipeline/engine/engine.ts";
import { baseRevision } from "../../pipeline/checkouts/checkout.ts";
import { createExecutor } from "../../pipeline/executors/index.ts";
import { dockerAvailable } from "../../pipeline/executors/docker.ts";
import { environmentSpec } from "../../pipeline/executors/environment.ts";
import { DockerExecutor, WORK_LABEL } from "../../pipeline/executors/index.ts";
import { isRemoteCloneUrl, MirrorCache } from "../../pipeline/git.ts";
import { createLogger, type Logger } from "../../pipeline/logger.ts";
import { AgentSpec } from "../../pipeline/schemas/agent.ts";
import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import { SessionIndex, SessionSpec } from "../../pipeline/schemas/session.ts";
import { VerificationReport } from "../../pipeline/schemas/verification.ts";
import { focusCheckoutIn, runSession } from "../../pipeline/session/run.ts";
import { describeFirstIssue, InputError, readJsonFile } from "../../pipeline/validation.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "../io.ts";
import { formatVerification, verifySubmission } from "./verify.ts";
import { type ExecutionOverrides, executorOption, redisOption } from "../execution-options.ts";

export type Condition = "control" | "switched";

/** Bad input to `session run`: names the file and field, and nothing was run. */
export class SessionInputError extends InputError {
  override name = "SessionInputError";
}

/** An AGENT.yaml, validated; a bad one is refused naming the file and field. */
export function loadAgent(file: string): AgentSpec {
  let raw: unknown;
  try {
    raw = parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new SessionInputError(`${file}: not a YAML agent description: ${(error as Error).message}`);
  }
  const parsed = AgentSpec.safeParse(raw);
  if (!parsed.success) throw new SessionInputError(`${file}: ${describeFirstIssue(parsed.error, raw)}`);
  return parsed.data;
}

export interface SessionRunCommand {
  config: string;
  session: string;
  condition: Condition;
  agent: AgentSpec;
  /** Where the verification report goes: `<out>/<session>.<condition>.json`, where `report` reads it. */
  out: string;
  /** Where the run's workspace, agent logs and trajectory go (outside `out`: `report` reads every JSON there). */
  work?: string;
  /** The verification's --executor and --redis over the config's execution settings. */
  overrides?: ExecutionOverrides;
  /**
   * The report of an earlier run whose verification met an infrastructure fault: its focus
   * checkout, when still in the run directory, is verified again, and the agent is not run again.
   */
  reverify?: VerificationReport;
  log: Logger;
}

/** One mirror cache per directory in this process, so sessions run at once never clone a repository twice. */
const mirrorCaches = new Map<string, MirrorCache>();
function mirrorCacheAt(root: string): MirrorCache {
  let cache = mirrorCaches.get(root);
  if (!cache) mirrorCaches.set(root, (cache = new MirrorCache(root)));
  return cache;
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

/** The report file of one session and condition under a results directory. */
export const reportFileOf = (out: string, sessionId: string, condition: Condition) => join(out, `${sessionId}.${condition}.json`);

/**
 * `switch-swe session run`: one condition of one session, from provisioning to the verification
 * report, which carries what the agent did (`behaviour`) beside the verdict.
 */
export async function runSessionCommand(options: SessionRunCommand): Promise<VerificationReport> {
  const loaded = loadConfig(options.config, BUILT_STAGES);
  const emit = parseStageConfig(emitStage, (loaded.config.stages as Record<string, unknown>).emit);
  const heldoutDir = resolve(loaded.baseDir, emit.heldout_dir);
  const spec = readJsonFile(options.session, SessionSpec, "a session specification (manifests/<benchmark>/sessions/<session>.json)");
  const { profiles, errors, dir: profilesDir } = loadProfilesDir(loaded.config.profiles_dir, loaded.baseDir);
  const profile = profiles.get(spec.repo);
  if (!profile) throw new SessionInputError(`${profilesDir}: ${errors.get(spec.repo) ?? `no profile for ${spec.repo}`}`);
  const mirrors = mirrorCacheAt(join(loaded.workDir, "git"));
  const source = sessionCloneSource(spec, options.session) ?? cloneSourceOf(spec.repo, profile, (p) => resolve(loaded.baseDir, p));
  let mirror = "";
  for (const checkout of spec.checkouts) mirror = await mirrors.ensure(spec.repo, source, checkout.base_commit);

  const runDir = resolve(options.work ?? join(loaded.workDir, "session-runs", options.agent.name), `${spec.session_id}.${options.condition}`);
  const reportFile = reportFileOf(options.out, spec.session_id, options.condition);
  const kept = options.reverify?.behaviour && existsSync(focusCheckoutIn(runDir, spec)) ? { focusCheckout: focusCheckoutIn(runDir, spec), behaviour: options.reverify.behaviour } : undefined;
  if (kept) options.log.info(`session ${spec.session_id} (${options.condition}): its verification met an infrastructure fault; verifying the kept focus checkout again (the agent is not run again)`);
  const run = kept ?? (await runAgent(options, { loaded, spec, heldoutDir, mirror, runDir, reportFile }));
  const { report } = await verifySubmission({ config: options.config, session: options.session, checkout: run.focusCheckout, condition: options.condition, overrides: options.overrides, log: options.log });
  const withBehaviour = VerificationReport.parse({ ...report, behaviour: run.behaviour });
  await writeFileAtomic(reportFile, JSON.stringify(withBehaviour, null, 2) + "\n");
  return withBehaviour;
}

/** Runs the agent through the session from freshly provisioned checkouts; the behaviour names the trajectory relative to the report. */
async function runAgent(options: SessionRunCommand, at: { loaded: ReturnType<typeof loadConfig>; spec: SessionSpec; heldoutDir: string; mirror: string; runDir: string; reportFile: string }) {
  const { spec, heldoutDir, runDir } = at;
  const environment = options.agent.runs === "environment" ? await agentImage(at.loaded, spec, heldoutDir, at.mirror, options.log) : undefined;
  // Only the scripted test agents may read held-out assets; a command agent is never given them.
  const heldout = options.agent.scripted
    ? (taskId: string) => {
        const file = join(heldoutDir, `${taskId}.json`);
        return existsSync(file) ? readJsonFile(file, HeldoutTask, "a held-out task") : undefined;
      }
    : undefined;
  await rm(runDir, { recursive: true, force: true });
  const run = await runSession({ spec, condition: options.condition, agent: options.agent, runDir, mirror: at.mirror, heldout, log: options.log, environment });
  return { focusCheckout: run.focusCheckout, behaviour: { ...run.behaviour, trajectory: relative(dirname(resolve(at.reportFile)), run.trajectoryFile) } };
}

/**
 * The focus task's environment image, built unless it exists, for an agent that runs in the
 * environment: the image the verifier runs the focus task's tests in, so the agent's tests see
 * what the verifier's will. Only the recipe is read from the held-out asset, on the host.
 */
async function agentImage(loaded: ReturnType<typeof loadConfig>, spec: SessionSpec, heldoutDir: string, mirror: string, log: Logger): Promise<{ docker: Docker; image: string; labels: Record<string, string> }> {
  const docker = new Docker();
  if (!(await dockerAvailable(docker))) throw new Error("the agent runs in the environment (runs: environment), but no Docker engine answers: start dockerd, or run the agent on the host");
  const file = join(heldoutDir, `${spec.focus}.json`);
  if (!existsSync(file)) throw new SessionInputError(`${file}: no held-out asset of ${spec.focus}, whose environment the agent runs in (is emit.heldout_dir in the config the benchmark's?)`);
  const focus = readJsonFile(file, HeldoutTask, "a held-out task");
  const env = environmentSpec(focus.repo, focus.environment, focus.environment_as_of);
  const executor = await createExecutor({ ...loaded.config.execution, executor: "docker" }, { workDir: loaded.workDir, log });
  const scratch = join(loaded.workDir, "verify-scratch");
  mkdirSync(scratch, { recursive: true });
  await executor.ensureEnvironment(env, baseRevision(mirror, focus.base_commit, scratch));
  return { docker, image: DockerExecutor.imageTag(env), labels: { [WORK_LABEL]: loaded.workDir } };
}

/**
 * `switch-swe session run-all`: every session of an emitted benchmark in the conditions asked,
 * `jobs` at a time. Resumable: a session and condition whose report exists is not run again, and
 * a killed run left no report (it is written whole, at the end), so it runs again from scratch.
 */
export async function runAllSessions(options: { config: string; manifest: string; conditions: Condition[]; agent: AgentSpec; out: string; work?: string; jobs: number; overrides?: ExecutionOverrides; log: Logger; only?: string[] }): Promise<{ ran: VerificationReport[]; skipped: number; failed: { session: string; condition: Condition; error: string }[] }> {
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
  const ran: VerificationReport[] = [];
  const failed: { session: string; condition: Condition; error: string }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      const item = todo[next++]!;
      options.log.info(`session ${item.sessionId} (${item.condition}) with ${options.agent.name}`);
      try {
        ran.push(await runSessionCommand({ config: options.config, session: item.file, condition: item.condition, agent: options.agent, out: options.out, work: options.work, overrides: options.overrides, ...(item.report ? { reverify: item.report } : {}), log: options.log }));
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

export function registerSession(program: Command, io: Io, exit: ExitCode): void {
  const session = program.command("session").description("run a coding agent through the benchmark's sessions and score it");
  const logger = (quiet: boolean) => createLogger({ level: quiet ? "warn" : "info", write: (line) => io.err(line + "\n") });
  withRunnerOptions(session
    .command("run")
    .description("drive an agent through one condition of one session: provision the five checkouts, deliver each request, verify the focus artifact")
    .requiredOption("-c, --config <file>", "the pipeline config that built the benchmark")
    .requiredOption("--session <file>", "the session specification (manifests/<benchmark>/sessions/<session>.json)")
    .addOption(new Option("--condition <condition>", "control (uninterrupted) or switched").choices(["control", "switched"]).makeOptionMandatory())
    .requiredOption("--agent <file>", "the agent description (AGENT.yaml; see data/agents/)")
    .requiredOption("--out <dir>", "the agent's results directory: the verification report is written there as <session>.<condition>.json"))
    .addHelpText("after", "\nExample:\n  switch-swe session run -c data/demo/pipeline.yaml --session manifests/demo/sessions/S.json --condition switched --agent data/agents/replay-reference.yaml --out results/replay-reference")
    .action(
      exit.act(async (opts) => {
        for (const [flag, kind] of [["--config", "file"], ["--session", "file"], ["--agent", "file"]] as const) requirePath(flag, opts[flag.slice(2)], kind);
        const report = await runSessionCommand({ config: opts.config, session: opts.session, condition: opts.condition, agent: loadAgent(opts.agent), out: opts.out, work: opts.work, overrides: { executor: opts.executor, redis: opts.redis }, log: logger(Boolean(opts.quiet)) });
        io.out(formatVerification(report));
        return report.infrastructure_fault ? 3 : report.resolved ? 0 : 1;
      }),
    );
  withRunnerOptions(session
    .command("run-all")
    .description("run an agent through every session of an emitted benchmark; sessions already scored are not run again")
    .requiredOption("-c, --config <file>", "the pipeline config that built the benchmark")
    .requiredOption("--manifest <dir>", "the emitted benchmark (its sessions/ directory and index)")
    .requiredOption("--agent <file>", "the agent description (AGENT.yaml)")
    .addOption(new Option("--conditions <which>", "control, switched, or both").choices(["control", "switched", "both"]).default("both"))
    .option("--out <dir>", "the agent's results directory (default: results/<agent name>)")
    .option("--jobs <n>", "sessions run at once", "1"))
    .addHelpText("after", "\nExample:\n  switch-swe session run-all -c data/demo/pipeline.yaml --manifest manifests/demo --agent data/agents/noop.yaml --conditions both --jobs 2")
    .action(
      exit.act(async (opts) => {
        for (const [flag, kind] of [["--config", "file"], ["--manifest", "directory"], ["--agent", "file"]] as const) requirePath(flag, opts[flag.slice(2)], kind);
        const jobs = Number(opts.jobs);
        if (!Number.isInteger(jobs) || jobs < 1) throw new UsageError(`--jobs: expected a positive whole number, got '${opts.jobs}'`);
        const agent = loadAgent(opts.agent);
        const conditions: Condition[] = opts.conditions === "both" ? ["control", "switched"] : [opts.conditions];
        const out = opts.out ?? join("results", agent.name);
        const { ran, skipped, failed } = await runAllSessions({ config: opts.config, manifest: opts.manifest, conditions, agent, out, work: opts.work, jobs, overrides: { executor: opts.executor, redis: opts.redis }, log: logger(Boolean(opts.quiet)) });
        io.out(`${agent.name}: ran ${ran.length} session run(s), ${ran.filter((r) => r.resolved).length} resolved; ${skipped} already scored; ${failed.length} failed to run (run again to retry them); reports in ${out}\n`);
        return failed.length ? 1 : ran.some((r) => r.infrastructure_fault) ? 3 : 0;
      }),
    );
}

/** The options both session commands take: where runs go, and how the focus artifact is verified. */
function withRunnerOptions(command: Command): Command {
  return command
    .option("--work <dir>", "where workspaces and trajectories go (default: <work_dir>/session-runs/<agent>)")
    .addOption(executorOption("executor of the verification: docker, local, auto, or queue (default: the config's execution.executor)"))
    .addOption(redisOption())
    .option("-q, --quiet", "only warnings and errors");
}
