import type { CachedGraphql, GithubClient } from "../../pipeline/github-client.ts";
import { GITHUB_LIST_CAPS } from "../../pipeline/github-plugins.ts";
import type { MirrorCache } from "../../pipeline/git.ts";
import { Candidate, LINK_SOURCES, type DiscussionItem, type LinkedIssue, type LinkSource } from "../../pipeline/schemas/candidate.ts";
import { RecordError } from "../../pipeline/engine/stage.ts";
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
/** Mentioned issues whose REST timelines are read without GraphQL (each is one request or more). */
const MAX_MENTIONS_REST = 10;

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

/** What listing a repository's pull requests gave: the merged ones, numbers GitHub lacks, and numbers that were never merged. */
export interface ListedPulls {
  pulls: PullSummary[];
  missing: { number: number; status: 404 | 410 }[];
  unmerged: { number: number; state: string }[];
  /** Pages of the pull-request list read (a window's cost). */
  pages: number;
}

/**
 * Merged pull requests of a repository, oldest first: from a list of numbers (numbers GitHub does
 * not have, 404, or has deleted, 410, and numbers never merged returned apart), or in a
 * creation-date window (see listWindow).
 */
export async function listMergedPulls(octokit: GithubClient, target: MineTarget): Promise<ListedPulls> {
  const summary = (p: Raw): PullSummary => ({ repo: target.repo, number: p.number, pull: p });
  if (target.numbers?.length) {
    const listed: ListedPulls = { pulls: [], missing: [], unmerged: [], pages: 0 };
    for (const number of target.numbers) {
      try {
        const { data } = await octokit.rest.pulls.get({ ...split(target.repo), pull_number: number });
        if (data.merged_at) listed.pulls.push(summary(data));
        else listed.unmerged.push({ number, state: data.state });
      } catch (error) {
        const status = isGone(error);
        if (!status) throw error;
        listed.missing.push({ number, status });
      }
    }
    return listed;
  }
  const { pulls, pages } = await listWindow(octokit, target);
  return { pulls: pulls.filter((p) => p.merged_at).map((p) => summary(p)), missing: [], unmerged: [], pages };
}

const PER_PAGE = 100;

/** The page number a Link header's rel="last" names, or undefined when there is none (a single page). */
function lastPage(link: string | undefined): number | undefined {
  const m = /<([^>]+)>;\s*rel="last"/.exec(link ?? "");
  const page = m ? new URL(m[1]!).searchParams.get("page") : null;
  return page ? Number(page) : undefined;
}

/**
 * Closed pull requests created in [since, until), oldest first, at a cost proportional to the
 * window rather than to the repository's history: the list is read newest first (GitHub's
 * sort=created, direction=desc), the first page holding the window's newest end is found by
 * bisecting page numbers (log2 of the pages, from the first page's rel="last"), and pages are
 * read from there until one starts before the window. Dates are compared as instants.
 */
async function listWindow(octokit: GithubClient, target: MineTarget): Promise<{ pulls: Raw[]; pages: number }> {
  const since = target.since ? Date.parse(target.since) : Number.NEGATIVE_INFINITY;
  const until = target.until ? Date.parse(target.until) : Number.POSITIVE_INFINITY;
  const pages = new Map<number, Raw[]>();
  let last = 1;
  const page = async (n: number): Promise<Raw[]> => {
    let items = pages.get(n);
    if (!items) {
      const response = await octokit.rest.pulls.list({
        ...split(target.repo),
        state: "closed",
        sort: "created",
        direction: "desc",
        per_page: PER_PAGE,
        page: n,
      });
      items = response.data as Raw[];
      pages.set(n, items);
      if (n === 1) last = lastPage(response.headers.link) ?? 1;
    }
    return items;
  };
  const created = (p: Raw) => Date.parse(String(p.created_at));
  const oldest = (items: Raw[]) => (items.length ? created(items[items.length - 1]!) : Number.NEGATIVE_INFINITY);
  await page(1);
  // The first page whose oldest pull request is older than `until` (pages before it are all newer).
  let start = 1;
  if (Number.isFinite(until) && oldest(await page(1)) >= until) {
    let lo = 2;
    let hi = last;
    start = last + 1;
    while (lo <= hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (oldest(await page(mid)) < until) {
        start = mid;
        hi = mid - 1;
      } else lo = mid + 1;
    }
  }
  const inWindow: Raw[] = [];
  for (let n = start; n <= last; n++) {
    const items = await page(n);
    for (const p of items) if (created(p) >= since && created(p) < until) inWindow.push(p);
    if (oldest(items) < since) break;
  }
  inWindow.sort((a, b) => created(a) - created(b) || a.number - b.number);
  return { pulls: inWindow, pages: pages.size };
}

