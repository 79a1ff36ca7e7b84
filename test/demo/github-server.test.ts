import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Octokit } from "@octokit/rest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoCorpus } from "../helpers/demo-corpus.ts";
import { FakeGithub } from "../../demo/github-server.ts";
import { fileTempDir } from "../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../data/demo/corpus.yaml", import.meta.url));

describe("the local GitHub API", () => {
  let dir: string;
  let server: FakeGithub;
  let octokit: Octokit;
  let records: any;

  beforeAll(async () => {
    dir = fileTempDir();
    await demoCorpus(plan, dir);
    server = new FakeGithub({ recordsDir: join(dir, "github") });
    octokit = new Octokit({ baseUrl: await server.start(), auth: "test-token" });
    records = JSON.parse(readFileSync(join(dir, "github", "demo-org__geometry.json"), "utf8"));
  });
  afterAll(() => server.stop());

  it("lists merged pull requests through octokit's paginate, following Link headers", async () => {
    const pulls = await octokit.paginate(octokit.rest.pulls.list, {
      owner: "demo-org",
      repo: "geometry",
      state: "closed",
      sort: "created",
      direction: "asc",
      per_page: 5,
    });
    expect(pulls.map((p) => p.number)).toEqual(
      Object.keys(records.pulls)
        .map(Number)
        .sort((a, b) => a - b),
    );
    expect(pulls.every((p) => p.merged_at && p.merge_commit_sha && p.head.sha && p.base.sha)).toBe(true);
    // The first page is asked by name; GitHub's Link headers name the repository by id after that.
    const id = records.repository.id;
    const pages = server.log.filter((e) => e.path.startsWith("/repos/demo-org/geometry/pulls?") || e.path.startsWith(`/repositories/${id}/pulls?`));
    expect(pages).toHaveLength(Math.ceil(pulls.length / 5));
    expect(pages.slice(1).every((e) => e.path.startsWith(`/repositories/${id}/pulls?`))).toBe(true);
  });

  it("serves a pull request's commits, files, reviews, review comments, comments and an issue's timeline", async () => {
    const number = Number(Object.keys(records.pulls)[0]);
    const pr = (await octokit.rest.pulls.get({ owner: "demo-org", repo: "geometry", pull_number: number })).data;
    expect(pr).toMatchObject({ number, merged: true, title: records.pulls[number].title });
    const commits = await octokit.paginate(octokit.rest.pulls.listCommits, { owner: "demo-org", repo: "geometry", pull_number: number, per_page: 2 });
    expect(commits.map((c) => c.sha)).toEqual(records.pull_commits[number].map((c: any) => c.sha));
    const files = await octokit.paginate(octokit.rest.pulls.listFiles, { owner: "demo-org", repo: "geometry", pull_number: number });
    expect(files.map((f) => f.filename).sort()).toEqual(records.pull_files[number].map((f: any) => f.filename).sort());
    const reviews = await octokit.paginate(octokit.rest.pulls.listReviews, { owner: "demo-org", repo: "geometry", pull_number: number });
    expect(reviews.map((r) => r.state)).toContain("CHANGES_REQUESTED");
    const reviewComments = await octokit.paginate(octokit.rest.pulls.listReviewComments, { owner: "demo-org", repo: "geometry", pull_number: number });
    expect(reviewComments.every((c) => typeof c.line === "number" && c.path)).toBe(true);
    const comments = await octokit.paginate(octokit.rest.issues.listComments, { owner: "demo-org", repo: "geometry", issue_number: number });
    expect(comments.some((c) => c.user?.type === "Bot")).toBe(true);
    // The pull request closed its issue: GitHub's closed event then has no commit_id.
    const issueNumber = number - 1;
    const timeline = await octokit.paginate(octokit.rest.issues.listEventsForTimeline, { owner: "demo-org", repo: "geometry", issue_number: issueNumber });
    expect(timeline.find((e: any) => e.event === "closed")).toMatchObject({ commit_id: null, commit_url: null });
    expect(timeline.find((e: any) => e.event === "cross-referenced")).toMatchObject({ source: { issue: { number, pull_request: expect.any(Object) } } });
  });

  it("names the closing commit in the closed event when a commit message closed the issue", async () => {
    const ledger = JSON.parse(readFileSync(join(dir, "github", "demo-org__ledger.json"), "utf8"));
    const [issue, closers] = Object.entries(ledger.closers as Record<string, any[]>).find(([, c]) => c[0].type === "Commit")!;
    const timeline = await octokit.paginate(octokit.rest.issues.listEventsForTimeline, { owner: "demo-org", repo: "ledger", issue_number: Number(issue) });
    expect(timeline.find((e: any) => e.event === "closed")).toMatchObject({ commit_id: closers[0].oid });
  });

  it("answers 410 for a deleted issue and 301 to the new home of a transferred one", async () => {
    const textkit = JSON.parse(readFileSync(join(dir, "github", "demo-org__textkit.json"), "utf8"));
    const tracker = JSON.parse(readFileSync(join(dir, "github", "demo-org__tracker.json"), "utf8"));
    const deleted = textkit.deleted[0];
    for (const route of [
      "GET /repos/{owner}/{repo}/issues/{n}",
      "GET /repos/{owner}/{repo}/issues/{n}/comments",
      "GET /repos/{owner}/{repo}/issues/{n}/timeline",
    ]) {
      const error = await octokit.request(route, { owner: "demo-org", repo: "textkit", n: deleted }).catch((e) => e);
      expect(error.status, route).toBe(410);
    }
    const [old, moved] = Object.entries(textkit.transferred as Record<string, { repo: string; number: number }>)[0]!;
    // fetch follows the redirect, as GitHub's clients do: the answer is the issue at its new home.
    const followed = await octokit.rest.issues.get({ owner: "demo-org", repo: "textkit", issue_number: Number(old) });
    expect(followed.data).toMatchObject({ number: moved.number, repository_url: `https://api.github.com/repos/${moved.repo}` });
    const raw = await fetch(`${server.url}/repos/demo-org/textkit/issues/${old}`, { redirect: "manual", headers: { authorization: "token t" } });
    expect(raw.status).toBe(301);
    expect(raw.headers.get("location")).toBe(`${server.url}/repositories/${tracker.repository.id}/issues/${moved.number}`);
    expect(await raw.json()).toMatchObject({ message: "Moved Permanently", url: raw.headers.get("location") });
    // GitHub redirects the issue, not its sub-resources: at the old address they are not found.
    for (const tail of ["comments", "timeline"]) {
      const sub = await octokit.request(`GET /repos/demo-org/textkit/issues/${old}/${tail}`).catch((e) => e);
      expect(sub.status, tail).toBe(404);
    }
  });

  it("stops the commit list at GitHub's 250, over all pages, without saying so", async () => {
    const ledger = JSON.parse(readFileSync(join(dir, "github", "demo-org__ledger.json"), "utf8"));
    const [number, all] = Object.entries(ledger.pull_commits as Record<string, any[]>).find(([, list]) => list.length > 250)!;
    const commits = await octokit.paginate(octokit.rest.pulls.listCommits, { owner: "demo-org", repo: "ledger", pull_number: Number(number), per_page: 100 });
    expect(commits.map((c) => c.sha)).toEqual(all.slice(0, 250).map((c: any) => c.sha));
    const capped = new FakeGithub({ recordsDir: join(dir, "github"), listCaps: { files: 1 } });
    const client = new Octokit({ baseUrl: await capped.start(), auth: "t" });
    try {
      const files = await client.paginate(client.rest.pulls.listFiles, { owner: "demo-org", repo: "ledger", pull_number: Number(number), per_page: 1 });
      expect(files).toHaveLength(1);
    } finally {
      await capped.stop();
    }
  });

  it("serves GraphQL closing references and closers to authenticated requests only", async () => {
    const textkit = JSON.parse(readFileSync(join(dir, "github", "demo-org__textkit.json"), "utf8"));
    const [pull, refs] = Object.entries(textkit.closing_references as Record<string, any[]>).find(([, r]) => r.length)!;
    const query = `query($n: Int!, $i: Int!) { repository(owner: "demo-org", name: "textkit") {
      pullRequest(number: $n) { closingIssuesReferences(first: 10) { totalCount nodes { number repository { nameWithOwner } } } }
      gone: issueOrPullRequest(number: $i) { __typename }
      first: issue(number: ${refs[0].number}) { timelineItems(itemTypes: [CLOSED_EVENT], first: 5) { nodes { ... on ClosedEvent { closer { __typename ... on PullRequest { number } } } } } }
    } }`;
    const anonymous = await fetch(`${server.url}/graphql`, {
      method: "POST",
      body: JSON.stringify({ query, variables: { n: Number(pull), i: textkit.deleted[0] } }),
    });
    expect(anonymous.status).toBe(401);
    const answer = await fetch(`${server.url}/graphql`, {
      method: "POST",
      headers: { authorization: "bearer t" },
      body: JSON.stringify({ query, variables: { n: Number(pull), i: textkit.deleted[0] } }),
    }).then((r) => r.json());
    expect(answer.data.repository.pullRequest.closingIssuesReferences).toEqual({
      totalCount: refs.length,
      nodes: refs.map((r: any) => ({ number: r.number, repository: { nameWithOwner: r.repo } })),
    });
    expect(answer.data.repository.first.timelineItems.nodes).toEqual([{ closer: { __typename: "PullRequest", number: Number(pull) } }]);
    // A deleted issue: null where it was asked, and GitHub's NOT_FOUND error naming the path.
    expect(answer.data.repository.gone).toBeNull();
    expect(answer.errors).toEqual([expect.objectContaining({ type: "NOT_FOUND", path: ["repository", "gone"] })]);
    // A field GitHub's schema does not have is refused, as GitHub refuses it.
    const invalid = await fetch(`${server.url}/graphql`, {
      method: "POST",
      headers: { authorization: "bearer t" },
      body: JSON.stringify({ query: '{ repository(owner: "demo-org", name: "textkit") { closingIssues } }' }),
    }).then((r) => r.json());
    expect(invalid.errors[0].message).toMatch(/Cannot query field "closingIssues" on type "Repository"/);
  });

  it("answers a repeated request with 304 when its ETag matches, without using rate limit", async () => {
    const first = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { owner: "demo-org", repo: "geometry", pull_number: 3 });
    const remaining = Number(first.headers["x-ratelimit-remaining"]);
    expect(first.headers.etag).toMatch(/^W\/"/);
    const second = await octokit
      .request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
        owner: "demo-org",
        repo: "geometry",
        pull_number: 3,
        headers: { "if-none-match": first.headers.etag! },
      })
      .catch((e) => e);
    expect(second.status).toBe(304);
    const third = await octokit.request("GET /rate_limit");
    expect(third.data.resources.core.remaining).toBe(remaining);
  });

  it("enforces a primary rate limit with a reset time, and a secondary one with Retry-After", async () => {
    const limited = new FakeGithub({ recordsDir: join(dir, "github"), rateLimit: 3, rateWindowMs: 60_000 });
    const client = new Octokit({ baseUrl: await limited.start(), auth: "t" });
    try {
      for (let i = 0; i < 3; i++) await client.rest.pulls.get({ owner: "demo-org", repo: "geometry", pull_number: 3 });
      const error = await client.rest.pulls.get({ owner: "demo-org", repo: "geometry", pull_number: 3 }).catch((e) => e);
      expect(error.status).toBe(403);
      expect(error.response.headers["x-ratelimit-remaining"]).toBe("0");
      expect(Number(error.response.headers["x-ratelimit-reset"])).toBeGreaterThan(Date.now() / 1000);
      limited.inject({ kind: "secondary_rate_limit", count: 1, retryAfterSeconds: 7 });
      const secondary = await client.request("GET /repos/demo-org/geometry").catch((e) => e);
      expect(secondary.status).toBe(403);
      expect(secondary.response.headers["retry-after"]).toBe("7");
      // GitHub may also answer a secondary limit with 429, and may leave Retry-After out.
      limited.inject({ kind: "too_many_requests", count: 1 });
      const tooMany = await client.request("GET /repos/demo-org/geometry").catch((e) => e);
      expect(tooMany.status).toBe(429);
      expect(tooMany.response.headers["retry-after"]).toBeUndefined();
      expect(tooMany.message).toMatch(/secondary rate limit/);
    } finally {
      await limited.stop();
    }
  });

  it("injects 5xx bursts, connection resets, truncated and slow bodies, and 404s", async () => {
    const get = () => octokit.rest.pulls.get({ owner: "demo-org", repo: "geometry", pull_number: 3 });
    server.inject({ kind: "server_error", count: 2, status: 503 });
    expect((await get().catch((e) => e)).status).toBe(503);
    expect((await get().catch((e) => e)).status).toBe(503);
    expect((await get()).status).toBe(200);
    server.inject({ kind: "reset", count: 1 });
    expect(await get().catch((e) => e)).toBeInstanceOf(Error);
    server.inject({ kind: "truncate", count: 1 });
    expect(await get().catch((e) => e)).toBeInstanceOf(Error);
    server.inject({ kind: "slow", count: 1, delayMs: 150 });
    const started = Date.now();
    expect((await get()).data.number).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect((await octokit.rest.issues.get({ owner: "demo-org", repo: "geometry", issue_number: 999 }).catch((e) => e)).status).toBe(404);
  });
});
