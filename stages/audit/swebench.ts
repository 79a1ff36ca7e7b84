import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { MirrorCache } from "../../pipeline/git.ts";
import { WorkLayout } from "../../pipeline/work-layout.ts";
import { AuditRecord } from "../../pipeline/schemas/audit.ts";
import type { Candidate } from "../../pipeline/schemas/candidate.ts";
import type { Logger } from "../../pipeline/logger.ts";
import { type Agreement, agreement, type Annotation, type KindAgreement, kindAgreement } from "./agreement.ts";
import { alignTask } from "./runner.ts";
import type { AuditedTask } from "./report.ts";
import { PatchOnlyTree, type SourceTree, sourcesAt } from "./readers/source-tree.ts";

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
  log: Logger;
}

export interface SwebenchAudit {
  records: AuditRecord[];
  tasks: Map<string, AuditedTask>;
  /** Per repository and overall ("all"), when annotations were given. */
  agreement: Agreement[];
  /** Per flag kind: the records carrying it by annotators' score. */
  kinds: KindAgreement[];
}

/** Where a repository's history comes from for the audit: a mirror in the folder, GitHub, or nowhere (and why). */
function sourceFor(repo: string, options: SwebenchAuditOptions): { source: string } | { unavailable: string } {
  const stem = repo.replace("/", "__");
  if (options.mirrors) {
    for (const candidate of [`${stem}.bundle`, `${stem}.git`, stem]) {
      const path = resolve(options.mirrors, candidate);
      if (existsSync(path)) return { source: path };
    }
  }
  if (options.clone) return { source: `https://github.com/${repo}.git` };
  return {
    unavailable: options.mirrors
      ? `no ${stem}.bundle, ${stem}.git or ${stem} in ${options.mirrors} (and --clone not given)`
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

/** Agreement per repository and overall, and per flag kind, over the records the annotations score. */
function agreementWith(records: AuditRecord[], tasks: Map<string, AuditedTask>, annotations: Map<string, Annotation>) {
  const annotated = records.filter((r) => annotations.has(r.task_id));
  const pairs = (rs: AuditRecord[]) => rs.map((r) => ({ severity: r.severity, score: annotations.get(r.task_id)!.false_negative }));
  const repos = [...new Set(annotated.map((r) => tasks.get(r.task_id)!.repo))].sort();
  const agreements: Agreement[] = repos.map((repo) => agreement(repo, pairs(annotated.filter((r) => tasks.get(r.task_id)!.repo === repo))));
  agreements.push(agreement("all", pairs(annotated)));
  const kinds = kindAgreement(annotated.map((r) => ({ flags: [...new Set(r.flags.map((f) => f.flag))], score: annotations.get(r.task_id)!.false_negative })));
  return { agreements, kinds };
}

/**
 * Audits every record of a SWE-bench-family file as a task of one request (its problem
 * statement), with its FAIL_TO_PASS tests and its gold patch as the reference fix. Nothing is
 * built or run: test sources are read from a mirror of the repository at the base commit with the
 * test patch applied, where one can be had.
 */
export async function auditSwebench(options: SwebenchAuditOptions): Promise<SwebenchAudit> {
  const wanted = options.only?.length ? new Set(options.only) : undefined;
  const chosen = options.candidates.filter((c) => !wanted || wanted.has(c.id));
  const mirrors = new MirrorCache(new WorkLayout(options.workDir).mirrors);
  const mirrorsByRepo = new Map<string, Promise<{ mirror: string } | { unavailable: string }>>();
  const mirrorFor = (repo: string, commits: string[]) => {
    let found = mirrorsByRepo.get(repo);
    if (!found) {
      const where = sourceFor(repo, options);
      found =
        "unavailable" in where
          ? Promise.resolve(where)
          : mirrors.ensureSome(repo, where.source, commits).then(
              ({ path }) => ({ mirror: path }),
              (error: unknown) => ({ unavailable: `could not clone ${where.source}: ${(error as Error).message.split("\n")[0]}` }),
            );
      mirrorsByRepo.set(repo, found);
    }
    return found;
  };
  const byRepo = new Map<string, string[]>();
  for (const c of chosen) byRepo.set(c.repo, [...(byRepo.get(c.repo) ?? []), c.base_commit]);

  const records: AuditRecord[] = [];
  const tasks = new Map<string, AuditedTask>();
  for (const candidate of chosen) {
    const task = taskOf(candidate);
    const mirror = await mirrorFor(candidate.repo, byRepo.get(candidate.repo)!);
    const tree: SourceTree =
      "unavailable" in mirror
        ? new PatchOnlyTree(task.verifier.test_patch, mirror.unavailable)
        : await sourcesAt(mirror.mirror, candidate.base_commit, task.verifier.test_patch);
    if (tree.kind === "test_patch") options.log.warn(`${candidate.id}: test sources from the test patch only (${tree.unavailable})`);
    const findings = await alignTask({ task, referencePatch: candidate.upstream_split?.patch, tree });
    records.push(AuditRecord.parse({ task_id: candidate.id, ...findings }));
    tasks.set(candidate.id, { repo: candidate.repo, base_commit: candidate.base_commit, requests: task.requests });
  }
  records.sort((a, b) => (a.task_id < b.task_id ? -1 : a.task_id > b.task_id ? 1 : 0));

  const { agreements, kinds } = options.annotations ? agreementWith(records, tasks, options.annotations) : { agreements: [], kinds: [] };
  return { records, tasks, agreement: agreements, kinds };
}
