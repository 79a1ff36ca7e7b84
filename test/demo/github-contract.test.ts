import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { validate as validateGraphql } from "@octokit/graphql-schema";
import { beforeAll, describe, expect, it } from "vitest";
import { demoCorpus } from "../helpers/demo-corpus.ts";
import { FakeGithub, type RequestLogEntry } from "../../demo/github-server.ts";
import type { RepoRecords } from "../../demo/records.ts";
import { runProjectOnce } from "../../pipeline/project/project.ts";
import { mineStage } from "../../stages/mine/index.ts";
import { prepareDemoCopy } from "../helpers/demo-copy.ts";
import { GithubOpenApi } from "../helpers/github-openapi.ts";
import { fileTempDir } from "../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../data/demo/corpus.yaml", import.meta.url));

/**
 * The contract between the local API and GitHub: every answer the fake server gives, for every
 * record of the demo corpus and every status it can send, is checked against the response schema
 * GitHub publishes for that operation and status (@octokit/openapi), and every GraphQL query the
 * miner sends is checked against GitHub's published GraphQL schema (@octokit/graphql-schema).
 */
describe("the local GitHub API against GitHub's published API description", () => {
  let corpusDir: string;
  let openapi: GithubOpenApi;
  const answers: RequestLogEntry[] = [];
  let repos: RepoRecords[];

  async function withServer(
    options: Partial<ConstructorParameters<typeof FakeGithub>[0]>,
    work: (server: FakeGithub, get: (path: string, headers?: Record<string, string>) => Promise<Response>) => Promise<void>,
  ): Promise<void> {
    const server = new FakeGithub({ recordsDir: join(corpusDir, "github"), captureResponses: true, ...options });
    const base = await server.start();
    try {
      await work(server, (path, headers = {}) => fetch(base + path, { headers: { authorization: "token t", ...headers }, redirect: "manual" }));
    } finally {
      await server.stop();
      answers.push(...server.log.filter((e) => e.response));
    }
  }

  beforeAll(async () => {
    corpusDir = fileTempDir();
    await demoCorpus(plan, corpusDir);
    repos = readdirSync(join(corpusDir, "github"))
      .sort()
      .map((f) => JSON.parse(readFileSync(join(corpusDir, "github", f), "utf8")));
    openapi = new GithubOpenApi();

    // What the miner asks, with a token (GraphQL) and without (REST timelines), as it asks it.
    for (const mine of [{}, { graphql: "off" }]) {
      const demo = await prepareDemoCopy(fileTempDir(), { corpusDir, mine: { wait_unit_ms: 5, ...mine } });
      await demo.server.stop();
      const server = new FakeGithub({ recordsDir: join(corpusDir, "github"), captureResponses: true });
      const url = await server.start();
      const config = demo.options.stageConfigs.mine as any;
      await runProjectOnce({
        ...demo.options,
        stages: [mineStage],
        stageConfigs: { ...demo.options.stageConfigs, mine: { ...config, github: { ...config.github, api_url: url } } },
      });
      await server.stop();
      answers.push(...server.log.filter((e) => e.response || e.graphql));
    }

    // Every record the fake holds, through every endpoint, page by page, following Link headers.
    await withServer({}, async (_server, get) => {
      const crawl = async (path: string) => {
        for (let next: string | undefined = path; next;) {
          const response = await get(next);
          const link = response.headers.get("link") ?? "";
          next = /<[^>]*?(\/repositories\/[^>]+)>; rel="next"/.exec(link)?.[1];
          await response.arrayBuffer();
        }
      };
      for (const records of repos) {
        const name = String(records.repository.full_name);
        await crawl(`/repos/${name}`);
        await crawl(`/repos/${name}/pulls?state=all&per_page=7`);
        for (const n of Object.keys(records.pulls)) {
          await crawl(`/repos/${name}/pulls/${n}`);
          for (const list of ["commits", "files", "reviews", "comments"]) await crawl(`/repos/${name}/pulls/${n}/${list}?per_page=100`);
        }
        for (const n of Object.keys(records.issues)) {
          for (const tail of ["", "/comments?per_page=100", "/timeline?per_page=100"]) await crawl(`/repos/${name}/issues/${n}${tail}`);
        }
        for (const n of [...records.deleted, ...Object.keys(records.transferred).map(Number)]) {
          for (const tail of ["", "/comments", "/timeline"]) await crawl(`/repos/${name}/issues/${n}${tail}`);
        }
      }
      await crawl("/rate_limit");
      await crawl("/repos/demo-org/geometry/issues/99999");
      await crawl("/repos/demo-org/no-such-repo/pulls/1");
    });

    // Every status the fake can send for reasons other than the records: 304, 403 (primary and
    // secondary, with and without Retry-After), 429, 5xx.
    await withServer({ rateLimit: 4, rateWindowMs: 600_000 }, async (server, get) => {
      const first = await get("/repos/demo-org/geometry/pulls/3");
      await get("/repos/demo-org/geometry/pulls/3", { "if-none-match": first.headers.get("etag")! });
      server.inject(
        { kind: "secondary_rate_limit", count: 1, retryAfterSeconds: 30 },
        { kind: "secondary_rate_limit", count: 1 },
        { kind: "too_many_requests", count: 1, retryAfterSeconds: 5 },
        { kind: "too_many_requests", count: 1 },
      );
      for (let i = 0; i < 4; i++) await get("/repos/demo-org/geometry/pulls/3/commits");
      server.inject({ kind: "server_error", count: 1, status: 500 }, { kind: "server_error", count: 1, status: 503 });
      await get("/repos/demo-org/geometry/pulls/3");
      await get("/repos/demo-org/geometry/pulls/3");
      for (let i = 0; i < 6; i++) await get("/repos/demo-org/geometry/pulls/3/files");
    });
  }, 600_000);

  it("gives every REST answer the shape GitHub publishes for its operation and status", () => {
    const rest = answers.filter((e) => e.response && !e.graphql && e.path !== "/graphql");
    const problems: string[] = [];
    const covered = new Map<string, Set<number>>();
    for (const entry of rest) {
      const operation = openapi.operation(entry.path);
      if (!operation) {
        problems.push(`${entry.method} ${entry.path}: no GitHub operation has this path`);
        continue;
      }
      const body = entry.response!.body === "" ? undefined : JSON.parse(entry.response!.body);
      const { against, errors } = openapi.check(operation, entry.status, body);
      for (const e of errors) problems.push(`${entry.path} ${entry.status} (${against}): ${e}`);
      if (!covered.has(operation.operationId)) covered.set(operation.operationId, new Set());
      covered.get(operation.operationId)!.add(entry.status);
    }
    expect(problems.slice(0, 30)).toEqual([]);
    // Each endpoint the miner calls was checked, and every status the fake can send.
    const mined = [
      "pulls/list",
      "pulls/get",
      "pulls/list-commits",
      "pulls/list-files",
      "pulls/list-reviews",
      "pulls/list-review-comments",
      "issues/get",
      "issues/list-comments",
      "issues/list-events-for-timeline",
    ];
    for (const id of mined) expect(covered.get(id)?.has(200), id).toBe(true);
    const statuses = new Set(rest.map((e) => e.status));
    for (const status of [200, 301, 304, 403, 404, 410, 429, 500, 503]) expect(statuses.has(status), String(status)).toBe(true);
    expect(rest.length).toBeGreaterThan(1000);
  });

  it("sends GitHub's headers: Link URLs in the /repositories/{id} form, rate-limit headers, Location on a 301", () => {
    const rest = answers.filter((e) => e.response && e.path !== "/graphql" && e.status > 0);
    const links = rest.flatMap((e) => (e.response!.headers.link ? e.response!.headers.link.split(", ") : []));
    expect(links.length).toBeGreaterThan(10);
    for (const link of links) expect(link).toMatch(/^<http:\/\/127\.0\.0\.1:\d+\/repositories\/\d+\/[^>]+[?&]page=\d+[^>]*>; rel="(next|last|first|prev)"$/);
    for (const e of rest.filter((x) => x.status !== 500 && x.status !== 503)) {
      expect(e.response!.headers, e.path).toMatchObject({
        "x-ratelimit-limit": expect.any(String),
        "x-ratelimit-remaining": expect.any(String),
        "x-ratelimit-reset": expect.any(String),
        "x-ratelimit-resource": "core",
      });
    }
    const moved = rest.filter((e) => e.status === 301);
    expect(moved.length).toBeGreaterThan(0);
    for (const e of moved) expect(e.response!.headers.location).toMatch(/\/repositories\/\d+\/issues\/\d+/);
    // Primary limit: remaining 0 with a reset time; secondary: Retry-After when given, never otherwise.
    expect(rest.some((e) => e.status === 403 && e.response!.headers["x-ratelimit-remaining"] === "0")).toBe(true);
    expect(rest.some((e) => e.status === 403 && e.response!.headers["retry-after"] === "30")).toBe(true);
    expect(rest.some((e) => e.status === 429 && !("retry-after" in e.response!.headers))).toBe(true);
  });

  it("sends only GraphQL queries GitHub's schema accepts, and answers them with GitHub's envelope", () => {
    const queries = answers.filter((e) => e.graphql);
    expect(queries.length).toBeGreaterThanOrEqual(repos.reduce((n, r) => n + Object.keys(r.pulls).length, 0));
    const shapes = new Set(queries.map((e) => e.graphql!.query));
    for (const query of shapes) expect(validateGraphql(query).map((e: Error) => e.message)).toEqual([]);
    for (const e of queries) {
      const body = JSON.parse(e.response!.body);
      expect(e.response!.headers["x-ratelimit-resource"]).toBe("graphql");
      expect(body.data.repository.pullRequest.closingIssuesReferences).toMatchObject({ totalCount: expect.any(Number), nodes: expect.any(Array) });
      // Only a mention of something deleted or moved fails, and GitHub's way: NOT_FOUND, with its path.
      for (const error of body.errors ?? []) expect(error).toMatchObject({ type: "NOT_FOUND", path: [expect.stringMatching(/^m\d+$/), "issueOrPullRequest"] });
    }
  });
});
