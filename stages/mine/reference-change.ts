import { RecordError } from "../../pipeline/engine/stage.ts";
import type { MinePullOptions, PullSummary } from "./github-api.ts";

/** A pull request's reference change as git has it: where it starts and ends, the diff, and git to read its commits with. */
export interface ReferenceChange {
  base: string;
  target: string;
  /** Whether the change ends at the PR's own head (not at a merge or squash commit): its commits are then base..target. */
  headInGit: boolean;
  diff: string;
  git: (args: string[]) => Promise<string>;
  notes: string[];
}

/**
 * The reference change, from git so that it is exact: base = the merge base of the PR's base and
 * head, target = its head (from the clone, or GitHub's refs/pull/N/head, which a mirror fetches);
 * when the head is in neither, the merge (or squash) commit against its first parent. When git
 * has none of these (force-pushed away, a merge GitHub computed and never pushed), the pull
 * request is rejected naming what is missing: a fact about the repository, cached.
 */
export async function referenceChange(options: MinePullOptions, pull: PullSummary, id: string): Promise<ReferenceChange> {
  const pr = pull.pull;
  const source = options.cloneSource(pull.repo);
  const wanted = [pr.head?.sha, pr.base?.sha, pr.merge_commit_sha].filter((c): c is string => typeof c === "string" && c.length > 0);
  const { path: mirror, missing } = await options.mirrors.ensureSome(pull.repo, source, wanted);
  const git = (args: string[]) => options.mirrors.git(mirror, args);
  const has = (commit: string | null | undefined) => typeof commit === "string" && commit.length > 0 && !missing.includes(commit);
  const notes: string[] = [];
  let head: string | undefined = has(pr.head?.sha) ? pr.head.sha : undefined;
  if (!head) {
    // GitHub keeps every pull request's head as refs/pull/N/head, even after its branch is gone.
    const pullRef = (await git(["rev-parse", "--verify", "--quiet", `refs/pull/${pull.number}/head^{commit}`]).catch(() => "")).trim();
    if (pullRef) {
      head = pullRef;
      notes.push(`the head ${pr.head?.sha} is not in git; refs/pull/${pull.number}/head (${pullRef.slice(0, 12)}) was used`);
    }
  }
  const mergeBase = async (a: string, b: string) => (await git(["merge-base", a, b]).catch(() => "")).trim();
  let base = "";
  let target = "";
  if (head && has(pr.base?.sha)) base = await mergeBase(pr.base.sha, head);
  if (head && !base && has(pr.merge_commit_sha)) base = await mergeBase(`${pr.merge_commit_sha}^1`, head);
  if (head && base) target = head;
  else if (has(pr.merge_commit_sha)) {
    base = (await git(["rev-parse", `${pr.merge_commit_sha}^1`]).catch(() => "")).trim();
    target = pr.merge_commit_sha!;
    if (base)
      notes.push(
        `the head ${pr.head?.sha} ${head ? "has no merge base with the base branch in git" : "is not in git"}; the change is the merge commit ${String(pr.merge_commit_sha).slice(0, 12)} against its first parent`,
      );
  }
  if (!base || !target) {
    const absent = [
      `head ${pr.head?.sha ?? "(none)"}${head ? "" : ` (nor refs/pull/${pull.number}/head)`}`,
      `base ${pr.base?.sha ?? "(none)"}${has(pr.base?.sha) ? " (present, but no merge base with the head)" : ""}`,
      `merge commit ${pr.merge_commit_sha ?? "(none)"}`,
    ].filter((part, i) => i !== 0 || !head);
    throw new RecordError(
      "commits_not_in_git",
      `${id}: the reference change cannot be made from ${source}: ${absent.join("; ")} ${absent.length === 1 ? "is" : "are"} not there (force-pushed away, or never pushed)`,
      { field: head ? "base.sha" : "head.sha" },
    );
  }
  const diff = await git(["diff", "--binary", "--full-index", "-M", base, target]);
  if (!diff) throw new RecordError("no_source_changes", `${id}: the pull request changes nothing between ${base} and ${target}`, { field: "head.sha" });
  return { base, target, headInGit: target === head, diff, git, notes };
}
