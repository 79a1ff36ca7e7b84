import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { HARBOR_JOB, VERIFIER_OUTPUTS } from "../harbor-layout.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import type { ClassificationRules } from "../schemas/repo-profile.ts";
import { SessionSpec } from "../schemas/session.ts";
import { VerificationReport } from "../schemas/verification.ts";
import { harborTrialBehaviour, regradeHarborTrial } from "../session/harbor-trial.ts";
import { describeFirstIssue, InputError } from "../validation.ts";
import type { LoadedReport } from "./aggregate.ts";
import { readListedSessions } from "../session/listed-sessions.ts";

/*
 * A Harbor job's trials as verification reports (`switch-swe report --harbor JOB`): a job directory
 * holds config.json and one directory per trial, each with its result.json and verifier/ (what the
 * task's verifier wrote: switch-swe's verification, the artifact it scored and the runner's
 * channel), and the session agent's records in switch-swe/ (pipeline/harbor-layout.ts names them).
 */

/** What report needs of the benchmark to grade a trial again with switch-swe's own code (the command opens the benchmark). */
export interface HeldoutView {
  heldout(taskId: string): HeldoutTask | undefined;
  rules(repo: string): ClassificationRules | undefined;
}

interface BenchmarkView extends HeldoutView {
  session(id: string): SessionSpec | undefined;
}

/** The benchmark's sessions by id, from its own list. */
function sessionsById(sessionsDir: string): Map<string, SessionSpec> {
  return new Map(readListedSessions(sessionsDir).map(({ spec }) => [spec.session_id, spec]));
}

const isDir = (path: string) => existsSync(path) && statSync(path).isDirectory();
const isJob = (dir: string) => existsSync(join(dir, HARBOR_JOB.config)) && readdirSync(dir).some((n) => existsSync(join(dir, n, HARBOR_JOB.result)));

/** The jobs under `dir`: the directory itself when it is one, else each subdirectory that is one. Each job is one configuration, named after it. */
export function harborJobs(dir: string): string[] {
  if (!isDir(dir)) throw new InputError(`${dir}: no such directory of Harbor jobs`);
  if (isJob(dir)) return [dir];
  return readdirSync(dir)
    .sort()
    .map((n) => join(dir, n))
    .filter((d) => isDir(d) && isJob(d));
}

/** Every trial of the jobs under `dir` as a verification report, re-graded; what could not be read or does not agree, as problems. */
export function loadHarborReports(dir: string, sessionsDir: string, heldout: HeldoutView): { reports: LoadedReport[]; problems: string[] } {
  const sessions = sessionsById(sessionsDir);
  const view: BenchmarkView = { ...heldout, session: (id) => sessions.get(id) };
  const reports: LoadedReport[] = [];
  const problems: string[] = [];
  const jobs = harborJobs(dir);
  if (!jobs.length) problems.push(`${dir}: no Harbor job (a directory with config.json and trial directories holding result.json)`);
  for (const job of jobs)
    for (const trial of readdirSync(job).sort()) {
      const trialDir = join(job, trial);
      if (!existsSync(join(trialDir, HARBOR_JOB.result))) continue;
      const loaded = loadTrial(trialDir, basename(job), view);
      problems.push(...loaded.problems);
      if (loaded.report) reports.push(loaded.report);
    }
  return { reports, problems };
}

/** Why Harbor's trial has no verification: the exception it recorded, if any. */
function harborFailure(trialDir: string): string {
  try {
    const result = JSON.parse(readFileSync(join(trialDir, HARBOR_JOB.result), "utf8")) as {
      exception_info?: { exception_type?: string; exception_message?: string };
    };
    const e = result.exception_info;
    return e
      ? `Harbor recorded ${e.exception_type ?? "an exception"}: ${(e.exception_message ?? "").split("\n")[0]!.slice(0, 300)}`
      : "Harbor recorded no exception";
  } catch (error) {
    return `its result.json cannot be read (${(error as Error).message})`;
  }
}

function loadTrial(trialDir: string, configuration: string, view: BenchmarkView): { report?: LoadedReport; problems: string[] } {
  const file = join(trialDir, HARBOR_JOB.verifier, VERIFIER_OUTPUTS.verification);
  if (!existsSync(file)) return { problems: [`${trialDir}: no verification (${harborFailure(trialDir)}); not counted, so its session counts as unresolved`] };
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    return { problems: [`${file}: not JSON (${(error as Error).message}); not counted`] };
  }
  const parsed = VerificationReport.safeParse(value);
  if (!parsed.success) return { problems: [`${file}: ${describeFirstIssue(parsed.error, value)}; not a verification report, not counted`] };
  const spec = view.session(parsed.data.session_id);
  if (!spec) return { report: { file, configuration, report: parsed.data }, problems: [] };
  const graded = regradeHarborTrial(trialDir, parsed.data, spec, view);
  const behaviour = harborTrialBehaviour(trialDir, file, spec, parsed.data.condition);
  return {
    report: { file, configuration, report: VerificationReport.parse({ ...graded.report, ...(behaviour.behaviour ? { behaviour: behaviour.behaviour } : {}) }) },
    problems: [...graded.problems, ...behaviour.problems],
  };
}
