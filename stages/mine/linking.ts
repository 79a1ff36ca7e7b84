import type {
  ClosedEvent,
  Commit,
  Issue as GraphqlIssue,
  IssueConnection,
  PageInfo,
  PullRequest as GraphqlPullRequest,
  Repository,
} from "@octokit/graphql-schema";
import type { CachedGraphql, GraphqlAnswer } from "../../pipeline/github-recording.ts";
import type { LinkSource } from "../../pipeline/schemas/candidate.ts";
import { goneStatus, isForbidden, type MinePullOptions, ownerAndName, type PullSummary, type TimelineEvent } from "./github-api.ts";
import { closingReferences, type IssueRef, mentions } from "./issue-references.ts";

/**
 * The issues a merged pull request is linked to, and how each link was found: one function per
 * way of finding them (GitHub's closing references and the closers of mentioned issues over
 * GraphQL, closing keywords in text, closed events on REST timelines), and findLinks, which
 * chooses by what the run has. A plain mention never links.
 */

/** Mentioned issues whose closers one GraphQL query asks about; more are left to keywords. */
const MAX_MENTIONS_PER_QUERY = 30;
/** Mentioned issues whose REST timelines are read without GraphQL (each is one request or more). */
const MAX_MENTIONS_REST = 10;

const refKey = (ref: IssueRef) => `${ref.repo.toLowerCase()}#${ref.number}`;

/** An issue the pull request is linked to, with every source that links it. */
export interface Link {
  ref: IssueRef;
  sources: LinkSource[];
}

/** The links found so far, in the order found; a pull request never links itself. */
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

/** What the strategies read of the pull request: who it is, and every commit that is its own. */
interface LinkedPull {
  ref: IssueRef;
  pull: PullSummary;
  /** The merge commit, the head and every listed commit: a closed event naming one of them is this PR's. */
  shas: Set<string>;
}

/**
 * Closing keywords (`Fixes #12`) in the description and in commit messages, in that order. A
 * description is Markdown, where code does not link; a commit message is plain text.
 */
export function keywordLinks(body: string, commits: { message: string }[], repo: string): [IssueRef, LinkSource][] {
  return [
    ...closingReferences(body, repo).map((ref): [IssueRef, LinkSource] => [ref, "pr_body_keyword"]),
    ...commits.flatMap((c) => closingReferences(c.message, repo, "commit_message").map((ref): [IssueRef, LinkSource] => [ref, "commit_keyword"])),
  ];
}

type Named = { repository: Pick<Repository, "nameWithOwner"> };
/** The part of GraphQL's PullRequest.closingIssuesReferences the query asks for. */
type ClosingReferences = Pick<IssueConnection, "totalCount"> & {
  pageInfo: Pick<PageInfo, "hasNextPage" | "endCursor">;
  nodes: (Pick<GraphqlIssue, "number"> & Named)[];
};
type Closer =
  ({ __typename: "PullRequest" } & Pick<GraphqlPullRequest, "number"> & Named) | ({ __typename: "Commit" } & Pick<Commit, "oid">) | { __typename: "ProjectV2" };
/** What the query asks of one mentioned issue: its type, and the closers of its ClosedEvents. */
type MentionAnswer = {
  issueOrPullRequest:
    | { __typename: "Issue"; timelineItems: { nodes: ((Pick<ClosedEvent, "__typename"> & { closer: Closer | null }) | null)[] } }
    | { __typename: "PullRequest" }
    | null;
} | null;
type LinkAnswer = { repository: { pullRequest: { closingIssuesReferences: ClosingReferences | null } | null } | null } & Record<`m${number}`, MentionAnswer>;

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
 * GitHub's own record of the issues the PR closes (closingIssuesReferences, every page: the only
 * source for links made in the "Development" sidebar), and the mentioned issues whose
 * ClosedEvent.closer is this PR or one of its commits (`timeline`).
 */
