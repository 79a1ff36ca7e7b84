import { DiffParseError } from "../../../pipeline/changes/diff.ts";
import { localCopyNames, localCopyOf, MirrorCache } from "../../../pipeline/git.ts";
import { WorkLayout } from "../../../pipeline/work-layout.ts";
import type { AuditRecord, RiskModel } from "../../../pipeline/schemas/audit.ts";
import type { Candidate } from "../../../pipeline/schemas/candidate.ts";
import type { Logger } from "../../../pipeline/logger.ts";
import type { TaskDecisions } from "../decisions.ts";
import { type GateSetup, type InForce, rulesInForce } from "../gate.ts";
import type { CallJudge } from "../judge/client.ts";
import { judgeCost, type JudgeCost, type JudgeUsage } from "../judge/judge.ts";
import { adapterFor, openJudge } from "../judge/step.ts";
import { loadProvenance } from "../rules/provenance.ts";
import { rulesInUse, type RuleSettings } from "../rules/registry.ts";
import type { AuditedTask } from "../report.ts";
import { PatchOnlyTree, type SourceTree, sourcesAt } from "../readers/source-tree.ts";
import { auditTask } from "../task.ts";
import type { Annotation } from "../annotations.ts";
import { type Measured, measure } from "./measure.ts";

export interface SwebenchAuditOptions {
  /** The SWE-bench-family file's records, as mine's import reads them (`importSwebench`). */
  candidates: Candidate[];
  /** A folder of OWNER__NAME.bundle files, OWNER__NAME.git bare repositories or OWNER__NAME clones. */
  mirrors?: string;
  /** Clone a repository no mirror holds from https://github.com/OWNER/NAME (needs the internet). */
  clone?: boolean;
  /** Where the audit's own mirrors go (cloned from the mirrors or GitHub, kept between runs). */
  workDir: string;
  /** Audit only these instance ids. */
  only?: string[];
  annotations?: Map<string, Annotation>;
  /** Rules turned off, weighed at another severity, or put in force on a measurement. */
  rules?: RuleSettings;
  /** Each record's decisions (an auditor's, imported ones); none by default. */
  decisions?: (id: string) => TaskDecisions;
  /** Where an auditor records a decision, for the gate's messages. */
  decisionsFile?: string;
  /** The risk model severities derive from; none: each task's severity is its rules' own. */
  riskModel?: RiskModel;
  /** A model judge's adapter (a file, or a name under data/audit/judges/), and its passes. */
  judge?: string;
  judgePasses?: number;
  /** How the judge is called (the adapter's SDK unless a caller is given). */
  callJudge?: CallJudge;
  log: Logger;
}

export interface SwebenchAudit {
  records: AuditRecord[];
  tasks: Map<string, AuditedTask>;
  /** Agreement with the annotations, when they were given: in the sample, cross-validated, and per rule. */
  measured?: Measured;
  /** What the judge's calls of this run took, and the records it failed on. */
  judgeUsage?: JudgeUsage;
  judgeFailures?: string[];
  /** What the verdicts in the records cost when they were asked (the same whether this run asked or read them from the cache). */
  judgeCost?: JudgeCost;
  /** Records that could not be audited (a patch that is not a diff), each with why. */
  unaudited: string[];
  /** The rules the given settings put in force. */
  inForce: InForce[];
}

/** Where a repository's history comes from for the audit: a mirror in the folder, GitHub, or nowhere (and why). */
function sourceFor(repo: string, options: SwebenchAuditOptions): { source: string } | { unavailable: string } {
  const local = options.mirrors ? localCopyOf(options.mirrors, repo) : undefined;
  if (local) return { source: local };
  if (options.clone) return { source: `https://github.com/${repo}.git` };
  const [bundle, bare, clone] = localCopyNames(repo);
  return {
    unavailable: options.mirrors
      ? `no ${bundle}, ${bare} or ${clone} in ${options.mirrors} (and --clone not given)`
      : "no --mirrors folder was given (and --clone not given)",
  };
}

/** A record as the audit sees a task: one request (its problem statement), its F2P tests and test patch. */
function taskOf(candidate: Candidate) {
  return {
    id: candidate.id,
    requests: [
      {
        stage: 1,
        text: candidate.problem_statement?.trim() || "(the record has no problem statement)",
        provenance: {
          sources: [
            {
              kind: "issue" as const,
              record_id: `${candidate.id}:problem_statement`,
              ...(candidate.pull_number ? { url: `https://github.com/${candidate.repo}/pull/${candidate.pull_number}` } : {}),
              author: "(SWE-bench record)",
            },
          ],
        },
      },
    ],
    verifier: { test_patch: candidate.upstream_split?.test_patch ?? "", fail_to_pass: candidate.upstream_fail_to_pass },
  };
}

