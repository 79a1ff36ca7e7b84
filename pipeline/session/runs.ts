import { existsSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import type Docker from "dockerode";
import { writeFileAtomic } from "../atomic.ts";
import type { BenchmarkLayout } from "../benchmark-layout.ts";
import type { OpenedBenchmark } from "../project/benchmark.ts";
import { DockerExecutor, dockerAvailable } from "../executors/docker.ts";
import { environmentSpec } from "../executors/environment.ts";
import { WORK_LABEL } from "../executors/index.ts";
import { isRemoteCloneUrl } from "../git.ts";
import { type Logger, silentLogger } from "../logger.ts";
import type { AgentSpec } from "../schemas/agent.ts";
import { type Condition, SessionSpec } from "../schemas/session.ts";
import { sessionList } from "../project/listed-sessions.ts";
import { VerificationReport } from "../schemas/verification.ts";
import { checkoutCommit } from "../checkouts/derived.ts";
import { readJsonFile } from "../validation.ts";
import { DEFAULT_TOOLS_DIR } from "./agents.ts";
import { checkRunDir, reportFileOf, runDirOf, takeRunDir } from "./run-folder.ts";
import { driveAgent, focusCheckoutIn } from "./run.ts";
import type { ModelTarget } from "./types.ts";
import { verifySubmission } from "./score.ts";

/**
 * The runs of an emitted benchmark: one scored run (an agent driven through one condition of one
 * session, then its focus artifact verified and the report written), and every session's.
 */

/** One scored run: the session and condition, the agent, and where its report and run folder go. */
export interface ScoredRunOptions {
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

/**
 * One condition of one session, from provisioning to the verification report, which carries
 * what the agent did (`behaviour`) beside the verdict.
 */
export async function runAndScoreSession(benchmark: OpenedBenchmark, options: ScoredRunOptions): Promise<VerificationReport> {
  const spec = readJsonFile(options.session, SessionSpec, "a session specification (manifests/<benchmark>/sessions/<session>.json)");
  benchmark.profile(spec.repo);
  const source = sessionCloneSource(spec, options.session);
  let mirror = "";
  for (const checkout of spec.checkouts) mirror = await benchmark.mirrorAt(spec.repo, checkout.base_commit, source);
  const checkoutCommits = await sessionCheckoutCommits(benchmark, spec, mirror);
  const runDir = runDirOf(benchmark, options, spec.session_id, options.condition);
  const reportFile = reportFileOf(options.out, spec.session_id, options.condition);
  const kept =
    options.reverify?.behaviour && existsSync(focusCheckoutIn(runDir, spec))
      ? { focusCheckout: focusCheckoutIn(runDir, spec), behaviour: options.reverify.behaviour }
      : undefined;
  if (kept)
    options.log.info(
      `session ${spec.session_id} (${options.condition}): its verification met an infrastructure fault; verifying the kept focus checkout again (the agent is not run again)`,
    );
  const run = kept ?? (await runAgent(benchmark, options, { spec, mirror, checkoutCommits, runDir, reportFile }));
  const { report } = await verifySubmission(benchmark, {
    session: options.session,
    checkout: run.focusCheckout,
    condition: options.condition,
    log: options.log,
  });
  const withBehaviour = VerificationReport.parse({ ...report, behaviour: run.behaviour });
  await writeFileAtomic(reportFile, JSON.stringify(withBehaviour, null, 2) + "\n");
  return withBehaviour;
}

/** Runs the agent through the session from freshly provisioned checkouts; the behaviour names the trajectory relative to the report. */
/** Each checkout's commit (a derived one made again from the held-out upstream patches it reverses, and checked): what the checkouts are provisioned from. */
export async function sessionCheckoutCommits(benchmark: OpenedBenchmark, spec: SessionSpec, mirror: string): Promise<Map<string, string>> {
  const commits = new Map<string, string>();
  for (const checkout of spec.checkouts)
    commits.set(
      checkout.path,
      await checkoutCommit(mirror, checkout, (taskId) => benchmark.requireHeldout(taskId, `whose fix ${checkout.path} reverses`).upstream.patch),
    );
  return commits;
}

async function runAgent(
  benchmark: OpenedBenchmark,
  options: ScoredRunOptions,
  at: { spec: SessionSpec; mirror: string; checkoutCommits: ReadonlyMap<string, string>; runDir: string; reportFile: string },
) {
  const { spec, runDir } = at;
  const environment = options.agent.runs === "environment" ? await agentImage(benchmark, spec, at.mirror) : undefined;
  // Only the scripted test agents may read held-out assets; a command agent is never given them.
  const heldout = options.agent.scripted ? (taskId: string) => benchmark.heldout(taskId) : undefined;
  const owner = { agent: options.agent.name, report: resolve(at.reportFile) };
  checkRunDir(runDir, owner, options.force, options.log);
  await takeRunDir(runDir, owner);
  const run = await driveAgent({
    spec,
    condition: options.condition,
    agent: options.agent,
    runDir,
    mirror: at.mirror,
    checkoutCommits: at.checkoutCommits,
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
  benchmark: OpenedBenchmark,
  spec: SessionSpec,
  mirror: string,
): Promise<{ docker: Docker; image: string; labels: Record<string, string> }> {
  const { workspace } = benchmark;
  if (!(await dockerAvailable(workspace.docker)))
    throw new Error("the agent runs in the environment (runs: environment), but no Docker engine answers: start dockerd, or run the agent on the host");
  const focus = benchmark.requireHeldout(spec.focus, "whose environment the agent runs in");
  const env = environmentSpec(focus.repo, focus.environment, focus.environment_as_of);
  // Docker's whatever the verification's executor: the image is the environment the agent works in.
  await (await workspace.executor("docker")).ensureEnvironment(env, workspace.baseRevision(mirror, focus.base_commit));
  return { docker: workspace.docker, image: DockerExecutor.imageTag(env), labels: { [WORK_LABEL]: workspace.dir } };
}

/** Every session's run: which conditions, the agent, where reports and run folders go, how many at once. */
export interface RunAllOptions {
  /** The released benchmark's directory; by default the config's (emit.out_dir). */
  manifest?: string;
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
}

/**
 * Every session of an emitted benchmark in the conditions asked, `jobs` at a time. Resumable: a
 * session and condition whose report exists is not run again, and a killed run left no report (it
 * is written whole, at the end), so it runs again from scratch.
 */
export async function runAllSessions(
  benchmark: OpenedBenchmark,
  options: RunAllOptions,
): Promise<{ ran: VerificationReport[]; skipped: number; failed: { session: string; condition: Condition; error: string }[] }> {
  const layout: BenchmarkLayout = options.manifest ? benchmark.layout.releasedAt(options.manifest) : benchmark.layout;
  const work = sessionList(layout.sessionsDir)
    .filter((s) => !options.only || options.only.includes(s.sessionId))
    .flatMap((s) => options.conditions.map((condition) => ({ file: s.file, sessionId: s.sessionId, condition })));
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
      runDirOf(benchmark, options, w.sessionId, w.condition),
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
          await runAndScoreSession(benchmark, {
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