/** GitHub's own anchor for an item of a pull request's page, for an answer that lacks its html_url. */
function anchorOf(kind: DiscussionItem["kind"], raw: Raw, pageUrl: string): string {
  const anchor = kind === "review" ? `pullrequestreview-${raw.id}` : kind === "review_comment" ? `discussion_r${raw.id}` : `issuecomment-${raw.id}`;
  return `${pageUrl}#${anchor}`;
}

function discussionItem(kind: DiscussionItem["kind"], raw: Raw, pageUrl: string): DiscussionItem {
  return {
    kind,
    id: raw.id,
    url: typeof raw.html_url === "string" && raw.html_url ? raw.html_url : anchorOf(kind, raw, pageUrl),
    author: raw.user?.login ?? "ghost",
    author_type: raw.user?.type ?? "User",
    created_at: raw.submitted_at ?? raw.created_at,
    body: raw.body ?? "",
    ...(raw.state ? { state: raw.state } : {}),
    ...(raw.path ? { path: raw.path, line: raw.line ?? raw.original_line ?? null } : {}),
    ...(raw.in_reply_to_id ? { in_reply_to: raw.in_reply_to_id } : {}),
    ...(kind === "review_comment" && typeof raw.pull_request_review_id === "number" ? { review_id: raw.pull_request_review_id } : {}),
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
  const parts = Array.from(
    { length: mentionCount },
    (_, i) => `  m${i}: repository(owner: $m${i}o, name: $m${i}n) {\n    issueOrPullRequest(number: $m${i}i) {\n      ${CLOSERS}\n    }\n  }`,
  ).join("\n");
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
  const mentioned = mentions(pr.body ?? "", pull.repo).filter(
    (ref) => !keyworded.has(refKey(ref)) && refKey(ref) !== refKey({ repo: pull.repo, number: pull.number }),
  );

  if (graphql) {
    const asked = mentioned.slice(0, MAX_MENTIONS_PER_QUERY);
    if (mentioned.length > asked.length)
      notes.push(`the description mentions ${mentioned.length} issues; what closed them was asked for the first ${asked.length} only`);
    const variables: Record<string, unknown> = { owner: split(pull.repo).owner, name: split(pull.repo).repo, number: pull.number, after: null };
    asked.forEach((ref, i) => Object.assign(variables, { [`m${i}o`]: split(ref.repo).owner, [`m${i}n`]: split(ref.repo).repo, [`m${i}i`]: ref.number }));
    const query = linkQuery(asked.length);
    const closingRefs: IssueRef[] = [];
    // The first answer has the mentions; later pages of closing references do not ask for them.
    const first = await graphql(query, variables, String(pr.updated_at));
    let answer = first;
    for (;;) {
      const refs = (answer.data.repository as Raw | null)?.pullRequest?.closingIssuesReferences;
      if (!refs)
        throw new Error(
          `GitHub's GraphQL API returned no closing references for ${pull.repo}#${pull.number}: ${answer.errors.map((e) => e.message).join("; ") || "no data"}`,
        );
      for (const node of refs.nodes as Raw[]) closingRefs.push({ repo: node.repository.nameWithOwner, number: node.number });
      if (!refs.pageInfo.hasNextPage) break;
      answer = await graphql(
        linkQuery(0),
        { owner: variables.owner, name: variables.name, number: pull.number, after: refs.pageInfo.endCursor },
        String(pr.updated_at),
      );
    }
    for (const ref of closingRefs) links.add(ref, "closing_reference");
    for (const [ref, source] of keyword) links.add(ref, source);
    asked.forEach((ref, i) => {
      const issue = (first.data[`m${i}`] as Raw | null)?.issueOrPullRequest;
      // Gone, moved or a pull request: a mention of it links nothing.
      if (!issue || issue.__typename !== "Issue") return;
      const closedByThis = (issue.timelineItems?.nodes ?? []).some((n: Raw) => {
        const closer = n?.closer;
        if (closer?.__typename === "PullRequest")
          return closer.number === pull.number && String(closer.repository?.nameWithOwner).toLowerCase() === pull.repo.toLowerCase();
        return closer?.__typename === "Commit" && prCommits.has(closer.oid);
      });
      if (closedByThis) links.add(ref, "timeline");
    });
    return links.list;
  }

  for (const [ref, source] of keyword) links.add(ref, source);
  // Each mention costs its timeline's pages: a bot's description can name dozens.
  const followed = mentioned.slice(0, MAX_MENTIONS_REST);
  if (mentioned.length > followed.length)
    notes.push(`the description mentions ${mentioned.length} issues; the timelines of the first ${followed.length} only were read`);
  for (const ref of followed) {
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
      notes.push(
        `linked issue ${ref.repo}#${ref.number} (${sources.join(", ")}) ${status === 410 ? "was deleted (410 Gone)" : "does not exist (404)"}; the link is skipped`,
      );
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
      notes.push(
        `linked issue ${at.repo}#${at.number} (${sources.join(", ")}) ${status === 410 ? "was deleted (410 Gone)" : "does not exist (404)"} while its comments were read; the link is skipped`,
      );
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
      comments: issueComments
        .map((c) => discussionItem("issue_comment", c as Raw, String(issue.html_url ?? `https://github.com/${at.repo}/issues/${at.number}`)))
        .sort(byTime),
    });
  }
  return issues;
}

