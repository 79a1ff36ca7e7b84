import { RecordError } from "../../pipeline/engine/stage.ts";
import { GITHUB_LIST_CAPS } from "../../pipeline/github-plugins.ts";
import type { Candidate, LinkedIssue } from "../../pipeline/schemas/candidate.ts";
import { byTime, issueCommentItem, reviewCommentItem, reviewItem } from "./discussion.ts";
import {
  candidateId,
  goneStatus,
  isForbidden,
  type IssueComment,
  type MinePullOptions,
  ownerAndName,
  type PullCommit,
  type PullFile,
  type PullSummary,
  type Review,
  type ReviewComment,
} from "./github-api.ts";
import { fetchIssues } from "./issues.ts";
import { findLinks } from "./linking.ts";
import type { ReferenceChange } from "./reference-change.ts";

/** What GitHub records of a merged pull request besides its change: its history, for reconstruct. */
export interface PullHistory {
  issues: LinkedIssue[];
  notes: string[];
  pull_request: Candidate["pull_request"] & object;
}

type CommitRow = { sha: string; message: string; committed_at: string };

/** The PR's commits from git, oldest first, as pulls.listCommits would list them without its cap. */
async function commitsFromGit(git: (args: string[]) => Promise<string>, base: string, head: string): Promise<CommitRow[]> {
  const out = await git(["log", "--reverse", "--format=%H%x1f%cI%x1f%B%x1e", `${base}..${head}`]);
  return out
    .split("\x1e")
    .map((r) => r.replace(/^\n/, ""))
    .filter(Boolean)
    .map((r) => {
      const [sha, date, message] = r.split("\x1f") as [string, string, string];
      return { sha, message: message.replace(/\n$/, ""), committed_at: new Date(date).toISOString().replace(/\.\d{3}Z$/, "Z") };
    });
}

/**
 * A merged pull request's history: its commits, files, reviews, review comments and comments,
 * and its linked issues (see findLinks; plain mentions never count). Lists GitHub caps (commits,
 * files) are completed from git when `change` gives the reference change.
 */
export async function minePullHistory(options: MinePullOptions, pull: PullSummary, change?: ReferenceChange): Promise<PullHistory> {
  const pr = pull.pull;
  const lists = await listsOfPull(options, pull);
  const notes: string[] = [];
  // GitHub answers a renamed (or moved) repository's old name; its pull requests name the new one.
  const now = pr.base?.repo?.full_name;
  if (typeof now === "string" && now.toLowerCase() !== pull.repo.toLowerCase())
    notes.push(`GitHub names this repository ${now} now (renamed or moved from ${pull.repo}); mined under the name the config gives`);
  const { commits, changedFiles } = await completedFromGit(lists.commits, lists.files, pull, notes, change);
  const links = await findLinks(options, pull, commits, notes);
  const issues = await fetchIssues(options.octokit, links, notes);
  // A PENDING review was never submitted: nobody but its author has seen it, and it has no time.
  // A COMMENTED review with no text only carries its line comments (listed on their own).
  const submitted = lists.reviews.filter((r) => r.state !== "PENDING" && !(r.state === "COMMENTED" && !String(r.body ?? "").trim()));
  const page = String(pr.html_url ?? `https://github.com/${pull.repo}/pull/${pull.number}`);
  const discussion = [
    ...lists.comments.map((c) => issueCommentItem(c, page)),
    ...submitted.map((r) => reviewItem(r, page)),
    ...lists.reviewComments.map((c) => reviewCommentItem(c, page)),
  ].sort(byTime);
  return {
    issues,
    notes,
    pull_request: {
      number: pull.number,
      url: page,
      title: pr.title,
      body: pr.body ?? "",
      author: pr.user?.login ?? "ghost",
      created_at: pr.created_at,
      merged_at: pr.merged_at!,
      head_sha: pr.head.sha,
      merge_commit_sha: pr.merge_commit_sha ?? null,
      commits,
      changed_files: [...new Set(changedFiles)].sort(),
      discussion,
    },
  };
}

