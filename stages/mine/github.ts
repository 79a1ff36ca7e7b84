import { GITHUB_LIST_CAPS, type CachedGraphql, type GithubClient } from "../../pipeline/github-client.ts";
import type { MirrorCache } from "../../pipeline/git.ts";
import { Candidate, LINK_SOURCES, type DiscussionItem, type LinkedIssue, type LinkSource } from "../../pipeline/schemas/candidate.ts";
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

/** Mentioned issues whose closers one GraphQL query asks about; more are left to keywords. */
const MAX_MENTIONS_PER_QUERY = 30;

type Raw = Record<string, any>;

function split(repo: string): { owner: string; repo: string } {
  const [owner, name] = repo.split("/");
  return { owner: owner!, repo: name! };
}

export function isNotFound(error: unknown): boolean {
  return (error as { status?: number }).status === 404;
}

/** GitHub's answer for something deleted (410 Gone) or never there (404). */
function isGone(error: unknown): 404 | 410 | undefined {
  const status = (error as { status?: number }).status;
  return status === 404 || status === 410 ? status : undefined;
}

/**
 * Merged pull requests of a repository, in a creation-date window or from a list of numbers,
 * oldest first; listed numbers GitHub does not have (404) or has deleted (410) are returned apart.
 */
export async function listMergedPulls(octokit: GithubClient, target: MineTarget): Promise<{ pulls: PullSummary[]; missing: { number: number; status: 404 | 410 }[] }> {
  const summary = (p: Raw): PullSummary => ({ repo: target.repo, number: p.number, pull: p });
  if (target.numbers?.length) {
    const pulls: PullSummary[] = [];
    const missing: { number: number; status: 404 | 410 }[] = [];
    for (const number of target.numbers) {
      try {
        const { data } = await octokit.rest.pulls.get({ ...split(target.repo), pull_number: number });
        if (data.merged_at) pulls.push(summary(data));
      } catch (error) {
        const status = isGone(error);
        if (!status) throw error;
        missing.push({ number, status });
      }
    }
    return { pulls, missing };
  }
  const all = await octokit.paginate(octokit.rest.pulls.list, { ...split(target.repo), state: "closed", sort: "created", direction: "asc", per_page: 100 });
  const pulls = all
    .filter((p) => p.merged_at && (!target.since || p.created_at >= target.since) && (!target.until || p.created_at < target.until))
    .map((p) => summary(p as Raw));
  return { pulls, missing: [] };
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
  /** GraphQL, when the run has a token (GitHub's GraphQL API refuses anonymous requests). */
  graphql?: CachedGraphql;
  mirrors: MirrorCache;
  cloneSource: (repo: string) => string;
}

const refKey = (ref: IssueRef) => `${ref.repo.toLowerCase()}#${ref.number}`;

/** An issue the pull request is linked to, with every source that links it. */
interface Link {
  ref: IssueRef;
  sources: LinkSource[];
}

class Links {
  readonly list: Link[] = [];
  constructor(private readonly pull: IssueRef) {}
  add(ref: IssueRef, source: LinkSource): void {
    if (refKey(ref) === refKey(this.pull)) return;
    const known = this.list.find((l) => refKey(l.ref) === refKey(ref));
    if (!known) this.list.push({ ref, sources: [source] });
    else if (!known.sources.includes(source)) known.sources.push(source);
  }
}

const CLOSERS = `__typename
      ... on Issue {
        timelineItems(itemTypes: [CLOSED_EVENT], last: 20) {
          nodes { ... on ClosedEvent { closer { __typename ... on PullRequest { number repository { nameWithOwner } } ... on Commit { oid } } } }
        }
      }`;

/**
 * One GraphQL query per pull request: the issues GitHub records it as closing, and, for each issue
 * the description mentions without a closing keyword, what closed it. Mentions are variables, so
 * the query text is one of a few shapes.
 */
function linkQuery(mentionCount: number): string {
  const vars = Array.from({ length: mentionCount }, (_, i) => `, $m${i}o: String!, $m${i}n: String!, $m${i}i: Int!`).join("");
  const parts = Array.from({ length: mentionCount }, (_, i) => `  m${i}: repository(owner: $m${i}o, name: $m${i}n) {\n    issueOrPullRequest(number: $m${i}i) {\n      ${CLOSERS}\n    }\n  }`).join("\n");
  return `query SwitchSweLinks($owner: String!, $name: String!, $number: Int!, $after: String${vars}) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      closingIssuesReferences(first: 50, after: $after) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes { number repository { nameWithOwner } }
      }
    }
  }
${parts}
}`;
}