/**
 * The reference change, from git so that it is exact: base = the merge base of the PR's base and
 * head, target = its head (from the clone, or GitHub's refs/pull/N/head, which a mirror fetches);
 * when the head is in neither, the merge (or squash) commit against its first parent. When git
 * has none of these (force-pushed away, a merge GitHub computed and never pushed), the pull
 * request is rejected naming what is missing: a fact about the repository, cached.
 */
async function referenceChange(
  options: MinePullOptions,
  pull: PullSummary,
  pr: Raw,
  id: string,
): Promise<{ base: string; target: string; headInGit: boolean; diff: string; git: (args: string[]) => Promise<string>; notes: string[] }> {
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
    target = pr.merge_commit_sha;
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

/** What GitHub records of a merged pull request besides its change: its history, for reconstruct. */
export interface PullHistory {
  issues: LinkedIssue[];
  notes: string[];
  pull_request: Candidate["pull_request"] & object;
}

/** The reference change's commits, and git to read them with. */
type ReferenceCommits = { base: string; target: string; headInGit: boolean; git: (args: string[]) => Promise<string> };

/**
 * A merged pull request's history: its commits, files, reviews, review comments and comments,
 * and its linked issues (see findLinks; plain mentions never count). Lists GitHub caps (commits,
 * files) are completed from git when `change` gives the reference change's commits.
 */
export async function minePullHistory(options: MinePullOptions, pull: PullSummary, change?: ReferenceCommits): Promise<PullHistory> {
  const { octokit } = options;
  const pr = pull.pull as Raw;
  const [apiCommits, files, reviews, reviewComments, comments] = await listsOfPull(options, pull);
  const notes: string[] = [];
  // GitHub answers a renamed (or moved) repository's old name; its pull requests name the new one.
  const now = (pr.base as { repo?: { full_name?: unknown } } | undefined)?.repo?.full_name;
  if (typeof now === "string" && now.toLowerCase() !== pull.repo.toLowerCase())
    notes.push(`GitHub names this repository ${now} now (renamed or moved from ${pull.repo}); mined under the name the config gives`);
  const { commits, changedFiles } = await completedFromGit(apiCommits, files, pr, notes, change);
  const links = await findLinks(options, pull, pr, commits, notes);
  const issues = await fetchIssues(octokit, links, notes);
  // A PENDING review was never submitted: nobody but its author has seen it, and it has no time.
  // A COMMENTED review with no text only carries its line comments (listed on their own).
  const submitted = reviews.filter((r) => r.state !== "PENDING" && !(r.state === "COMMENTED" && !String(r.body ?? "").trim()));
  const page = String(pr.html_url ?? `https://github.com/${pull.repo}/pull/${pull.number}`);
  const discussion = [
    ...comments.map((c) => discussionItem("issue_comment", c, page)),
    ...submitted.map((r) => discussionItem("review", r, page)),
    ...reviewComments.map((c) => discussionItem("review_comment", c, page)),
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
      merged_at: pr.merged_at,
      head_sha: pr.head.sha,
      merge_commit_sha: pr.merge_commit_sha ?? null,
      commits,
      changed_files: [...new Set(changedFiles)].sort(),
      discussion,
    },
  };
}

