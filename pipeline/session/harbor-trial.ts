import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { z } from "zod";
import { sha256 } from "../canonical.ts";
import { DiffParseError } from "../changes/diff.ts";
import { HARBOR_JOB, SESSION_RECORDS, VERIFIER_OUTPUTS } from "../harbor-layout.ts";
import { type SessionBehaviour, TrajectoryRequest, USAGE_PARSERS } from "../schemas/agent.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import type { ClassificationRules } from "../schemas/repo-profile.ts";
import type { SessionSpec } from "../schemas/session.ts";
import type { VerificationReport } from "../schemas/verification.ts";
import { gradeRun, isResolved } from "../verifier/grade.ts";
import { staticFindings } from "../verifier/suspicious.ts";
import { pathsOfPatch, planSubmission, UnsafeSubmission } from "../verifier/submission.ts";
import { requiredTests } from "../verifier/verify.ts";
import { summarise } from "./trajectory.ts";
import { addUsage, type AttemptReading, NO_USAGE, readAttempt, usageSince } from "./usage.ts";

/**
 * A Harbor trial of an exported session (switch-swe export harbor), read as a run of the session
 * runner: its verdict graded again with verify's own code from what the task's verifier kept (the
 * artifact it scored, the runner's channel), and what the agent did from the session agent's
 * records, read as the runner reads a harness's output (pipeline/harbor-layout.ts names the files).
 */

/** The runner's records, as the grading takes them. */
type GuardRecords = NonNullable<Parameters<typeof gradeRun>[1]["channel"]>["records"];

const ChannelSummary = z.object({ finished: z.boolean(), foreign: z.array(z.string()), timed_out: z.boolean(), exit_code: z.number().int() });

/**
 * The trial's verdict as switch-swe grades it: the artifact the verifier scored planned again, and
 * the runner's channel graded again, with verify's own code; static findings added. Where the
 * task's verifier said otherwise, switch-swe's verdict counts and the difference is a problem.
 */