/** A tree of each record's sources: its repository's mirror at the base with the test patch applied, else the test patch. */
function treesFor(options: SwebenchAuditOptions, chosen: Candidate[]): (candidate: Candidate, testPatch: string) => Promise<SourceTree> {
  const mirrors = new MirrorCache(new WorkLayout(options.workDir).mirrors);
  const mirrorsByRepo = new Map<string, Promise<{ mirror: string } | { unavailable: string }>>();
  const byRepo = new Map<string, string[]>();
  for (const c of chosen) byRepo.set(c.repo, [...(byRepo.get(c.repo) ?? []), c.base_commit]);
  const mirrorFor = (repo: string) => {
    let found = mirrorsByRepo.get(repo);
    if (!found) {
      const where = sourceFor(repo, options);
      found =
        "unavailable" in where
          ? Promise.resolve(where)
          : mirrors.ensureSome(repo, where.source, byRepo.get(repo)!).then(
              ({ path }) => ({ mirror: path }),
              (error: unknown) => ({ unavailable: `could not clone ${where.source}: ${(error as Error).message.split("\n")[0]}` }),
            );
      mirrorsByRepo.set(repo, found);
    }
    return found;
  };
  return async (candidate, testPatch) => {
    const mirror = await mirrorFor(candidate.repo);
    const tree = "unavailable" in mirror ? new PatchOnlyTree(testPatch, mirror.unavailable) : await sourcesAt(mirror.mirror, candidate.base_commit, testPatch);
    if (tree.kind === "test_patch") options.log.warn(`${candidate.id}: test sources from the test patch only (${tree.unavailable})`);
    return tree;
  };
}

/** The judge of a run, or undefined without --judge. */
function judgeOf(options: SwebenchAuditOptions) {
  if (!options.judge) return undefined;
  const adapter = adapterFor({ adapter: options.judge });
  return openJudge({
    adapter,
    layout: new WorkLayout(options.workDir),
    ...(options.judgePasses ? { passes: options.judgePasses } : {}),
    ...(options.callJudge ? { call: options.callJudge } : {}),
  });
}

/**
 * Audits every record of a SWE-bench-family file as a task of one request (its problem
 * statement), with its FAIL_TO_PASS tests and its gold patch as the reference fix, through the
 * stage's own `auditTask`: the same rules, judge, risk and gate. Nothing is built or run: test
 * sources are read from a mirror of the repository at the base commit with the test patch applied,
 * where one can be had. A record the judge fails on is said so and audited without it.
 */
export async function auditSwebench(options: SwebenchAuditOptions): Promise<SwebenchAudit> {
  const wanted = options.only?.length ? new Set(options.only) : undefined;
  const chosen = options.candidates.filter((c) => !wanted || wanted.has(c.id));
  const treeOf = treesFor(options, chosen);
  const judge = judgeOf(options);
  const provenance = loadProvenance();
  const inForce = rulesInForce(options.rules ?? {}, provenance, "--rules");
  const gate: GateSetup = {
    excludeAtSeverity: 2,
    judgeGate: "only with a decision",
    inForce: new Set(inForce.map((f) => f.name)),
    decisionsFile: options.decisionsFile ?? "a decisions file (--decisions)",
  };
  const setup = { rules: rulesInUse(options.rules), ...(options.riskModel ? { riskModel: options.riskModel } : {}), ...(judge ? { judge } : {}), gate };
  const records: AuditRecord[] = [];
  const tasks = new Map<string, AuditedTask>();
  const unaudited: string[] = [];
  for (const candidate of chosen) {
    const task = taskOf(candidate);
    const input = { task, referencePatch: candidate.upstream_split?.patch, decisions: options.decisions?.(candidate.id) ?? {} };
    try {
      records.push(await auditTask({ ...input, tree: await treeOf(candidate, task.verifier.test_patch) }, setup));
    } catch (error) {
      if (!(error instanceof DiffParseError)) throw error;
      unaudited.push(`${candidate.id}: its patches are not a diff the audit can read: ${error.message}`);
      continue;
    }
    tasks.set(candidate.id, { repo: candidate.repo, base_commit: candidate.base_commit, requests: task.requests });
  }
  for (const failure of judge?.unjudged ?? []) options.log.error(failure);
  records.sort((a, b) => (a.task_id < b.task_id ? -1 : a.task_id > b.task_id ? 1 : 0));
  const judged = judge ? { judgeUsage: judge.usage, judgeFailures: judge.unjudged, judgeCost: judgeCost(judge.adapter, records) } : {};
  const base = { records, tasks, unaudited, inForce, ...judged };
  if (!options.annotations) return base;
  const measured = measure({
    records,
    repoOf: (id) => tasks.get(id)!.repo,
    annotations: options.annotations,
    ...(options.riskModel ? { model: options.riskModel } : {}),
    provenance,
  });
  return { ...base, measured };
}
