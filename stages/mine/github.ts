import type { GithubClient } from "../../pipeline/github-client.ts";
import type { MirrorCache } from "../../pipeline/git.ts";
import { Candidate, type DiscussionItem, type LinkedIssue } from "../../pipeline/schemas/candidate.ts";
import { RecordError } from "../../pipeline/stage.ts";
import { closingReferences, mentions, type IssueRef } from "./links.ts";

/** What the pull-request listing says of one merged PR: enough to key its cached result. */
export interface PullSummary {
  repo: string;
  number: number;
  /** The pull request as the listing (or a single GET) returned it. */
  pull: Record<string, unknown>;
}

export interface MineTarget {
  repo: string;
  since?: string;
  until?: string;
  numbers?: number[];
}

type Raw = Record<string, any>;

function split(repo: string): { owner: string; repo: string } {
  const [owner, name] = repo.split("/");
  return { owner: owner!, repo: name! };
}

export function isNotFound(error: unknown): boolean {
  return (error as { status?: number }).status === 404;
}

/** Merged pull requests of a repository, in a creation-date window or from a list of numbers, oldest first. */
export async function listMergedPulls(octokit: GithubClient, target: MineTarget): Promise<PullSummary[]> {
  const summary = (p: Raw): PullSummary => ({ repo: target.repo, number: p.number, pull: p });
  if (target.numbers?.length) {
    const pulls: PullSummary[] = [];
    for (const number of target.numbers) {
      const { data } = await octokit.rest.pulls.get({ ...split(target.repo), pull_number: number });
      if (data.merged_at) pulls.push(summary(data));
    }
    return pulls;
  }
  const all = await octokit.paginate(octokit.rest.pulls.list, { ...split(target.repo), state: "closed", sort: "created", direction: "asc", per_page: 100 });
  return all
    .filter((p) => p.merged_at && (!target.since || p.created_at >= target.since) && (!target.until || p.created_at < target.until))
    .map((p) => summary(p as Raw));
}

function discussionItem(kind: DiscussionItem["kind"], raw: Raw): DiscussionItem {
  return {
    kind,
    id: raw.id,
    url: raw.html_url,
    author: raw.user?.login ?? "ghost",
    author_type: raw.user?.type ?? "User",
    created_at: raw.submitted_at ?? raw.created_at,
    body: raw.body ?? "",
    ...(raw.state ? { state: raw.state } : {}),
    ...(raw.path ? { path: raw.path, line: raw.line ?? raw.original_line ?? null } : {}),
    ...(raw.in_reply_to_id ? { in_reply_to: raw.in_reply_to_id } : {}),
  };
}

const byTime = (a: DiscussionItem, b: DiscussionItem) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id - b.id);

export interface MinePullOptions {
  octokit: GithubClient;
  mirrors: MirrorCache;
  cloneSource: (repo: string) => string;
}

/** The issues a merged pull request is linked to, each with how the link was found (closing keywords first, then timelines). */
async function findLinks(octokit: GithubClient, pull: PullSummary, pr: Raw, commits: Raw[]): Promise<{ ref: IssueRef; by: LinkedIssue["linked_by"] }[]> {
  const prCommits = new Set<string>([pr.merge_commit_sha, pr.head.sha, ...commits.map((c) => c.sha)].filter(Boolean));
  const links: { ref: IssueRef; by: LinkedIssue["linked_by"] }[] = [];
  const add = (ref: IssueRef, by: LinkedIssue["linked_by"]) => {
    if (ref.repo.toLowerCase() === pull.repo.toLowerCase() && ref.number === pull.number) return;
    if (!links.some((l) => l.ref.repo.toLowerCase() === ref.repo.toLowerCase() && l.ref.number === ref.number)) links.push({ ref, by });
  };
  for (const ref of closingReferences(pr.body ?? "", pull.repo)) add(ref, "pr_body_keyword");
  for (const commit of commits) for (const ref of closingReferences(commit.commit.message, pull.repo)) add(ref, "commit_keyword");
  const keyworded = new Set(links.map((l) => `${l.ref.repo.toLowerCase()}#${l.ref.number}`));
  for (const ref of mentions(pr.body ?? "", pull.repo)) {
    if (keyworded.has(`${ref.repo.toLowerCase()}#${ref.number}`) || (ref.repo === pull.repo && ref.number === pull.number)) continue;
    let timeline: Raw[];
    try {
      timeline = (await octokit.paginate(octokit.rest.issues.listEventsForTimeline, { ...split(ref.repo), issue_number: ref.number, per_page: 100 })) as Raw[];
    } catch (error) {
      if (isNotFound(error)) continue; // a mention of something that does not exist links nothing
      throw error;
    }
    if (timeline.some((e) => e.event === "closed" && e.commit_id && prCommits.has(e.commit_id))) add(ref, "timeline");
  }
  return links;
}

