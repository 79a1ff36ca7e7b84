import { buildClientSchema, graphql, GraphQLError, type GraphQLSchema } from "graphql";
import type { Closer, IssueKey, RepoRecords } from "./records.ts";

let schemaPromise: Promise<GraphQLSchema> | undefined;

/**
 * GitHub's public GraphQL schema as `@octokit/graphql-schema` publishes it (its introspection
 * result: the SDL file of some versions defines fields twice). Loaded once, on first use, so
 * nothing that never serves GraphQL pays for it.
 */
export function githubGraphqlSchema(): Promise<GraphQLSchema> {
  schemaPromise ??= import("@octokit/graphql-schema").then(({ schema }) => buildClientSchema(schema.json as never));
  return schemaPromise;
}

type Node = Record<string, unknown>;

/** A NOT_FOUND error the way GitHub words it; formatted into GitHub's error shape below. */
function notFound(message: string): never {
  throw new GraphQLError(message, { extensions: { type: "NOT_FOUND" } });
}

function connection(items: unknown[], args: { first?: number; after?: string; last?: number }): Node {
  const cursor = (i: number) => Buffer.from(`cursor:v2:${i + 1}`).toString("base64");
  const start = args.after ? Number(Buffer.from(args.after, "base64").toString().split(":").pop()) : 0;
  let end = items.length;
  let from = start;
  if (args.first !== undefined) end = Math.min(items.length, start + args.first);
  if (args.last !== undefined) from = Math.max(start, end - args.last);
  const page = items.slice(from, end);
  return {
    totalCount: items.length,
    nodes: page,
    edges: page.map((node, i) => ({ node, cursor: cursor(from + i) })),
    pageInfo: {
      hasNextPage: end < items.length,
      hasPreviousPage: from > 0,
      startCursor: page.length ? cursor(from) : null,
      endCursor: page.length ? cursor(end - 1) : null,
    },
  };
}

/**
 * Answers GraphQL queries over the demo corpus's records by executing them against GitHub's real
 * schema, so a query the miner sends must be valid there and every answer has the schema's types.
 * It models what the miner asks: repositories, pull requests with `closingIssuesReferences`,
 * issues with their `ClosedEvent` timeline items and closers, and `rateLimit`. A deleted issue
 * and the old number of a transferred one resolve to NOT_FOUND.
 */
export class GraphqlFake {
  constructor(private readonly repos: Map<string, RepoRecords>) {}

  private repository(fullName: string): Node | null {
    const records = this.repos.get(fullName.toLowerCase());
    if (!records) return null;
    const name = String(records.repository.full_name);
    return {
      __typename: "Repository",
      nameWithOwner: name,
      name: name.split("/")[1],
      url: records.repository.html_url,
      databaseId: records.repository.id,
      pullRequest: ({ number }: { number: number }) =>
        this.pull(records, number) ?? notFound(`Could not resolve to a PullRequest with the number of ${number}.`),
      issue: ({ number }: { number: number }) => this.issue(records, number) ?? notFound(`Could not resolve to an Issue with the number of ${number}.`),
      issueOrPullRequest: ({ number }: { number: number }) =>
        this.pull(records, number) ?? this.issue(records, number) ?? notFound(`Could not resolve to an issue or pull request with the number of ${number}.`),
    };
  }

  private gone(records: RepoRecords, number: number): boolean {
    return records.deleted.includes(number) || Boolean(records.transferred[number]);
  }

  private pull(records: RepoRecords, number: number): Node | null {
    const pull = records.pulls[number];
    if (!pull) return null;
    const repo = String(records.repository.full_name);
    return {
      __typename: "PullRequest",
      number,
      databaseId: pull.id,
      title: pull.title,
      url: pull.html_url,
      updatedAt: pull.updated_at,
      merged: pull.merged,
      mergedAt: pull.merged_at,
      repository: () => this.repository(repo),
      closingIssuesReferences: (args: { first?: number; after?: string; last?: number }) =>
        connection((records.closing_references[number] ?? []).map((ref: IssueKey) => this.issueAt(ref)).filter(Boolean), args),
    };
  }

  private issueAt(ref: IssueKey): Node | null {
    const records = this.repos.get(ref.repo.toLowerCase());
    return records ? this.issue(records, ref.number) : null;
  }

  private issue(records: RepoRecords, number: number): Node | null {
    const issue = records.issues[number];
    if (!issue || issue.pull_request || this.gone(records, number)) return null;
    const repo = String(records.repository.full_name);
    return {
      __typename: "Issue",
      number,
      databaseId: issue.id,
      title: issue.title,
      url: issue.html_url,
      state: String(issue.state).toUpperCase(),
      closed: issue.state === "closed",
      closedAt: issue.closed_at,
      repository: () => this.repository(repo),
      timelineItems: (args: { itemTypes?: string[]; first?: number; after?: string; last?: number }) => {
        const closed = (records.closers[number] ?? []).map((closer) => this.closedEvent(closer));
        const wanted = !args.itemTypes || args.itemTypes.includes("CLOSED_EVENT");
        return connection(wanted ? closed : [], args);
      },
    };
  }

  private closedEvent(closer: Closer): Node {
    const node: Node =
      closer.type === "Commit"
        ? { __typename: "Commit", oid: closer.oid }
        : { ...(this.pull(this.repos.get(closer.repo.toLowerCase())!, closer.number) ?? {}) };
    return { __typename: "ClosedEvent", closer: node };
  }

  /** Executes one request body; the answer is GitHub's envelope: `data`, and `errors` when any. */
  async execute(
    body: { query?: unknown; variables?: unknown },
    rate: { limit: number; remaining: number; used: number; resetAt: string },
  ): Promise<Record<string, unknown>> {
    if (typeof body.query !== "string") return { errors: [{ message: "A query attribute must be specified and must be a string." }] };
    const schema = await githubGraphqlSchema();
    const rootValue = {
      repository: ({ owner, name }: { owner: string; name: string }) =>
        this.repository(`${owner}/${name}`) ?? notFound(`Could not resolve to a Repository with the name '${owner}/${name}'.`),
      rateLimit: () => ({ cost: 1, limit: rate.limit, remaining: rate.remaining, used: rate.used, resetAt: rate.resetAt, nodeCount: 1 }),
    };
    const result = await graphql({ schema, source: body.query, rootValue, variableValues: (body.variables ?? {}) as Record<string, unknown> });
    const answer: Record<string, unknown> = {};
    if (result.data !== undefined) answer.data = result.data;
    if (result.errors?.length) {
      answer.errors = result.errors.map((e) => ({
        ...(e.extensions?.type ? { type: e.extensions.type } : {}),
        ...(e.path ? { path: e.path } : {}),
        ...(e.locations ? { locations: e.locations } : {}),
        message: e.message,
      }));
    }
    return answer;
  }
}