/**
 * The issues a merged pull request is linked to, and how each link was found. With GraphQL:
 * GitHub's closing references first, then closing keywords in the description and in commit
 * messages, then mentioned issues whose `ClosedEvent.closer` is this PR or one of its commits.
 * Without GraphQL (no token): keywords, then mentioned issues whose REST timeline has a closed
 * event naming one of the PR's commits (GitHub leaves `commit_id` null when a PR closes an issue,
 * so this finds commit closings only, and sidebar links are not found at all).
 */
async function findLinks(options: MinePullOptions, pull: PullSummary, pr: Raw, commits: { sha: string; message: string }[], notes: string[]): Promise<Link[]> {
  const { octokit, graphql } = options;
  const prCommits = new Set<string>([pr.merge_commit_sha, pr.head.sha, ...commits.map((c) => c.sha)].filter(Boolean));
  const links = new Links({ repo: pull.repo, number: pull.number });
  const keyword: [IssueRef, LinkSource][] = [
    ...closingReferences(pr.body ?? "", pull.repo).map((ref) => [ref, "pr_body_keyword"] as [IssueRef, LinkSource]),
    ...commits.flatMap((c) => closingReferences(c.message, pull.repo, "commit_message").map((ref) => [ref, "commit_keyword"] as [IssueRef, LinkSource])),
  ];
  const keyworded = new Set(keyword.map(([ref]) => refKey(ref)));
  const mentioned = mentions(pr.body ?? "", pull.repo).filter((ref) => !keyworded.has(refKey(ref)) && refKey(ref) !== refKey({ repo: pull.repo, number: pull.number }));

  if (graphql) {
    const asked = mentioned.slice(0, MAX_MENTIONS_PER_QUERY);
    if (mentioned.length > asked.length) notes.push(`the description mentions ${mentioned.length} issues; what closed them was asked for the first ${asked.length} only`);
    const variables: Record<string, unknown> = { owner: split(pull.repo).owner, name: split(pull.repo).repo, number: pull.number, after: null };
    asked.forEach((ref, i) => Object.assign(variables, { [`m${i}o`]: split(ref.repo).owner, [`m${i}n`]: split(ref.repo).repo, [`m${i}i`]: ref.number }));
    const query = linkQuery(asked.length);
    const closingRefs: IssueRef[] = [];
    // The first answer has the mentions; later pages of closing references do not ask for them.
    const first = await graphql(query, variables, String(pr.updated_at));
    let answer = first;
    for (;;) {
      const refs = (answer.data.repository as Raw | null)?.pullRequest?.closingIssuesReferences;
      if (!refs) throw new Error(`GitHub's GraphQL API returned no closing references for ${pull.repo}#${pull.number}: ${answer.errors.map((e) => e.message).join("; ") || "no data"}`);
      for (const node of refs.nodes as Raw[]) closingRefs.push({ repo: node.repository.nameWithOwner, number: node.number });
      if (!refs.pageInfo.hasNextPage) break;
      answer = await graphql(linkQuery(0), { owner: variables.owner, name: variables.name, number: pull.number, after: refs.pageInfo.endCursor }, String(pr.updated_at));
    }
    for (const ref of closingRefs) links.add(ref, "closing_reference");
    for (const [ref, source] of keyword) links.add(ref, source);
    asked.forEach((ref, i) => {
      const issue = (first.data[`m${i}`] as Raw | null)?.issueOrPullRequest;
      // Gone, moved or a pull request: a mention of it links nothing.
      if (!issue || issue.__typename !== "Issue") return;
      const closedByThis = (issue.timelineItems?.nodes ?? []).some((n: Raw) => {
        const closer = n?.closer;
        if (closer?.__typename === "PullRequest") return closer.number === pull.number && String(closer.repository?.nameWithOwner).toLowerCase() === pull.repo.toLowerCase();
        return closer?.__typename === "Commit" && prCommits.has(closer.oid);
      });
      if (closedByThis) links.add(ref, "timeline");
    });
    return links.list;
  }

  for (const [ref, source] of keyword) links.add(ref, source);
  for (const ref of mentioned) {
    let timeline: Raw[];
    try {
      timeline = (await octokit.paginate(octokit.rest.issues.listEventsForTimeline, { ...split(ref.repo), issue_number: ref.number, per_page: 100 })) as Raw[];
    } catch (error) {
      const status = isGone(error);
      if (!status) throw error;
      // A mention of something that does not exist, or no longer does, links nothing.
      if (status === 410) notes.push(`mentioned issue ${ref.repo}#${ref.number} was deleted (410 Gone); its timeline was not read`);
      continue;
    }
    if (timeline.some((e) => e.event === "closed" && e.commit_id && prCommits.has(e.commit_id))) links.add(ref, "timeline");
  }
  return links.list;
}