/** The five lists of a pull request GitHub gives: commits, files, reviews, review comments, comments. */
async function listsOfPull({ octokit }: MinePullOptions, pull: PullSummary): Promise<[Raw[], Raw[], Raw[], Raw[], Raw[]]> {
  const id = `${pull.repo.replace("/", "__")}-${pull.number}`;
  const where = { ...split(pull.repo), per_page: 100 };
  let lists: Raw[][];
  try {
    // Settled together: when one list fails, the others are waited for (they fail fast if GitHub
    // is out of reach), so no request of this pull request is still under way once it is reported.
    const settled = await Promise.allSettled([
      octokit.paginate(octokit.rest.pulls.listCommits, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.pulls.listFiles, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.pulls.listReviews, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.pulls.listReviewComments, { ...where, pull_number: pull.number }),
      octokit.paginate(octokit.rest.issues.listComments, { ...where, issue_number: pull.number }),
    ]);
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    lists = settled.map((r) => (r as PromiseFulfilledResult<Raw[]>).value);
  } catch (error) {
    const status = isGone(error);
    if (status)
      throw new RecordError(
        "not_found",
        `${id}: pull request ${pull.repo}#${pull.number} ${status === 410 ? "was deleted (410 Gone)" : "was not found (404)"} while it was being mined`,
        { field: "number" },
      );
    throw error;
  }
  return lists as [Raw[], Raw[], Raw[], Raw[], Raw[]];
}

