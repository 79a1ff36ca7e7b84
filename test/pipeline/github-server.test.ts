import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Octokit } from "@octokit/rest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildDemoCorpus } from "../../pipeline/demo/build.ts";
import { FakeGithub } from "../../pipeline/demo/github-server.ts";
import { fileTempDir } from "../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../data/demo/corpus.yaml", import.meta.url));

describe("the local GitHub API", () => {
  let dir: string;
  let server: FakeGithub;
  let octokit: Octokit;
  let records: any;

  beforeAll(async () => {
    dir = fileTempDir();
    await buildDemoCorpus(plan, dir);
    server = new FakeGithub({ recordsDir: join(dir, "github") });
    octokit = new Octokit({ baseUrl: await server.start(), auth: "test-token" });
    records = JSON.parse(readFileSync(join(dir, "github", "demo-org__geometry.json"), "utf8"));
  });
  afterAll(() => server.stop());

  it("lists merged pull requests through octokit's paginate, following Link headers", async () => {
    const pulls = await octokit.paginate(octokit.rest.pulls.list, { owner: "demo-org", repo: "geometry", state: "closed", sort: "created", direction: "asc", per_page: 5 });
    expect(pulls.map((p) => p.number)).toEqual(Object.keys(records.pulls).map(Number).sort((a, b) => a - b));
    expect(pulls.every((p) => p.merged_at && p.merge_commit_sha && p.head.sha && p.base.sha)).toBe(true);
    const pages = server.log.filter((e) => e.path.startsWith("/repos/demo-org/geometry/pulls?"));
    expect(pages).toHaveLength(Math.ceil(pulls.length / 5));
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
    const issueNumber = number - 1;
    const timeline = await octokit.paginate(octokit.rest.issues.listEventsForTimeline, { owner: "demo-org", repo: "geometry", issue_number: issueNumber });
    expect(timeline.find((e: any) => e.event === "closed")).toMatchObject({ commit_id: pr.merge_commit_sha });
  });

  it("answers a repeated request with 304 when its ETag matches, without using rate limit", async () => {
    const first = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { owner: "demo-org", repo: "geometry", pull_number: 3 });
    const remaining = Number(first.headers["x-ratelimit-remaining"]);
    expect(first.headers.etag).toMatch(/^W\/"/);
    const second = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { owner: "demo-org", repo: "geometry", pull_number: 3, headers: { "if-none-match": first.headers.etag! } }).catch((e) => e);
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
