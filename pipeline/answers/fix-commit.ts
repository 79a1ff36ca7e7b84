import type { FixCommit } from "../schemas/answers.ts";
import { containsBlock, type SearchableHunk } from "./answer.ts";
import type { TreeReader } from "./tree-reader.ts";

type Git = (args: string[]) => Promise<string>;

/** Subjects that merge pull request N: GitHub's merge commits and its squashes. */
const MERGE_SUBJECT = /^Merge pull request #(\d+) from /;
const SQUASH_SUBJECT = /\(#(\d+)\)\s*$/;

/** Every commit of a repository whose subject merges a pull request, by the pull request's number. */
export class PullRequestMerges {
  private constructor(private readonly byNumber: Map<number, string[]>) {}

  static async read(git: Git): Promise<PullRequestMerges> {
    const byNumber = new Map<number, string[]>();
    const out = await git(["log", "--all", "--format=%H%x00%s%x1e"]);
    for (const entry of out.split("\x1e")) {
      const [sha, subject] = entry.trim().split("\0");
      if (!sha || subject === undefined) continue;
      const number = MERGE_SUBJECT.exec(subject)?.[1] ?? SQUASH_SUBJECT.exec(subject)?.[1];
      if (number) byNumber.set(Number(number), [...(byNumber.get(Number(number)) ?? []), sha]);
    }
    return new PullRequestMerges(byNumber);
  }

  of(number: number): string[] {
    return this.byNumber.get(number) ?? [];
  }
}

async function present(reader: TreeReader, commit: string, hunks: readonly SearchableHunk[]): Promise<number> {
  let found = 0;
  for (const hunk of hunks) {
    const text = await reader.file(commit, hunk.path);
    if (text !== undefined && containsBlock(text, hunk.lines)) found++;
  }
  return found;
}

/** The earliest of several commits: one every other descends from, else the first given. */
async function earliest(reader: TreeReader, commits: string[]): Promise<string> {
  for (const c of commits) {
    const others = commits.filter((o) => o !== c);
    if ((await Promise.all(others.map((o) => reader.descends(o, c)))).every(Boolean)) return c;
  }
  return commits[0]!;
}

async function known(reader: TreeReader, commit: string, base: string): Promise<boolean> {
  return reader.descends(commit, base).catch(() => false);
}

/**
 * The commit that brought a task's upstream fix, for the answer rule's history test: the merge
 * commit GitHub names, when the repository has it; else a commit merging the pull request by its
 * message (one that holds part of the reference at least, so an unrelated "(#N)" is not taken);
 * else the first commit after the base (on any ref) that holds the whole upstream
 * implementation. `upstream` are the upstream implementation's searchable hunks.
 */
export async function findFixCommit(
  reader: TreeReader,
  git: Git,
  merges: PullRequestMerges,
  task: { base: string; pullNumber: number | null; mergeCommit: string | null; upstream: readonly SearchableHunk[] },
): Promise<FixCommit> {
  if (task.mergeCommit && (await known(reader, task.mergeCommit, task.base)))
    return { commit: task.mergeCommit, found_by: "merge_commit", detail: `the pull request's merge commit` };
  if (task.pullNumber !== null) {
    const named = merges.of(task.pullNumber);
    const candidates: string[] = [];
    for (const c of named)
      if ((await known(reader, c, task.base)) && (!task.upstream.length || (await present(reader, c, task.upstream)) > 0)) candidates.push(c);
    if (candidates.length) {
      const commit = await earliest(reader, candidates);
      return { commit, found_by: "pull_request_message", detail: `its message merges pull request #${task.pullNumber}` };
    }
  }
  if (task.upstream.length) {
    const paths = [...new Set(task.upstream.map((h) => h.path))];
    // Every branch and pull request head: the reference may have come through any of them.
    const log = await git(["rev-list", "--topo-order", "--reverse", "--ancestry-path", "--all", `^${task.base}`, "--", ...paths]).catch(() => "");
    for (const commit of log.split("\n").filter(Boolean))
      if ((await present(reader, commit, task.upstream)) === task.upstream.length)
        return { commit, found_by: "reference_present", detail: `the first commit after the base that holds the whole upstream implementation` };
  }
  return {
    commit: null,
    found_by: "none",
    detail:
      task.pullNumber === null
        ? "no pull request is named and no later commit holds the upstream implementation"
        : `no commit merges pull request #${task.pullNumber} and no later commit holds the upstream implementation`,
  };
}
