import { readFileSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { parse, stringify } from "yaml";
import { decodeStrict } from "../../pipeline/decode.ts";
import { parseGitDiff } from "../../pipeline/changes/diff.ts";
import { type AnyStage, RecordError } from "../../pipeline/engine/stage.ts";
import type { Logger } from "../../pipeline/logger.ts";
import type { Project } from "../../pipeline/project/project.ts";
import { readSplitArtifacts } from "../../pipeline/project/split-artifacts.ts";
import type { Candidate } from "../../pipeline/schemas/candidate.ts";
import type { LoadedProfile } from "../../pipeline/profiles/load.ts";
import type { SplitChange } from "../../pipeline/schemas/split.ts";
import { InputError } from "../../pipeline/validation.ts";
import { auditStage } from "../../stages/audit/index.ts";
import { inPipeline, qualifyPlanned } from "../../stages/qualify/by-hand.ts";
import { withAuthoredStages } from "../../stages/reconstruct/authored.ts";
import { extendedSplit, splitReferenceChange } from "../../stages/split/index.ts";
import { unfilledFields } from "../../stages/split/skeleton.ts";
import { authoredHardFindings } from "./authored-findings.ts";
import { type Problem, type Qualified, qualifiedProblems } from "./qualified.ts";
import { extensionsDir, minedTask, openForAuthoring, profileOf, taskMirror, upstreamRequests } from "./task.ts";

export type { Problem } from "./qualified.ts";

export interface ExtendCheckOptions {
  stages: AnyStage[];
  config: string;
  file: string;
  /** Runs of each state (qualify's `runs`; one is quick, the config's is what qualify will do). */
  runs: number;
  executor?: "auto" | "docker" | "local";
  mirrors?: string;
  log: Logger;
}

/** One stage's answer: how far it was checked and what does not hold. */
export interface StageAnswer {
  /** Its place in the file: `stages.0`, `upstream_commits.stages.1`. */
  field: string;
  /** `all`: every check ran; `file`: the file's checks and composition only (qualify could not run); `none`: a stage before it does not hold. */
  checked: "all" | "file" | "none";
  /** Its tests as collected (as declared where no run collected them). */
  tests: string[];
  problems: Problem[];
  /** What holds but a reviewer should know (a source file outside the task's C_t). */
  notes: string[];
  /** Why it was not checked, when it was not: the stage before it that does not hold. */
  unchecked?: string;
}

export interface ExtendCheckReport {
  file: string;
  task: string;
  runs: number;
  executor?: string;
  /** What does not hold of the file or the task as a whole: a field outside any stage, an environment that does not build, the upstream fix's own tests. */
  problems: Problem[];
  stages: StageAnswer[];
  notes: string[];
  holds: boolean;
}

/** What the check knows of the task while it works. */
interface Checking {
  project: Project;
  options: ExtendCheckOptions;
  candidate: Candidate;
  loaded: LoadedProfile;
  mirror: string;
  report: ExtendCheckReport;
}

/**
 * `extend check`: one extension file, stage by stage, from the pipeline's cached environments,
 * with the pipeline's own code at each step: split's schema, classes and composition of the
 * stages over the reference (each stage over those before it); qualify's states and stage
 * verdicts (each stage's tests fail before its implementation and pass with it, every earlier
 * stage's tests and the upstream fix's keep passing); reconstruct's placement; and the audit's
 * hard findings on authored stages (a name, message, exception type or literal value a test
 * checks that no request states). A stage that does not hold stops the stages after it (they
 * apply over it); the stages before it are still run. Nothing of the pipeline's artifacts or
 * caches is written: the check works beside a run, in its own scratch space.
 */
export async function checkExtensionFile(options: ExtendCheckOptions): Promise<ExtendCheckReport> {
  const { file } = options;
  if (!file.endsWith(".yaml")) throw new InputError(`${file}: an extension file is named <task id>.yaml, after the task it extends`);
  const task = basename(file, ".yaml");
  const { text, invalid } = decodeStrict(readFileSync(file));
  const project = openForAuthoring(options);
  try {
    const candidate = await minedTask(project, task, file);
    const loaded = profileOf(project, candidate);
    const report: ExtendCheckReport = { file, task, runs: options.runs, problems: [], stages: [], notes: [], holds: false };
    const dir = extensionsDir(project);
    if (resolve(dirname(file)) !== dir) report.notes.push(`${file} is not in the config's extensions_dir (${dir}): split reads it only from there`);
    report.stages = stageFields(text).map((field) => ({ field, checked: "none", tests: [], problems: [], notes: [] }));
    const unfilled = unfilledFields(file, text);
    if (unfilled.length) return finished(report, unfilled);
    const mirror = await taskMirror(project, candidate);
    await checkStages({ project, options, candidate, loaded, mirror, report }, { path: file, text, invalid });
    return finished(report, []);
  } finally {
    await project.close();
  }
}

/** The report with `problems` placed on their stages (or the file), and whether everything holds. */
function finished(report: ExtendCheckReport, problems: (Problem & { field?: string })[]): ExtendCheckReport {
  for (const { field, ...problem } of problems) answerFor(report, field)?.problems.push(problem) ?? report.problems.push(problem);
  report.holds = !report.problems.length && report.stages.length > 0 && report.stages.every((s) => s.checked === "all" && !s.problems.length);
  return report;
}

/** The stage a field belongs to (`stages.1.tests` → stages.1), added to the report if the file's reading missed it. */
function answerFor(report: ExtendCheckReport, field: string | undefined): StageAnswer | undefined {
  const stage = field?.match(/^((?:upstream_commits\.)?stages\.\d+)(?:\.|$)/)?.[1];
  if (!stage) return undefined;
  let answer = report.stages.find((s) => s.field === stage);
  if (!answer) report.stages.push((answer = { field: stage, checked: "none", tests: [], problems: [], notes: [] }));
  return answer;
}

/** The file's stages as it lists them, in the order they apply: the pull request's commits first, then the written ones. */
function stageFields(text: string): string[] {
  let raw: unknown;
  try {
    raw = parse(text);
  } catch {
    return [];
  }
  const list = (value: unknown) => (Array.isArray(value) ? value : []);
  const file = (raw ?? {}) as { upstream_commits?: { stages?: unknown }; stages?: unknown };
  return [...list(file.upstream_commits?.stages).map((_, i) => `upstream_commits.stages.${i}`), ...list(file.stages).map((_, i) => `stages.${i}`)];
}

/** Composes the stages (as split does), then runs those that compose (as qualify does) and audits them. */
async function checkStages(checking: Checking, file: { path: string; text: string; invalid: unknown[] }): Promise<void> {
  const { candidate, loaded, report } = checking;
  const rules = loaded.profile.classification;
  const upstream = splitReferenceChange(candidate.reference_diff, rules);
  if (!upstream.sourceFiles.length || !upstream.testPatch) {
    report.problems.push({
      cause: upstream.sourceFiles.length ? "no_test_changes" : "no_source_changes",
      message: `${candidate.id}: split rejects the task before its extensions: its reference change ${upstream.sourceFiles.length ? "has no test file" : "modifies no source file"}`,
    });
    return;
  }
  const { split, failed } = await composed(checking, upstream, file);
  if (failed) finished(report, [failed]);
  const failedAt = report.stages.findIndex((s) => s.problems.length);
  report.stages.forEach((s, i) => {
    if (split?.extensions?.some((e) => e.field === s.field)) s.checked = "file";
    if (failedAt >= 0 && i === failedAt) s.checked = "file";
    if (failedAt >= 0 && i > failedAt) s.unchecked = `it applies over ${report.stages[failedAt]!.field}, which does not hold`;
  });
  if (!split?.extensions?.length) return;
  for (const stage of split.extensions) answerFor(report, stage.field)!.notes.push(...outsideSources(stage.implementation_patch, upstream.sourceFiles));
  const qualified = await qualifyComposed(checking, split);
  for (const { field, tests } of stageTestsOf(split, qualified)) answerFor(report, field)!.tests = tests;
  finished(report, qualified.problems);
  await auditComposed(checking, split, qualified);
}

/**
 * The task's split with the file's stages, as split makes it; where a stage does not hold (its
 * schema, classes, tests, or its patch over those before it), the split of the stages before it,
 * so that they are still run, and that stage's problem.
 */
async function composed(
  { project, candidate, loaded, mirror }: Checking,
  upstream: ReturnType<typeof splitReferenceChange>,
  file: { path: string; text: string; invalid: unknown[] },
): Promise<{ split?: SplitChange; failed?: Problem & { field?: string } }> {
  const mirrors = project.workspace.mirrors;
  const attempt = (text: string) =>
    extendedSplit(
      candidate,
      upstream,
      {
        file: { path: file.path, text, invalid: file.invalid },
        rules: loaded.profile.classification,
        compose: (patches) => mirrors.compose(mirror, candidate.base_commit, patches),
        git: (args) => mirrors.git(mirror, args),
      },
      { profile: loaded.file, profile_sha256: loaded.sha256 },
    );
  const failure = (error: unknown) => {
    if (!(error instanceof RecordError)) throw error;
    return { cause: error.reason, message: error.message, ...(error.where.field ? { field: error.where.field } : {}) };
  };
  let failed: Problem & { field?: string };
  try {
    return { split: await attempt(file.text) };
  } catch (error) {
    failed = failure(error);
  }
  const before = stagesBefore(file.text, failed.field);
  if (!before) return { failed };
  try {
    return { split: await attempt(before), failed };
  } catch (error) {
    // The stages before it hold on their own, as split checked them in order; said if not.
    return { failed: { ...failure(error), message: `${failure(error).message} (with the stages before ${failed.field} alone)` } };
  }
}

/** The file's text with only the stages before `field`'s, or undefined when none comes before it. */
function stagesBefore(text: string, field: string | undefined): string | undefined {
  const at = field?.match(/^(upstream_commits\.)?stages\.(\d+)/);
  if (!at) return undefined;
  const raw = parse(text) as { upstream_commits?: { stages: unknown[] }; stages?: unknown[] };
  const index = Number(at[2]);
  if (at[1]) {
    if (index === 0) return undefined;
    raw.upstream_commits!.stages = raw.upstream_commits!.stages.slice(0, index);
    raw.stages = [];
  } else {
    if (index === 0 && !raw.upstream_commits) return undefined;
    raw.stages = (raw.stages ?? []).slice(0, index);
  }
  return stringify(raw);
}

/** Source files a stage's implementation changes beyond the upstream fix's (the task's C_t grows, and its locality changes). */
function outsideSources(implementation: string, sourceFiles: string[]): string[] {
  const outside = parseGitDiff(implementation)
    .map((d) => d.path)
    .filter((p) => !sourceFiles.includes(p));
  return outside.length
    ? [
        `changes ${outside.join(", ")}, outside the source files the upstream fix changes (C_t): the task's locality changes; do so only when its request needs it`,
      ]
    : [];
}

/** Qualify's states over the composed split, in the pipeline's cached environment, and what they show stage by stage. */
async function qualifyComposed({ project, options, report }: Checking, split: SplitChange): Promise<Qualified> {
  const artifacts = await readSplitArtifacts(project);
  const planned = inPipeline(project, split, artifacts);
  try {
    const { executor, result } = await qualifyPlanned(project, planned, { runs: options.runs, fullSuite: false, logGroup: "extend-check", log: options.log });
    report.executor = executor;
    for (const stage of split.extensions!) answerFor(report, stage.field)!.checked = "all";
    return qualifiedProblems(split, result);
  } catch (error) {
    // The task could not be run at all (its environment does not build, a run failed): the stages stay checked as far as the file goes.
    if (!(error instanceof RecordError)) throw error;
    return { problems: [{ cause: error.reason, message: error.message }], stageTests: [], failToPass: [] };
  }
}

/** Each stage's tests as qualify's runs collected them, else as its file declares them (none collected: the audit reads what the file names). */
function stageTestsOf(split: SplitChange, qualified: Qualified): { stage: number; field: string; tests: string[] }[] {
  return split.extensions!.map((e) => {
    const collected = qualified.stageTests.find((s) => s.stage === e.index)?.tests ?? [];
    return { stage: e.index, field: e.field, tests: collected.length ? collected : e.tests };
  });
}

/** The audit's hard findings on the composed stages, each on its stage; reconstruct's placement first. */
async function auditComposed({ project, candidate, mirror, report }: Checking, split: SplitChange, qualified: Qualified): Promise<void> {
  const extensions = split.extensions!;
  const stageTests = stageTestsOf(split, qualified);
  const { requests: upstream } = await upstreamRequests(project, candidate);
  let requests;
  try {
    requests = withAuthoredStages(candidate.id, upstream, extensions, stageTests);
  } catch (error) {
    if (!(error instanceof RecordError)) throw error;
    finished(report, [{ cause: error.reason, message: error.message, ...(error.where.field ? { field: error.where.field } : {}) }]);
    return;
  }
  const flags = await authoredHardFindings({
    id: candidate.id,
    requests,
    testPatch: split.test_patch,
    failToPass: [...new Set([...qualified.failToPass, ...stageTests.flatMap((s) => s.tests)])].sort(),
    referencePatch: split.implementation_patch,
    mirror,
    baseCommit: candidate.base_commit,
    rules: project.stageConfig(auditStage).rules,
  });
  const fieldOfTest = new Map(stageTests.flatMap((s) => s.tests.map((t): [string, string] => [t, extensions[s.stage - 1]!.field])));
  const fieldOfRequest = new Map(
    requests.flatMap((r): [string, string][] => {
      const source = r.provenance.sources[0]!;
      const stage = extensions.find((e) => source.record_id === (e.commit ?? `extension:${e.file}#${e.index}`));
      return stage && r.tests ? [[`stage ${r.stage}`, stage.field]] : [];
    }),
  );
  finished(
    report,
    flags.map((f) => {
      const [field, part] = fieldOfTest.has(f.subject) ? [fieldOfTest.get(f.subject), "tests"] : [fieldOfRequest.get(f.subject), "request"];
      const shown = f.evidence.map((e) => ` (${e.file}:${e.line}: ${e.text})`).join("");
      return {
        cause: f.flag,
        message: `${report.file}: field ${field ?? "(task)"}.${part}: ${f.flag}: ${f.subject}: ${f.detail}${shown}`,
        ...(field ? { field } : {}),
      };
    }),
  );
}

/** The answer for a terminal: each stage, what does not hold of it (or that it holds), then the file's and the task's. */
export function formatExtendCheck(report: ExtendCheckReport): string {
  const lines = [
    `${report.file}: task ${report.task}, ${report.stages.length} stage(s), ${report.runs} run(s) of each state${report.executor ? ` (${report.executor} executor)` : ""}`,
  ];
  const width = Math.max(0, ...report.stages.map((s) => s.field.length));
  for (const stage of report.stages) {
    const state = stage.problems.length
      ? "does not hold"
      : stage.checked === "all"
        ? `holds  (tests: ${stage.tests.join(", ")})`
        : stage.checked === "file"
          ? "applies, but was not run"
          : `not checked${stage.unchecked ? `: ${stage.unchecked}` : ""}`;
    lines.push(`  ${stage.field.padEnd(width)}  ${state}`);
    for (const problem of stage.problems) lines.push(said(problem));
    for (const note of stage.notes) lines.push(`      note: ${note}`);
  }
  if (report.problems.length) lines.push("  the file and the task:");
  for (const problem of report.problems) lines.push(said(problem));
  for (const note of report.notes) lines.push(`  note: ${note}`);
  const holding = report.stages.filter((s) => s.checked === "all" && !s.problems.length).length;
  lines.push(
    report.holds ? `every stage holds (${holding} of ${report.stages.length})` : `${holding} of ${report.stages.length} stage(s) hold; the file does not`,
  );
  return lines.join("\n") + "\n";
}

/** A problem under its stage: its cause, then its message, git's lines and all, indented. */
const said = (problem: Problem) => `      ${problem.cause}: ${problem.message.trimEnd().replace(/\n/g, "\n        ")}`;