/** The commits and changed files, completed from git where GitHub's lists stop at their caps (each case noted). */
async function completedFromGit(
  apiCommits: Raw[],
  files: Raw[],
  pr: Raw,
  notes: string[],
  change?: ReferenceCommits,
): Promise<{ commits: CommitRow[]; changedFiles: string[] }> {
  let commits: CommitRow[] = apiCommits.map((c) => ({
    sha: c.sha,
    message: c.commit.message,
    committed_at: c.commit.committer?.date ?? c.commit.author?.date,
  }));
  if (apiCommits.length >= GITHUB_LIST_CAPS.commits) {
    if (change?.headInGit) {
      commits = await commitsFromGit(change.git, change.base, change.target);
      notes.push(
        `pulls.listCommits stops at ${GITHUB_LIST_CAPS.commits} commits; all ${commits.length} were read from git (${change.base.slice(0, 12)}..${change.target.slice(0, 12)})`,
      );
    } else {
      notes.push(
        `pulls.listCommits stops at ${GITHUB_LIST_CAPS.commits} commits and the head ${pr.head.sha} is not read from git: commits after the ${GITHUB_LIST_CAPS.commits}th are missing, and so are their closing keywords`,
      );
    }
  }
  let changedFiles = files.map((f) => String(f.filename));
  if (files.length >= GITHUB_LIST_CAPS.files && change) {
    changedFiles = (await change.git(["diff", "--name-only", "--no-renames", "-z", change.base, change.target])).split("\0").filter(Boolean);
    notes.push(`pulls.listFiles stops at ${GITHUB_LIST_CAPS.files} files; all ${changedFiles.length} were read from git`);
  } else if (files.length >= GITHUB_LIST_CAPS.files) notes.push(`pulls.listFiles stops at ${GITHUB_LIST_CAPS.files} files: the list is cut there`);
  return { commits, changedFiles };
}

/**
 * Mines one merged pull request into a candidate: its history (minePullHistory) and the reference
 * change from git (referenceChange).
 */
export async function minePull(options: MinePullOptions, pull: PullSummary): Promise<Candidate> {
  const id = `${pull.repo.replace("/", "__")}-${pull.number}`;
  const pr = pull.pull as Raw;
  if (!pr.merged_at) throw new RecordError("not_merged", `${id}: pull request ${pull.repo}#${pull.number} is not merged`, { field: "merged_at" });
  const change = await referenceChange(options, pull, pr, id);
  const history = await minePullHistory(options, pull, change);
  return Candidate.parse({
    id,
    repo: pull.repo,
    pull_number: pull.number,
    base_commit: change.base,
    created_at: pr.created_at,
    source: { kind: "github", api_url: history.pull_request.url },
    reference_diff: change.diff,
    issues: history.issues,
    notes: [...change.notes, ...history.notes],
    pull_request: history.pull_request,
  });
}

/**
 * A SWE-bench-family record with its pull request's history from GitHub (discussion, review
 * rounds, linked issues), so reconstruct gives it the requests a mined pull request gets. Its base
 * revision, patches, tests and problem statement stay the record's own. A pull request GitHub
 * does not have, or that was not merged, leaves the record as it is, with a note saying why.
 */
export async function enrichRecord(options: MinePullOptions, candidate: Candidate): Promise<Candidate> {
  if (!candidate.pull_number) return Candidate.parse({ ...candidate, notes: [...candidate.notes, "not enriched: the record names no pull request"] });
  let pr: Raw;
  try {
    pr = (await options.octokit.rest.pulls.get({ ...split(candidate.repo), pull_number: candidate.pull_number })).data as Raw;
  } catch (error) {
    const status = isGone(error);
    if (!status) throw error;
    return Candidate.parse({
      ...candidate,
      notes: [...candidate.notes, `not enriched: GitHub has no pull request ${candidate.repo}#${candidate.pull_number} (${status})`],
    });
  }
  if (!pr.merged_at)
    return Candidate.parse({ ...candidate, notes: [...candidate.notes, `not enriched: ${candidate.repo}#${candidate.pull_number} was not merged`] });
  const history = await minePullHistory(options, { repo: candidate.repo, number: candidate.pull_number, pull: pr });
  return Candidate.parse({
    ...candidate,
    issues: history.issues,
    pull_request: history.pull_request,
    notes: [
      ...candidate.notes,
      ...history.notes,
      `enriched from GitHub: ${history.pull_request.discussion.length} discussion item(s) (review rounds become requests after the first), ${history.issues.length} linked issue(s) (${
        history.issues.map((i) => `${i.repo}#${i.number}`).join(", ") || "none"
      }: provenance of stage 1 only); stage 1 stays the record's own problem statement`,
    ],
  });
}