/** "owner/repo" of an issue as GitHub returned it (after a transfer, its new repository). */
function repoOfIssue(issue: Raw, fallback: string): string {
  const match = /\/repos\/([^/]+\/[^/]+)$/.exec(String(issue.repository_url ?? ""));
  return match ? match[1]! : fallback;
}

/**
 * Each linked issue with its comments. A deleted issue (410) or one that does not exist (404) is
 * a link skipped with a note; a transferred one (301, which the client follows) is kept at its new
 * home, with where the pull request named it; a closing reference to a pull request is not an issue.
 */
async function fetchIssues(octokit: GithubClient, links: Link[], notes: string[]): Promise<LinkedIssue[]> {
  const issues: LinkedIssue[] = [];
  for (const { ref, sources } of links) {
    let issue: Raw;
    try {
      issue = (await octokit.rest.issues.get({ ...split(ref.repo), issue_number: ref.number })).data as Raw;
    } catch (error) {
      const status = isGone(error);
      if (!status) throw error;
      notes.push(`linked issue ${ref.repo}#${ref.number} (${sources.join(", ")}) ${status === 410 ? "was deleted (410 Gone)" : "does not exist (404)"}; the link is skipped`);
      continue;
    }
    if (issue.pull_request) continue;
    const at: IssueRef = { repo: repoOfIssue(issue, ref.repo), number: issue.number };
    const moved = refKey(at) !== refKey(ref);
    const same = issues.find((i) => refKey(i) === refKey(at));
    if (same) {
      // Named twice (its old and new address): one issue, found by every source that named it.
      same.link_sources = LINK_SOURCES.filter((s) => same.link_sources.includes(s) || sources.includes(s));
      same.linked_by = same.link_sources[0]!;
      if (moved) {
        same.transferred_from ??= `${ref.repo}#${ref.number}`;
        notes.push(`linked issue ${ref.repo}#${ref.number} was transferred to ${at.repo}#${at.number} (301); it is the same issue as the one linked there`);
      }
      continue;
    }
    let issueComments: Raw[];
    try {
      issueComments = (await octokit.paginate(octokit.rest.issues.listComments, { ...split(at.repo), issue_number: at.number, per_page: 100 })) as Raw[];
    } catch (error) {
      // Deleted between the two requests: as gone as if the first had said so.
      const status = isGone(error);
      if (!status) throw error;
      notes.push(`linked issue ${at.repo}#${at.number} (${sources.join(", ")}) ${status === 410 ? "was deleted (410 Gone)" : "does not exist (404)"} while its comments were read; the link is skipped`);
      continue;
    }
    if (moved) notes.push(`linked issue ${ref.repo}#${ref.number} was transferred to ${at.repo}#${at.number} (301); followed`);
    const ordered = LINK_SOURCES.filter((s) => sources.includes(s));
    issues.push({
      repo: at.repo,
      number: at.number,
      url: issue.html_url,
      title: issue.title,
      body: issue.body ?? "",
      author: issue.user?.login ?? "ghost",
      created_at: issue.created_at,
      linked_by: ordered[0]!,
      link_sources: ordered,
      ...(moved ? { transferred_from: `${ref.repo}#${ref.number}` } : {}),
      comments: issueComments.map((c) => discussionItem("issue_comment", c as Raw)).sort(byTime),
    });
  }
  return issues;
}

/**
 * The reference change, from git so that it is exact: base = the merge base of the PR, target =
 * its head, or the squash commit (and its parent) when the head is gone.
 */