/** Each linked issue with its comments; a closing reference to another pull request is not an issue. */
async function fetchIssues(octokit: GithubClient, id: string, links: { ref: IssueRef; by: LinkedIssue["linked_by"] }[]): Promise<LinkedIssue[]> {
  const issues: LinkedIssue[] = [];
  for (const { ref, by } of links) {
    let issue: Raw;
    try {
      issue = (await octokit.rest.issues.get({ ...split(ref.repo), issue_number: ref.number })).data as Raw;
    } catch (error) {
      if (isNotFound(error)) throw new RecordError("not_found", `${id}: linked issue ${ref.repo}#${ref.number} was not found (deleted or transferred)`, { field: "issues" });
      throw error;
    }
    if (issue.pull_request) continue;
    const issueComments = await octokit.paginate(octokit.rest.issues.listComments, { ...split(ref.repo), issue_number: ref.number, per_page: 100 });
    issues.push({
      repo: ref.repo,
      number: ref.number,
      url: issue.html_url,
      title: issue.title,
      body: issue.body ?? "",
      author: issue.user?.login ?? "ghost",
      created_at: issue.created_at,
      linked_by: by,
      comments: issueComments.map((c) => discussionItem("issue_comment", c as Raw)).sort(byTime),
    });
  }
  return issues;
}

/**
 * The reference change, from git so that it is exact: base = the merge base of the PR, target =
 * its head, or the squash commit (and its parent) when the head is gone.
 */
async function referenceChange(options: MinePullOptions, pull: PullSummary, pr: Raw, id: string): Promise<{ base: string; diff: string }> {
  const mirror = await options.mirrors.ensure(pull.repo, options.cloneSource(pull.repo), pr.merge_commit_sha ?? pr.head.sha);
  const git = (args: string[]) => options.mirrors.git(mirror, args);
  let base: string;
  let target: string;
  try {
    await git(["cat-file", "-e", `${pr.head.sha}^{commit}`]);
    base = (await git(["merge-base", pr.base.sha, pr.head.sha])).trim();
    target = pr.head.sha;
  } catch {
    if (!pr.merge_commit_sha) throw new RecordError("no_traceable_source", `${id}: neither the head ${pr.head.sha} nor a merge commit is in ${options.cloneSource(pull.repo)}`, { field: "head.sha" });
    base = (await git(["rev-parse", `${pr.merge_commit_sha}^1`])).trim();
    target = pr.merge_commit_sha;
  }
  const diff = await git(["diff", "--binary", "--full-index", "-M", base, target]);
  if (!diff) throw new RecordError("no_source_changes", `${id}: the pull request changes nothing between ${base} and ${target}`, { field: "head.sha" });
  return { base, diff };
}

/**
 * Mines one merged pull request into a candidate: its commits, files, reviews, review comments
 * and comments; its linked issues (closing keywords in the body and commit messages, and issues
 * whose timeline shows this PR's commit closing them; plain mentions never count); and the
 * reference change from git.
 */
export async function minePull(options: MinePullOptions, pull: PullSummary): Promise<Candidate> {
  const { octokit } = options;
  const id = `${pull.repo.replace("/", "__")}-${pull.number}`;
  const where = { ...split(pull.repo), per_page: 100 };
  const pr = pull.pull as Raw;
  if (!pr.merged_at) throw new RecordError("not_merged", `${id}: pull request ${pull.repo}#${pull.number} is not merged`, { field: "merged_at" });
  const [commits, files, reviews, reviewComments, comments] = await Promise.all([
    octokit.paginate(octokit.rest.pulls.listCommits, { ...where, pull_number: pull.number }),
    octokit.paginate(octokit.rest.pulls.listFiles, { ...where, pull_number: pull.number }),
    octokit.paginate(octokit.rest.pulls.listReviews, { ...where, pull_number: pull.number }),
    octokit.paginate(octokit.rest.pulls.listReviewComments, { ...where, pull_number: pull.number }),
    octokit.paginate(octokit.rest.issues.listComments, { ...where, issue_number: pull.number }),
  ]);
  const issues = await fetchIssues(octokit, id, await findLinks(octokit, pull, pr, commits as Raw[]));
  const { base, diff } = await referenceChange(options, pull, pr, id);
  const discussion = [
    ...comments.map((c) => discussionItem("issue_comment", c as Raw)),
    ...reviews.map((r) => discussionItem("review", r as Raw)),
    ...reviewComments.map((c) => discussionItem("review_comment", c as Raw)),
  ].sort(byTime);
  return Candidate.parse({
    id,
    repo: pull.repo,
    pull_number: pull.number,
    base_commit: base,
    created_at: pr.created_at,
    source: { kind: "github", api_url: pr.html_url },
    reference_diff: diff,
    issues,
    pull_request: {
      number: pull.number,
      url: pr.html_url,
      title: pr.title,
      body: pr.body ?? "",
      author: pr.user?.login ?? "ghost",
      created_at: pr.created_at,
      merged_at: pr.merged_at,
      head_sha: pr.head.sha,
      merge_commit_sha: pr.merge_commit_sha ?? null,
      commits: commits.map((c) => ({ sha: c.sha, message: c.commit.message, committed_at: c.commit.committer?.date ?? c.commit.author?.date })),
      changed_files: files.map((f) => f.filename).sort(),
      discussion,
    },
  });
}