async function graphqlLinks(graphql: CachedGraphql, linked: LinkedPull, asked: IssueRef[]): Promise<{ closing: IssueRef[]; closedByThis: IssueRef[] }> {
  const { pull } = linked;
  const variables: Record<string, unknown> = { owner: ownerAndName(pull.repo).owner, name: ownerAndName(pull.repo).repo, number: pull.number, after: null };
  asked.forEach((ref, i) =>
    Object.assign(variables, { [`m${i}o`]: ownerAndName(ref.repo).owner, [`m${i}n`]: ownerAndName(ref.repo).repo, [`m${i}i`]: ref.number }),
  );
  const freshness = String(pull.pull.updated_at);
  const closing: IssueRef[] = [];
  // The first answer has the mentions; later pages of closing references do not ask for them.
  const first = await graphql(linkQuery(asked.length), variables, freshness);
  for (let answer: GraphqlAnswer = first; ;) {
    const refs = (answer.data as LinkAnswer).repository?.pullRequest?.closingIssuesReferences;
    if (!refs)
      throw new Error(
        `GitHub's GraphQL API returned no closing references for ${pull.repo}#${pull.number}: ${answer.errors.map((e) => e.message).join("; ") || "no data"}`,
      );
    for (const node of refs.nodes) closing.push({ repo: node.repository.nameWithOwner, number: node.number });
    if (!refs.pageInfo.hasNextPage) break;
    answer = await graphql(linkQuery(0), { owner: variables.owner, name: variables.name, number: pull.number, after: refs.pageInfo.endCursor }, freshness);
  }
  const closedByThis = asked.filter((_, i) => {
    const issue = (first.data as LinkAnswer)[`m${i}`]?.issueOrPullRequest;
    // Gone, moved or a pull request: a mention of it links nothing.
    if (!issue || issue.__typename !== "Issue") return false;
    return (issue.timelineItems?.nodes ?? []).some((n) => {
      const closer = n?.closer;
      if (closer?.__typename === "PullRequest")
        return closer.number === pull.number && String(closer.repository?.nameWithOwner).toLowerCase() === pull.repo.toLowerCase();
      return closer?.__typename === "Commit" && linked.shas.has(closer.oid);
    });
  });
  return { closing, closedByThis };
}

/**
 * Without GraphQL: the mentioned issues whose REST timeline has a closed event naming one of the
 * PR's commits. GitHub leaves `commit_id` null when a pull request closes an issue, so this finds
 * commit closings only. Each mention costs its timeline's pages, so only the first few are read.
 */
async function restTimelineLinks(options: MinePullOptions, linked: LinkedPull, mentioned: IssueRef[], notes: string[]): Promise<IssueRef[]> {
  const followed = mentioned.slice(0, MAX_MENTIONS_REST);
  if (mentioned.length > followed.length)
    notes.push(`the description mentions ${mentioned.length} issues; the timelines of the first ${followed.length} only were read`);
  const closed: IssueRef[] = [];
  for (const ref of followed) {
    let timeline: TimelineEvent[];
    try {
      timeline = await options.octokit.paginate(options.octokit.rest.issues.listEventsForTimeline, {
        ...ownerAndName(ref.repo),
        issue_number: ref.number,
        per_page: 100,
      });
    } catch (error) {
      // A mention of something that does not exist, no longer does, or this token may not read, links nothing.
      if (isForbidden(error)) {
        notes.push(`mentioned issue ${ref.repo}#${ref.number}: ${error.message}; its timeline was not read`);
        continue;
      }
      const status = goneStatus(error);
      if (!status) throw error;
      if (status === 410) notes.push(`mentioned issue ${ref.repo}#${ref.number} was deleted (410 Gone); its timeline was not read`);
      continue;
    }
    if (timeline.some((e) => e.event === "closed" && "commit_id" in e && e.commit_id && linked.shas.has(e.commit_id))) closed.push(ref);
  }
  return closed;
}

/**
 * The issues a merged pull request is linked to, and how each link was found. With GraphQL:
 * GitHub's closing references first, then closing keywords in the description and in commit
 * messages, then mentioned issues closed by this PR or one of its commits. Without GraphQL (no
 * token): keywords, then mentioned issues closed by one of its commits (restTimelineLinks).
 */
export async function findLinks(options: MinePullOptions, pull: PullSummary, commits: { sha: string; message: string }[], notes: string[]): Promise<Link[]> {
  const pr = pull.pull;
  const ref = { repo: pull.repo, number: pull.number };
  const body = pr.body ?? "";
  const shas = new Set<string>([pr.merge_commit_sha, pr.head.sha, ...commits.map((c) => c.sha)].filter((s): s is string => Boolean(s)));
  const linked: LinkedPull = { ref, pull, shas };
  const links = new Links(ref);
  const keyword = keywordLinks(body, commits, pull.repo);
  const keyworded = new Set(keyword.map(([k]) => refKey(k)));
  const mentioned = mentions(body, pull.repo).filter((m) => !keyworded.has(refKey(m)) && refKey(m) !== refKey(ref));

  if (options.graphql) {
    const asked = mentioned.slice(0, MAX_MENTIONS_PER_QUERY);
    if (mentioned.length > asked.length)
      notes.push(`the description mentions ${mentioned.length} issues; what closed them was asked for the first ${asked.length} only`);
    const { closing, closedByThis } = await graphqlLinks(options.graphql, linked, asked);
    for (const r of closing) links.add(r, "closing_reference");
    for (const [r, source] of keyword) links.add(r, source);
    for (const r of closedByThis) links.add(r, "timeline");
    return links.list;
  }
  for (const [r, source] of keyword) links.add(r, source);
  for (const r of await restTimelineLinks(options, linked, mentioned, notes)) links.add(r, "timeline");
  return links.list;
}
