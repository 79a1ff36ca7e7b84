import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sha256 } from "../canonical.ts";
import { DiffParseError } from "../changes/diff.ts";
import type { LoadedReport } from "../report/aggregate.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import type { ClassificationRules } from "../schemas/repo-profile.ts";
import type { SessionSpec } from "../schemas/session.ts";
import { VerificationReport } from "../schemas/verification.ts";
import type { Condition } from "../schemas/session.ts";
import { describeFirstIssue } from "../validation.ts";
import { gradeRun, isResolved } from "../verifier/grade.ts";
import { staticFindings } from "../verifier/suspicious.ts";
import { pathsOfPatch, planSubmission, UnsafeSubmission } from "../verifier/submission.ts";
import { requiredTests } from "../verifier/verify.ts";
import { HARBOR_JOB, VERIFIER_OUTPUTS } from "./layout.ts";
import { stepName } from "./steps.ts";
import { withRelayLog } from "./relay-log.ts";
import { harborTrialBehaviour } from "./trial-steps.ts";
import { HarborTrialResult } from "./trial-result.ts";
import { VerifierRunRecord } from "./verifier-program.ts";

/**
 * A Harbor trial of an exported session (switch-swe export harbor), read as a run of the session
 * runner: its verdict graded again with switch-swe's own code from what the last step's verifier
 * kept (the artifact it scored, the guarded run's channel) and set against Harbor's own reward,
 * and what the agent did from every step (trial-steps.ts).
 */

/** What report needs of the benchmark: its sessions by exported task, the held-out assets and the rules to grade again. */
export interface BenchmarkView {
  task(taskName: string): { spec: SessionSpec; condition: Condition } | undefined;
  heldout(taskId: string): HeldoutTask | undefined;
  rules(repo: string): ClassificationRules | undefined;
}

type GuardRecords = NonNullable<Parameters<typeof gradeRun>[1]["channel"]>["records"];

