import type { RestEndpointMethodTypes } from "@octokit/rest";
import type { MirrorCache } from "../../pipeline/git.ts";
import type { GithubClient } from "../../pipeline/github-client.ts";
import { GithubForbidden } from "../../pipeline/github-plugins.ts";
import type { CachedGraphql } from "../../pipeline/github-recording.ts";

/**
 * What the miner reads of GitHub's REST API, in octokit's own types (GitHub's OpenAPI
 * description), what every room of the miner is given, and how a failed request reads.
 */

type Rest = RestEndpointMethodTypes;
/** A pull request as its own GET gives it. */
export type PullRequest = Rest["pulls"]["get"]["response"]["data"];
/** A pull request as the list gives it: the single GET's counts and merge state left out. */
export type ListedPullRequest = Rest["pulls"]["list"]["response"]["data"][number];
export type PullCommit = Rest["pulls"]["listCommits"]["response"]["data"][number];
export type PullFile = Rest["pulls"]["listFiles"]["response"]["data"][number];
export type Review = Rest["pulls"]["listReviews"]["response"]["data"][number];
export type ReviewComment = Rest["pulls"]["listReviewComments"]["response"]["data"][number];
export type IssueComment = Rest["issues"]["listComments"]["response"]["data"][number];
export type Issue = Rest["issues"]["get"]["response"]["data"];
export type TimelineEvent = Rest["issues"]["listEventsForTimeline"]["response"]["data"][number];

/** What the pull-request listing says of one merged PR: enough to key its cached result. */
export interface PullSummary {
  repo: string;
  number: number;
  /** The pull request as the listing (or a single GET) returned it. */
  pull: PullRequest | ListedPullRequest;
}

/** What mining one pull request needs: the REST client, GraphQL when there is a token, git. */
export interface MinePullOptions {
  octokit: GithubClient;
  /** GraphQL, when the run has a token (GitHub's GraphQL API refuses anonymous requests). */
  graphql?: CachedGraphql;
  mirrors: MirrorCache;
  cloneSource: (repo: string) => string;
}

/** A record's id: `owner__name-N`, as SWE-bench names its instances. */
export function candidateId(repo: string, number: number): string {
  return `${repo.replace("/", "__")}-${number}`;
}

/** The owner and name of `owner/name`, as octokit's parameters take them. */
export function ownerAndName(repo: string): { owner: string; repo: string } {
  const [owner, name] = repo.split("/");
  return { owner: owner!, repo: name! };
}

export function isNotFound(error: unknown): boolean {
  return (error as { status?: number }).status === 404;
}

/** GitHub's answer for something deleted (410 Gone) or never there (404). */
export function goneStatus(error: unknown): 404 | 410 | undefined {
  const status = (error as { status?: number }).status;
  return status === 404 || status === 410 ? status : undefined;
}

/** GitHub refuses this token the resource (a 403 that is no rate limit): a fact about the token, never transient. */
export function isForbidden(error: unknown): error is GithubForbidden {
  return error instanceof GithubForbidden;
}
