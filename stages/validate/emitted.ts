import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { RepositoryAnswers } from "../../pipeline/answers/index.ts";
import type { OpenedBenchmark } from "../../pipeline/project/benchmark.ts";
import { ManifestEntry } from "../../pipeline/schemas/manifest.ts";
import { SessionSpec } from "../../pipeline/schemas/session.ts";
import type { ValidationReport } from "../../pipeline/schemas/validation.ts";
import { describeFirstIssue, InputError, readJsonFile } from "../../pipeline/validation.ts";
import { answerChecks, quoteCheck } from "./answers.ts";
import { validateSession } from "./validate.ts";

/**
 * Every check validate makes, run again on released session files (an auditor's, or a file edited
 * by hand): the invariants from the benchmark's own manifest, and the answer rule from the
 * repository and the held-out assets. `files` default to every session the benchmark lists.
 */
export async function checkEmittedSessions(benchmark: OpenedBenchmark, files?: string[]): Promise<{ file: string; report: ValidationReport }[]> {
  const specs = files?.length
    ? files.map((file) => ({ file, spec: readJsonFile(file, SessionSpec, "a session specification (manifests/<benchmark>/sessions/<session>.json)") }))
    : benchmark.sessions();
  const { tasks, requests } = readManifest(benchmark.layout.manifest);
  const settings = benchmark.project.settings.session;
  const repositories = new Map<string, { answers: RepositoryAnswers; mirror: string }>();
  const results: { file: string; report: ValidationReport }[] = [];
  for (const { file, spec } of specs) {
    let mirror = "";
    for (const c of spec.checkouts) mirror = await benchmark.mirrorAt(spec.repo, c.base_commit);
    const repository = repositories.get(spec.repo) ?? { answers: new RepositoryAnswers((args) => benchmark.workspace.mirrors.git(mirror, args)), mirror };
    repositories.set(spec.repo, repository);
    const heldout = new Map(spec.checkouts.map((c) => [c.task_id, benchmark.requireHeldout(c.task_id, `a task of ${basename(file)}`)]));
    const answers = await answerChecks(spec, heldout, repository, settings.answer_rule);
    const checks = [...validateSession(spec, tasks, settings.checkouts, settings.interruptions), ...answers.checks, quoteCheck(spec, heldout, requests)];
    results.push({
      file,
      report: { session_id: spec.session_id, passed: checks.every((c) => c.passed), checks, interruption_answers: answers.interruptionAnswers },
    });
  }
  return results;
}

/** The tasks of a released manifest, as validate's invariants read them. */
function readManifest(path: string) {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new InputError(
      `${path}: cannot read the benchmark's manifest (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); is the config's emit.out_dir the benchmark's?`,
    );
  }
  const tasks = new Map<string, { id: string; repo: string; sourceFiles: string[]; sourceDirs: string[]; stages: number }>();
  const requests = new Map<string, ManifestEntry["requests"]>();
  text
    .split("\n")
    .filter(Boolean)
    .forEach((line, i) => {
      const parsed = ManifestEntry.safeParse(JSON.parse(line));
      if (!parsed.success) throw new InputError(`${path}: line ${i + 1}: ${describeFirstIssue(parsed.error, JSON.parse(line))}`);
      const t = parsed.data;
      tasks.set(t.task_id, { id: t.task_id, repo: t.repo, sourceFiles: t.source_files, sourceDirs: t.source_dirs, stages: t.requests.length });
      requests.set(t.task_id, t.requests);
    });
  return { tasks, requests };
}

/** The checks of each session, one line each, failures with what failed; for a terminal. */
export function formatSessionChecks(results: { file: string; report: ValidationReport }[]): string {
  const lines: string[] = [];
  for (const { file, report } of results) {
    lines.push(`${report.passed ? "ok     " : "REFUSED"} ${report.session_id} (${file})`);
    for (const c of report.checks.filter((c) => !c.passed)) lines.push(`  ${c.check}: ${c.detail}`);
    for (const a of report.interruption_answers)
      lines.push(`  reported: ${a.checkout} (${a.checkout_task}) holds the interruption ${a.task_id}'s answer: ${a.evidence}`);
  }
  const refused = results.filter((r) => !r.report.passed).length;
  lines.push(`${results.length - refused} of ${results.length} session(s) pass every check${refused ? `; ${refused} refused` : ""}`);
  return lines.join("\n") + "\n";
}