/** The five lists of a pull request GitHub gives. */
interface PullLists {
  commits: PullCommit[];
  files: PullFile[];
  reviews: Review[];
  reviewComments: ReviewComment[];
  comments: IssueComment[];
}

/**
 * The five lists of a pull request: commits, files, reviews, review comments, comments. Gone (404,
 * 410) or refused to this token (403) while it was mined, the pull request is a reject with why.
 */
async function listsOfPull({ octokit }: MinePullOptions, pull: PullSummary): Promise<PullLists> {
  const id = candidateId(pull.repo, pull.number);
  const where = { ...ownerAndName(pull.repo), per_page: 100 };
  try {
    // Settled together: when one list fails, the others are waited for (they fail fast if GitHub
    // is out of reach), so no request of this pull request is still under way once it is reported.
    const [commits, files, reviews, reviewComments, comments] = await Promise.allSettled([
      octokit.paginate(octokit.rest.pulls.listCommits, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.pulls.listFiles, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.pulls.listReviews, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.pulls.listReviewComments, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.issues.listComments, { ...where, issue_number: pull.number }),
    ]);
    return { commits: value(commits), files: value(files), reviews: value(reviews), reviewComments: value(reviewComments), comments: value(comments) };
  } catch (error) {
    if (isForbidden(error))
      throw new RecordError(
        "forbidden",
        `${id}: ${error.message}; the pull request is not mined (remembered: once the token may read it, run again with --force)`,
        { field: "number" },
      );
    const status = goneStatus(error);
    if (status)
      throw new RecordError(
        "not_found",
        `${id}: pull request ${pull.repo}#${pull.number} ${status === 410 ? "was deleted (410 Gone)" : "was not found (404)"} while it was being mined`,
        { field: "number" },
      );
    throw error;
  }
}

/** A settled list's items, or its failure (the first list's failure first, as they were asked). */
function value<T>(settled: PromiseSettledResult<T>): T {
  if (settled.status === "rejected") throw settled.reason;
  return settled.value;
}

/** The commits and changed files, completed from git where GitHub's lists stop at their caps (each case noted). */
async function completedFromGit(
  apiCommits: PullCommit[],
  files: PullFile[],
  pull: PullSummary,
  notes: string[],
  change?: ReferenceChange,
): Promise<{ commits: CommitRow[]; changedFiles: string[] }> {
  let commits: CommitRow[] = apiCommits.map((c) => ({
    sha: c.sha,
    message: c.commit.message,
    committed_at: (c.commit.committer?.date ?? c.commit.author?.date)!,
  }));
  const cap = GITHUB_LIST_CAPS;
  if (apiCommits.length >= cap.commits) {
    if (change?.headInGit) {
      commits = await commitsFromGit(change.git, change.base, change.target);
      notes.push(
        `pulls.listCommits stops at ${cap.commits} commits; all ${commits.length} were read from git (${change.base.slice(0, 12)}..${change.target.slice(0, 12)})`,
      );
    } else {
      notes.push(
        `pulls.listCommits stops at ${cap.commits} commits and the head ${pull.pull.head.sha} is not read from git: commits after the ${cap.commits}th are missing, and so are their closing keywords`,
      );
    }
  }
  let changedFiles = files.map((f) => String(f.filename));
  if (files.length >= cap.files && change) {
    changedFiles = (await change.git(["diff", "--name-only", "--no-renames", "-z", change.base, change.target])).split("\0").filter(Boolean);
    notes.push(`pulls.listFiles stops at ${cap.files} files; all ${changedFiles.length} were read from git`);
  } else if (files.length >= cap.files) notes.push(`pulls.listFiles stops at ${cap.files} files: the list is cut there`);
  return { commits, changedFiles };
}
