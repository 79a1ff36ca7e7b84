import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoCorpus } from "../helpers/demo-corpus.ts";
import { FakeGithub } from "../../demo/github-server.ts";
import { createGithubClient } from "../../pipeline/github-client.ts";
import { OfflineMiss } from "../../pipeline/github-recording.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { fileTempDir, tempDir } from "../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../data/demo/corpus.yaml", import.meta.url));
const QUERY = `query($n: Int!) { repository(owner: "demo-org", name: "textkit") { pullRequest(number: $n) { closingIssuesReferences(first: 5) { nodes { number } } } gone: issueOrPullRequest(number: 99999) { __typename } } }`;

describe("the GitHub client's recording of GraphQL answers and of what is gone", () => {
  let server: FakeGithub;
  let baseUrl: string;
  let deleted: number;
  beforeAll(async () => {
    const dir = fileTempDir();
    await demoCorpus(plan, dir);
    deleted = JSON.parse(readFileSync(join(dir, "github", "demo-org__textkit.json"), "utf8")).deleted[0];
    server = new FakeGithub({ recordsDir: join(dir, "github") });
    baseUrl = await server.start();
  });
  afterAll(() => server.stop());

  it("reuses a GraphQL answer while its freshness key is unchanged, asks again when it changes, and replays it offline", async () => {
    const cacheDir = tempDir();
    const client = createGithubClient({ baseUrl, token: "ghp_test0123456789", cacheDir, log: silentLogger, graphqlSpacingMs: 0 });
    const before = server.log.length;
    const first = await client.graphql(QUERY, { n: 3 }, "2024-03-01T00:00:00Z");
    const again = await client.graphql(QUERY, { n: 3 }, "2024-03-01T00:00:00Z");
    expect(again).toEqual(first);
    expect(server.log.length - before).toBe(1);
    // A part that is gone comes back as data with GitHub's NOT_FOUND error, not as a failure.
    expect((first.data.repository as { gone: unknown }).gone).toBeNull();
    expect(first.errors).toEqual([expect.objectContaining({ type: "NOT_FOUND", path: ["repository", "gone"] })]);
    await client.graphql(QUERY, { n: 3 }, "2024-03-02T00:00:00Z");
    expect(server.log.length - before).toBe(2);
    expect(client.counts).toMatchObject({ graphql: 2, graphqlReused: 1 });

    const offline = createGithubClient({ baseUrl, cacheDir, offline: true, log: silentLogger });
    expect(await offline.graphql(QUERY, { n: 3 }, "2024-03-01T00:00:00Z")).toEqual(first);
    await expect(offline.graphql(QUERY, { n: 5 }, "2024-03-01T00:00:00Z")).rejects.toBeInstanceOf(OfflineMiss);
    expect(server.log.length - before).toBe(2);
  });

  it("refuses an invalid query as an error, never as an answer to record", async () => {
    const client = createGithubClient({ baseUrl, token: "ghp_test0123456789", cacheDir: tempDir(), log: silentLogger, graphqlSpacingMs: 0, maxRetries: 0 });
    await expect(client.graphql('{ repository(owner: "demo-org", name: "textkit") { nope } }', {}, "x")).rejects.toThrow(/Cannot query field "nope"/);
  });

  it("records a 410 as the final answer (no request again, online or offline), and a 404 as the answer until it is older than recheckMissingHours", async () => {
    const cacheDir = tempDir();
    mkdirSync(cacheDir, { recursive: true });
    const client = createGithubClient({ baseUrl, token: "ghp_test0123456789", cacheDir, log: silentLogger, maxRetries: 0 });
    const deletedPath = { owner: "demo-org", repo: "textkit", issue_number: deleted };
    const status = (p: Promise<unknown>) =>
      p.then(
        () => 200,
        (e) => (e as { status: number }).status,
      );
    const before = server.log.length;
    expect(await status(client.octokit.rest.issues.get(deletedPath))).toBe(410);
    expect(await status(client.octokit.rest.issues.get(deletedPath))).toBe(410);
    expect(server.log.length - before).toBe(1);
    expect(await status(client.octokit.rest.issues.get({ ...deletedPath, issue_number: 99999 }))).toBe(404);
    expect(await status(client.octokit.rest.issues.get({ ...deletedPath, issue_number: 99999 }))).toBe(404);
    expect(server.log.length - before).toBe(2);
    // Once the recorded 404 is older than the recheck window (here: at once), it is asked again.
    const recheck = createGithubClient({ baseUrl, token: "ghp_test0123456789", cacheDir, log: silentLogger, maxRetries: 0, recheckMissingHours: 0 });
    expect(await status(recheck.octokit.rest.issues.get({ ...deletedPath, issue_number: 99999 }))).toBe(404);
    expect(await status(recheck.octokit.rest.issues.get(deletedPath))).toBe(410);
    expect(server.log.length - before).toBe(3);
    const offline = createGithubClient({ baseUrl, cacheDir, offline: true, log: silentLogger });
    expect(await status(offline.octokit.rest.issues.get({ ...deletedPath, issue_number: 99999 }))).toBe(404);
    expect(await status(offline.octokit.rest.issues.get(deletedPath))).toBe(410);
    expect(server.log.length - before).toBe(3);
  });
});