async function referenceChange(options: MinePullOptions, pull: PullSummary, pr: Raw, id: string): Promise<{ base: string; target: string; headInGit: boolean; diff: string; git: (args: string[]) => Promise<string> }> {
  const mirror = await options.mirrors.ensure(pull.repo, options.cloneSource(pull.repo), pr.merge_commit_sha ?? pr.head.sha);
  const git = (args: string[]) => options.mirrors.git(mirror, args);
  let base: string;
  let target: string;
  let headInGit = true;
  try {
    await git(["cat-file", "-e", `${pr.head.sha}^{commit}`]);
    base = (await git(["merge-base", pr.base.sha, pr.head.sha])).trim();
    target = pr.head.sha;
  } catch {
    if (!pr.merge_commit_sha) throw new RecordError("no_traceable_source", `${id}: neither the head ${pr.head.sha} nor a merge commit is in ${options.cloneSource(pull.repo)}`, { field: "head.sha" });
    base = (await git(["rev-parse", `${pr.merge_commit_sha}^1`])).trim();
    target = pr.merge_commit_sha;
    headInGit = false;
  }
  const diff = await git(["diff", "--binary", "--full-index", "-M", base, target]);
  if (!diff) throw new RecordError("no_source_changes", `${id}: the pull request changes nothing between ${base} and ${target}`, { field: "head.sha" });
  return { base, target, headInGit, diff, git };
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
 * Mines one merged pull request into a candidate: its commits, files, reviews, review comments
 * and comments; its linked issues (see findLinks; plain mentions never count); and the reference
 * change from git. Lists GitHub caps (commits, files) are completed from git, and said in notes.
 */
export async function minePull(options: MinePullOptions, pull: PullSummary): Promise<Candidate> {
  const { octokit } = options;
  const id = `${pull.repo.replace("/", "__")}-${pull.number}`;
  const where = { ...split(pull.repo), per_page: 100 };
  const pr = pull.pull as Raw;
  if (!pr.merged_at) throw new RecordError("not_merged", `${id}: pull request ${pull.repo}#${pull.number} is not merged`, { field: "merged_at" });
  let lists: Raw[][];
  try {
    lists = await Promise.all([
      octokit.paginate(octokit.rest.pulls.listCommits, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.pulls.listFiles, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.pulls.listReviews, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.pulls.listReviewComments, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.issues.listComments, { ...where, issue_number: pull.number }),
    ]) as Raw[][];
  } catch (error) {
    const status = isGone(error);
    if (status) throw new RecordError("not_found", `${id}: pull request ${pull.repo}#${pull.number} ${status === 410 ? "was deleted (410 Gone)" : "was not found (404)"} while it was being mined`, { field: "number" });
    throw error;
  }
  const [apiCommits, files, reviews, reviewComments, comments] = lists as [Raw[], Raw[], Raw[], Raw[], Raw[]];
  const notes: string[] = [];
  const change = await referenceChange(options, pull, pr, id);
  let commits: CommitRow[] = apiCommits.map((c) => ({ sha: c.sha, message: c.commit.message, committed_at: c.commit.committer?.date ?? c.commit.author?.date }));
  if (apiCommits.length >= GITHUB_LIST_CAPS.commits) {
    if (change.headInGit) {
      commits = await commitsFromGit(change.git, change.base, pr.head.sha);
      notes.push(`pulls.listCommits stops at ${GITHUB_LIST_CAPS.commits} commits; all ${commits.length} were read from git (${change.base.slice(0, 12)}..${String(pr.head.sha).slice(0, 12)})`);
    } else {
      notes.push(`pulls.listCommits stops at ${GITHUB_LIST_CAPS.commits} commits and the head ${pr.head.sha} is not in git: commits after the ${GITHUB_LIST_CAPS.commits}th are missing, and so are their closing keywords`);
    }
  }
  let changedFiles = files.map((f) => String(f.filename));
  if (files.length >= GITHUB_LIST_CAPS.files) {
    changedFiles = (await change.git(["diff", "--name-only", "--no-renames", "-z", change.base, change.target])).split("\0").filter(Boolean);
    notes.push(`pulls.listFiles stops at ${GITHUB_LIST_CAPS.files} files; all ${changedFiles.length} were read from git`);
  }
  const links = await findLinks(options, pull, pr, commits, notes);
  const issues = await fetchIssues(octokit, links, notes);
  // A PENDING review was never submitted: nobody but its author has seen it, and it has no time.
  const submitted = reviews.filter((r) => r.state !== "PENDING");
  const discussion = [
    ...comments.map((c) => discussionItem("issue_comment", c)),
    ...submitted.map((r) => discussionItem("review", r)),
    ...reviewComments.map((c) => discussionItem("review_comment", c)),
  ].sort(byTime);
  return Candidate.parse({
    id,
    repo: pull.repo,
    pull_number: pull.number,
    base_commit: change.base,
    created_at: pr.created_at,
    source: { kind: "github", api_url: pr.html_url },
    reference_diff: change.diff,
    issues,
    notes,
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
      commits,
      changed_files: [...new Set(changedFiles)].sort(),
      discussion,
    },
  });
}