/** The verdict as switch-swe grades it from what the verifier kept; where the verification said otherwise, switch-swe's counts and the difference is a problem. */
export function regradeHarborTrial(
  where: string,
  report: VerificationReport,
  heldout: HeldoutTask,
  rules: ClassificationRules,
): { report: VerificationReport; problems: string[] } {
  const artifactFile = join(where, VERIFIER_OUTPUTS.artifact);
  if (!existsSync(artifactFile)) return { report: { ...report, resolved: false }, problems: [`${artifactFile}: missing; counted unresolved`] };
  const artifact = readFileSync(artifactFile, "utf8");
  const problems: string[] = [];
  if (sha256(artifact) !== report.artifact_sha256) problems.push(`${artifactFile}: its sha256 is not the verification's artifact_sha256`);
  let plan: ReturnType<typeof planSubmission>;
  try {
    plan = planSubmission(artifact, rules, pathsOfPatch(heldout.test_patch));
  } catch (error) {
    if (!(error instanceof UnsafeSubmission) && !(error instanceof DiffParseError)) throw error;
    if (report.applied) problems.push(`${where}: switch-swe refuses this artifact (${error.message}), the verification applied it; counted unresolved`);
    return { report: { ...report, applied: false, resolved: false, apply_error: report.apply_error ?? `refused: ${error.message}` }, problems };
  }
  if (JSON.stringify(plan.dropped) !== JSON.stringify(report.dropped_paths))
    problems.push(`${where}: the verification dropped ${JSON.stringify(report.dropped_paths)}, switch-swe drops ${JSON.stringify(plan.dropped)}`);
  const suspicious = [...staticFindings(plan.applied), ...report.suspicious.filter((s) => s.rule === "runtime")];
  if (!report.applied) return { report: { ...report, dropped_paths: plan.dropped, suspicious, resolved: false }, problems };
  const runFile = join(where, VERIFIER_OUTPUTS.run);
  if (!existsSync(runFile)) return { report: { ...report, resolved: false }, problems: [...problems, `${runFile}: missing; counted unresolved`] };
  const run = VerifierRunRecord.parse(JSON.parse(readFileSync(runFile, "utf8")));
  const graded = gradeRun(requiredTests(heldout), {
    channel: run.channel ? { ...run.channel, records: run.channel.records as unknown as GuardRecords } : undefined,
    timedOut: run.timed_out,
    exitCode: run.exit_code,
  });
  const resolved = isResolved(true, graded);
  if (resolved !== report.resolved || JSON.stringify(graded.tests) !== JSON.stringify(report.tests))
    problems.push(
      `${where}: the verification says ${report.resolved ? "resolved" : "not resolved"}, switch-swe's grading ${resolved ? "resolved" : "not resolved"}; switch-swe's counts`,
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

function readResult(trialDir: string): { result?: HarborTrialResult; problem?: string } {
  const file = join(trialDir, HARBOR_JOB.result);
  try {
    const value: unknown = JSON.parse(readFileSync(file, "utf8"));
    const parsed = HarborTrialResult.safeParse(value);
    return parsed.success ? { result: parsed.data } : { problem: `${file}: ${describeFirstIssue(parsed.error, value)}; not Harbor's trial result` };
  } catch (error) {
    return { problem: `${file}: cannot be read (${(error as Error).message})` };
  }
}

const harborFailure = (result: HarborTrialResult) => {
  const e = result.exception_info ?? [...(result.step_results ?? [])].reverse().find((s) => s.exception_info)?.exception_info;
  return e ? `Harbor recorded ${e.exception_type}: ${(e.exception_message ?? "").split("\n")[0]!.slice(0, 300)}` : "Harbor recorded no exception";
};

/** One trial as a verification report of `configuration` (the job's name), graded again; what does not agree or cannot be read, as problems. */
export function loadHarborTrial(trialDir: string, configuration: string, view: BenchmarkView): { report?: LoadedReport; problems: string[] } {
  const { result, problem } = readResult(trialDir);
  if (!result) return { problems: [problem!] };
  const task = view.task(result.task_name);
  if (!task) return { problems: [`${trialDir}: task ${result.task_name} is not an exported task of this benchmark's sessions; not counted`] };
  const { spec, condition } = task;
  const schedule = spec.conditions[condition];
  const names = schedule.map((r, i) => stepName(i, schedule.length, r));
  const steps = result.step_results ?? [];
  if (steps.some((s, i) => s.step_name !== names[i]))
    return {
      problems: [`${trialDir}: its steps (${steps.map((s) => s.step_name).join(", ")}) are not ${spec.session_id}'s ${condition} schedule; not counted`],
    };
  const where = join(trialDir, HARBOR_JOB.steps, names.at(-1)!, HARBOR_JOB.verifier);
  const file = join(where, VERIFIER_OUTPUTS.verification);
  if (!existsSync(file)) return { problems: [`${trialDir}: no verification (${harborFailure(result)}); not counted, so its session counts as unresolved`] };
  const value: unknown = JSON.parse(readFileSync(file, "utf8"));
  const parsed = VerificationReport.safeParse(value);
  if (!parsed.success) return { problems: [`${file}: ${describeFirstIssue(parsed.error, value)}; not a verification report, not counted`] };
  const heldout = view.heldout(spec.focus);
  const rules = view.rules(spec.repo);
  if (!heldout || !rules) return { problems: [`${where}: cannot grade again: no held-out asset or profile of ${spec.focus}; not counted`] };
  const problems: string[] = [];
  if (parsed.data.session_id !== spec.session_id || parsed.data.condition !== condition || parsed.data.task_id !== spec.focus)
    problems.push(`${file}: a verification of ${parsed.data.session_id} (${parsed.data.condition}), in a trial of ${spec.session_id} (${condition})`);
  const graded = regradeHarborTrial(where, parsed.data, heldout, rules);
  const reward = result.verifier_result?.rewards?.reward;
  if (reward !== (graded.report.resolved ? 1 : 0))
    problems.push(
      `${trialDir}: Harbor's reward is ${reward ?? "missing"}, switch-swe's grading says ${graded.report.resolved ? "resolved (1)" : "not resolved (0)"}; switch-swe's counts`,
    );
  const read = harborTrialBehaviour(trialDir, spec, condition, steps, result.agent_info?.name ?? configuration);
  const relayed = withRelayLog(trialDir, read.behaviour);
  const behaviour = { behaviour: relayed.behaviour, problems: [...read.problems, ...relayed.problems] };
  const report = VerificationReport.parse({ ...graded.report, ...(behaviour.behaviour ? { behaviour: behaviour.behaviour } : {}) });
  return { report: { file, configuration, report }, problems: [...problems, ...graded.problems, ...behaviour.problems] };
}