export function regradeHarborTrial(
  trialDir: string,
  report: VerificationReport,
  spec: SessionSpec,
  view: { heldout(taskId: string): HeldoutTask | undefined; rules(repo: string): ClassificationRules | undefined },
): { report: VerificationReport; problems: string[] } {
  const heldout = view.heldout(report.task_id);
  const rules = view.rules(spec.repo);
  const where = join(trialDir, HARBOR_JOB.verifier);
  if (!heldout || !rules) return { report, problems: [`${where}: cannot grade again: no held-out asset or profile of ${report.task_id}`] };
  const artifactFile = join(where, VERIFIER_OUTPUTS.artifact);
  if (!existsSync(artifactFile)) return { report: { ...report, resolved: false }, problems: [`${artifactFile}: missing; counted unresolved`] };
  const artifact = readFileSync(artifactFile, "utf8");
  const problems: string[] = [];
  if (sha256(artifact) !== report.artifact_sha256) problems.push(`${artifactFile}: its sha256 is not the verification's artifact_sha256`);
  let plan: ReturnType<typeof planSubmission> | undefined;
  try {
    plan = planSubmission(artifact, rules, pathsOfPatch(heldout.test_patch));
  } catch (error) {
    if (!(error instanceof UnsafeSubmission) && !(error instanceof DiffParseError)) throw error;
    if (report.applied) problems.push(`${where}: switch-swe refuses this artifact (${error.message}), the task's verifier applied it; counted unresolved`);
    return { report: { ...report, applied: false, resolved: false, apply_error: report.apply_error ?? `refused: ${error.message}` }, problems };
  }
  if (JSON.stringify(plan.dropped) !== JSON.stringify(report.dropped_paths))
    problems.push(`${where}: the task's verifier dropped ${JSON.stringify(report.dropped_paths)}, switch-swe drops ${JSON.stringify(plan.dropped)}`);
  const suspicious = [...staticFindings(plan.applied), ...report.suspicious.filter((s) => s.rule === "runtime")];
  if (!report.applied) return { report: { ...report, dropped_paths: plan.dropped, suspicious, resolved: false }, problems };
  const summaryFile = join(where, VERIFIER_OUTPUTS.channelSummary);
  if (!existsSync(summaryFile)) return { report: { ...report, resolved: false }, problems: [...problems, `${summaryFile}: missing; counted unresolved`] };
  const summary = ChannelSummary.parse(JSON.parse(readFileSync(summaryFile, "utf8")));
  const records = readFileSync(join(where, VERIFIER_OUTPUTS.channel), "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as GuardRecords[number]);
  const graded = gradeRun(requiredTests(heldout), {
    channel: { records, finished: summary.finished, foreign: summary.foreign },
    timedOut: summary.timed_out,
    exitCode: summary.exit_code,
  });
  const resolved = isResolved(true, graded);
  if (resolved !== report.resolved || JSON.stringify(graded.tests) !== JSON.stringify(report.tests))
    problems.push(
      `${where}: the task's verifier says ${report.resolved ? "resolved" : "not resolved"}, switch-swe's grading ${resolved ? "resolved" : "not resolved"}; switch-swe's counts`,
    );
  return {
    report: {
      ...report,
      dropped_paths: plan.dropped,
      tests: graded.tests,
      integrity_problems: graded.integrityProblems,
      timed_out: graded.timedOut,
      resolved,
      suspicious,
    },
    problems,
  };
}

/** A request as the session agent records it: the trajectory's own fields, before usage and failure are read from its attempts. */
const RawRequest = TrajectoryRequest.pick({
  request: true,
  checkout: true,
  started_at: true,
  ended_at: true,
  seconds: true,
  budget_seconds: true,
  continuations: true,
  timed_out: true,
  exits: true,
  changes: true,
  focus_first_change_seconds: true,
}).extend({ attempts: z.array(z.string().regex(/^[\w.-]+$/)) });
const SessionSummary = z.object({
  harness: z.string(),
  usage_reader: z.enum(USAGE_PARSERS).nullable().optional(),
  conversation: z.string().nullable(),
  work_lost_files: z.number().int().nonnegative(),
  runner_seconds: z.number().nonnegative(),
});

/** One request's usage and failure from its attempts' output, as the session runner reads them (delivery.ts). */
function readRequest(
  records: string,
  raw: z.infer<typeof RawRequest>,
  reader: (typeof USAGE_PARSERS)[number] | undefined,
  state: { total?: AttemptReading["usage"] },
) {
  let usage: TrajectoryRequest["usage"] = null;
  let failure: TrajectoryRequest["failure"];
  raw.attempts.forEach((name, i) => {
    const log = join(records, name);
    const reading = reader ? readAttempt(reader, existsSync(log) ? readFileSync(log, "utf8") : "") : undefined;
    if (reading?.usage) {
      const own = reading.cumulative ? usageSince(reading.usage, state.total ?? undefined) : reading.usage;
      if (reading.cumulative) state.total = reading.usage;
      usage = addUsage(usage ?? NO_USAGE, own);
    }
    const exit = raw.exits[i];
    failure =
      reading?.failure ??
      (exit !== null && exit !== undefined && exit !== 0 ? { kind: "exit", detail: `exited with ${exit} (its output: ${log})` } : undefined);
  });
  return { usage, failure };
}

/** What the agent did during the trial, from the session agent's records (none for Harbor's own agents). */
export function harborTrialBehaviour(
  trialDir: string,
  reportFile: string,
  spec: SessionSpec,
  condition: "control" | "switched",
): { behaviour?: SessionBehaviour; problems: string[] } {
  const records = join(trialDir, SESSION_RECORDS.dir);
  const summaryFile = join(records, SESSION_RECORDS.summary);
  if (!existsSync(summaryFile)) return { problems: [] };
  const summary = SessionSummary.parse(JSON.parse(readFileSync(summaryFile, "utf8")));
  const reader = summary.usage_reader ?? undefined;
  const trajectoryFile = join(records, SESSION_RECORDS.trajectory);
  const schedule = spec.conditions[condition];
  const state: { total?: AttemptReading["usage"] } = {};
  const lines: TrajectoryRequest[] = [];
  for (const text of readFileSync(trajectoryFile, "utf8")
    .split("\n")
    .filter((l) => l.trim())) {
    const raw = RawRequest.parse(JSON.parse(text));
    const scheduled = schedule[raw.request];
    if (!scheduled) return { problems: [`${trajectoryFile}: request ${raw.request} is not in ${spec.session_id}'s ${condition} schedule`] };
    const { usage, failure } = readRequest(records, raw, reader, state);
    const { attempts: _attempts, ...facts } = raw;
    lines.push(
      TrajectoryRequest.parse({
        ...facts,
        task_id: scheduled.task_id,
        focus: scheduled.task_id === spec.focus,
        ...(scheduled.stage !== undefined ? { stage: scheduled.stage } : {}),
        finalization: scheduled.finalization,
        ...(reader ? { usage } : {}),
        ...(failure ? { failure } : {}),
      }),
    );
  }
  // The session agent makes no retries of a provider's fault: the first one is the run's, as run-all's would be once out of retries.
  const fault = lines.find((l) => l.failure?.kind === "infrastructure");
  const behaviour = summarise(
    { name: summary.harness, usage: reader, runs: "environment" },
    lines,
    summary.work_lost_files,
    summary.runner_seconds,
    relative(dirname(reportFile), trajectoryFile),
    fault ? `request ${fault.request}: ${fault.failure!.detail}` : undefined,
  );
  const problems =
    lines.length < schedule.length && !fault
      ? [`${trajectoryFile}: ${lines.length} of ${schedule.length} requests delivered (the agent phase ended early)`]
      : [];
  return { behaviour: { ...behaviour, ...(summary.conversation ? { conversation: summary.conversation } : {}) }, problems };
}
