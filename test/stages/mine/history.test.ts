import { createServer as createTcpServer, type Socket } from "node:net";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { demoCorpus } from "../../helpers/demo-corpus.ts";
import { FakeGithub } from "../../../demo/github-server.ts";
import { emptyRecords, type RepoRecords } from "../../../demo/records.ts";
import type { Json } from "../../../demo/github-shapes.ts";
import { runProjectOnce } from "../../../pipeline/project/project.ts";
import { git } from "../../../pipeline/git.ts";
import { createGithubClient } from "../../../pipeline/github-client.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { mineStage } from "../../../stages/mine/index.ts";
import { listMergedPulls } from "../../../stages/mine/listing.ts";
import { prepareDemoCopy, type DemoCopy } from "../../helpers/demo-copy.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../../data/demo/corpus.yaml", import.meta.url));
const GEOMETRY = "demo-org/geometry";
const ABSENT = (n: number) => n.toString(16).padStart(40, "f");

type Records = RepoRecords & { pulls: Record<string, any> };

// Mining what only real history has: merge commits GitHub computed and never pushed, heads
// force-pushed away, renamed repositories, GitHub's other words for a secondary limit, a window
// over thousands of pull requests, an API that refuses every connection. Each case is a demo
// corpus whose GitHub records (or git) are changed to show it.
describe("mining real GitHub history", () => {
  let corpusDir: string;
  const copies: DemoCopy[] = [];
  const servers: { stop: () => Promise<void> }[] = [];

  beforeAll(async () => {
    corpusDir = fileTempDir();
    await demoCorpus(plan, corpusDir);
  });
  afterEach(async () => {
    while (copies.length) await copies.pop()!.server.stop();
    while (servers.length) await servers.pop()!.stop();
  });

  /** A copy of the corpus whose geometry records `edit` changes; mine runs over the repositories given. */
  async function scenario(
    edit: (records: Records, repoDir: string) => Promise<void> | void,
    mine: Record<string, unknown>,
    server: Record<string, unknown> = {},
  ) {
    const corpus = join(tempDir(), "corpus");
    cpSync(corpusDir, corpus, { recursive: true });
    const file = join(corpus, "github", "demo-org__geometry.json");
    const records = JSON.parse(readFileSync(file, "utf8")) as Records;
    await edit(records, join(corpus, "repos", "demo-org__geometry"));
    writeFileSync(file, JSON.stringify(records));
    const c = await prepareDemoCopy(tempDir(), { corpusDir: corpus, mine: { wait_unit_ms: 5, ...mine } });
    if (Object.keys(server).length) {
      // the same records, served with the options the case needs
      await c.server.stop();
      c.server = new FakeGithub({ recordsDir: join(corpus, "github"), ...server });
      const url = await c.server.start();
      const config = readFileSync(c.configPath, "utf8").replace(/api_url: \S+/, `api_url: ${url}`);
      writeFileSync(c.configPath, config);
      (c.options.stageConfigs as any).mine.github.api_url = url;
    }
    copies.push(c);
    return { c, records, corpus };
  }
  const mineOnly = (c: DemoCopy, force = false) => runProjectOnce({ ...c.options, stages: [mineStage] }, force ? { force: true } : {});
  const read = (c: DemoCopy, name: string) =>
    readFileSync(join(c.workDir, "artifacts", "mine", `${name}.jsonl`), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  const merged = (records: Records) =>
    Object.values(records.pulls)
      .filter((p) => p.merged_at)
      .sort((a, b) => a.number - b.number);

  it("takes a pull request whose merge commit is not in git from its head, one with neither from refs/pull/N/head, and rejects one with none, naming the commits, cached", async () => {
    let numbers: number[] = [];
    const { c } = await scenario(
      async (records, repoDir) => {
        const [a, b, d, e] = merged(records);
        // a: GitHub computed a merge commit nobody pushed
        a.merge_commit_sha = ABSENT(1);
        // b: head force-pushed away and merge never pushed, but GitHub keeps refs/pull/N/head
        expect((await git(["rev-parse", `refs/pull/${b.number}/head`], { cwd: repoDir })).trim()).toBe(b.head.sha);
        b.head.sha = ABSENT(2);
        b.merge_commit_sha = ABSENT(3);
        // d: nothing of it is in git (not even GitHub's pull ref, which the corpus, like GitHub, has)
        await git(["update-ref", "-d", `refs/pull/${d.number}/head`], { cwd: repoDir });
        d.head.sha = ABSENT(4);
        d.merge_commit_sha = ABSENT(5);
        // e: listed by number, but closed without being merged
        e.merged_at = null;
        e.merged = false;
        numbers = [a.number, b.number, d.number, e.number];
      },
      { repos: [{ repo: GEOMETRY, numbers: [] }] },
    );
    const config = c.options.stageConfigs as any;
    config.mine.github.repos = [{ repo: GEOMETRY, numbers }];
    const summary = await mineOnly(c);
    const candidates = read(c, "candidates");
    const rejects = read(c, "rejects");
    expect(rejects.map((r) => r.reason).sort()).toEqual(["commits_not_in_git", "not_merged"]);
    expect(rejects.some((r) => r.reason === "internal_error")).toBe(false);
    const [a, b, d, e] = numbers;
    expect(candidates.map((x) => x.pull_number).sort((x: number, y: number) => x - y)).toEqual([a, b]);
    const fromPullRef = candidates.find((x) => x.pull_number === b)!;
    expect(fromPullRef.notes.join(" ")).toMatch(new RegExp(`refs/pull/${b}/head`));
    expect(fromPullRef.reference_diff.length).toBeGreaterThan(0);
    const missing = rejects.find((r) => r.reason === "commits_not_in_git")!;
    expect(missing.record_id).toBe(`demo-org__geometry-${d}`);
    expect(missing.message).toContain(ABSENT(4));
    expect(missing.message).toContain(ABSENT(5));
    expect(missing.message).toContain(`refs/pull/${d}/head`);
    expect(rejects.find((r) => r.reason === "not_merged")!.record_id).toBe(`demo-org__geometry-${e}`);
    // the run is complete (a fact about history is a result), and a re-run takes the reject from the cache
    expect(summary.ok).toBe(true);
    const before = c.server.log.length;
    const again = await runProjectOnce({ ...c.options, stages: [mineStage] });
    expect(again.stages[0]!.status).toBe("up_to_date");
    expect(c.server.log.length).toBe(before);
  });

  it("waits out a 403 with Retry-After that does not say 'secondary rate' (GitHub's abuse detection) instead of failing", async () => {
    const { c } = await scenario(() => undefined, { graphql: "off" });
    c.server.inject({ kind: "abuse_detection", count: 1, retryAfterSeconds: 1, path: /\/pulls\/\d+\/reviews$/ });
    const summary = await mineOnly(c);
    expect(summary.ok).toBe(true);
    expect(read(c, "rejects")).toEqual([]);
    const hit = c.server.log.findIndex((e) => e.fault === "abuse_detection");
    expect(hit).toBeGreaterThanOrEqual(0);
    // the same request was sent again after the wait, and answered
    const path = c.server.log[hit]!.path;
    expect(c.server.log.slice(hit + 1).some((e) => e.path === path && e.status === 200)).toBe(true);
  });

  it("follows a renamed repository once: one 301, then its requests go to its new address", async () => {
    const { c } = await scenario(
      () => undefined,
      { graphql: "off", repos: [{ repo: "demo-org/geometry-old" }] },
      { renamed: { "demo-org/geometry-old": GEOMETRY } },
    );
    // the old name's profile points at the same clone
    const profileDir = join(c.configPath, "..", "repos");
    const profile = JSON.parse(readFileSync(join(profileDir, "demo-org__geometry.json"), "utf8"));
    writeFileSync(
      join(profileDir, "demo-org__geometry-old.json"),
      JSON.stringify({ ...profile, repo: "demo-org/geometry-old", clone_url: join(profileDir, profile.clone_url) }),
    );
    const summary = await mineOnly(c);
    expect(summary.ok).toBe(true);
    const candidates = read(c, "candidates");
    expect(candidates.length).toBeGreaterThan(5);
    expect(candidates.every((x) => x.id.startsWith("demo-org__geometry-old-"))).toBe(true);
    expect(c.server.log.filter((e) => e.status === 301)).toHaveLength(1);
    expect(c.server.log.filter((e) => e.path.startsWith("/repos/demo-org/geometry-old/")).length).toBe(1);
  });

  it("reads no more than ten mentioned issues' timelines without GraphQL, and does not ask a recorded 404 again", async () => {
    let number = 0;
    const { c } = await scenario(
      (records) => {
        const pr = merged(records)[0];
        number = pr.number;
        // a bot's description naming fifteen issues that do not exist
        pr.body = `Dependency update.\n\n${Array.from({ length: 15 }, (_, i) => `- see #${900 + i}`).join("\n")}`;
        // and a review comment GitHub sent without its html_url
        delete records.review_comments[String(number)]?.[0]?.html_url;
      },
      { graphql: "off" },
    );
    await mineOnly(c);
    const timelines = (log: typeof c.server.log) => log.filter((e) => /\/issues\/9\d\d\/timeline/.test(e.path));
    expect(timelines(c.server.log)).toHaveLength(10);
    const candidate = read(c, "candidates").find((x) => x.pull_number === number)!;
    expect(candidate.notes.join(" ")).toMatch(/mentions 15 issues; the timelines of the first 10 only were read/);
    const anchored = candidate.pull_request.discussion.filter((d: any) => d.kind === "review_comment" && /#discussion_r\d+$/.test(d.url));
    expect(anchored.length).toBeGreaterThanOrEqual(1);
    const before = c.server.log.length;
    await mineOnly(c, true);
    expect(timelines(c.server.log.slice(before))).toEqual([]);
  });

  it("stops within one retry ladder when the API refuses every connection, and sends nothing after its summary", async () => {
    // A server that takes each connection and drops it at once.
    const sockets: Socket[] = [];
    let connections = 0;
    const tcp = createTcpServer((socket) => {
      connections++;
      sockets.push(socket);
      socket.destroy();
    });
    await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
    servers.push({ stop: () => new Promise<void>((resolve) => tcp.close(() => resolve())) });
    const port = (tcp.address() as { port: number }).port;
    const { c } = await scenario(() => undefined, {
      graphql: "off",
      repos: [{ repo: GEOMETRY, numbers: [1, 2, 3, 4, 5, 6] }, { repo: "demo-org/textkit", numbers: [1, 2, 3] }, { repo: "demo-org/ledger" }],
    });
    (c.options.stageConfigs as any).mine.github.api_url = `http://127.0.0.1:${port}`;
    const summary = await mineOnly(c);
    expect(summary.ok).toBe(false);
    const rejects = read(c, "rejects");
    expect(rejects.map((r) => r.reason)).toEqual(["transient_failure", "transient_failure", "transient_failure"]);
    expect(rejects.slice(1).every((r) => /cannot be reached .* no more requests are sent this run/.test(r.message))).toBe(true);
    // five failed connections open the breaker (the first request's own retries): nothing after them
    expect(connections).toBe(5);
    await new Promise((r) => setTimeout(r, 2000));
    expect(connections).toBe(5);
  });
});

// A creation-date window over a repository with thousands of closed pull requests: the pages read
// grow with the window, not with the history.
describe("a date window over a long history", () => {
  let server: FakeGithub;
  let url: string;
  const TOTAL = 2500;
  const start = Date.parse("2015-01-01T00:00:00Z");
  const at = (i: number) => new Date(start + i * 86_400_000).toISOString().replace(/\.\d{3}Z$/, "Z");

  beforeAll(async () => {
    const dir = tempDir();
    const pulls: Record<string, Json> = {};
    for (let i = 0; i < TOTAL; i++) {
      // every third pull request was closed without being merged
      pulls[String(i + 1)] = {
        number: i + 1,
        state: "closed",
        created_at: at(i),
        updated_at: at(i),
        merged_at: i % 3 === 2 ? null : at(i),
        title: `pr ${i + 1}`,
      };
    }
    const records = emptyRecords({ id: 77, full_name: "o/long", name: "long" }, pulls);
    writeFileSync(join(dir, "o__long.json"), JSON.stringify(records));
    server = new FakeGithub({ recordsDir: dir });
    url = await server.start();
    return () => server.stop();
  });

  async function window(since?: string, until?: string) {
    const { octokit } = createGithubClient({ baseUrl: url, cacheDir: tempDir(), log: silentLogger, waitUnitMs: 1 });
    const before = server.log.length;
    const listed = await listMergedPulls(octokit, { repo: "o/long", ...(since ? { since } : {}), ...(until ? { until } : {}) });
    return { numbers: listed.pulls.map((p) => p.number), pages: listed.pages, requests: server.log.length - before };
  }
  const expected = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, k) => from + k)
      .filter((i) => i % 3 !== 2)
      .map((i) => i + 1);

  it("lists exactly the merged pull requests of the window, oldest first, whatever its edges", async () => {
    // newest first, 100 a page: index TOTAL-1-100k starts page k+1; a window ending exactly at a page edge
    const edge = TOTAL - 100;
    expect((await window(at(edge - 250), at(edge))).numbers).toEqual(expected(edge - 250, edge));
    // one day, on either side of an edge
    expect((await window(at(edge), at(edge + 1))).numbers).toEqual(expected(edge, edge + 1));
    expect((await window(at(edge - 1), at(edge))).numbers).toEqual(expected(edge - 1, edge));
    // dates are instants: an offset that a string comparison would misread
    const noon = new Date(start + 1000 * 86_400_000 + 12 * 3_600_000);
    const offset = `${noon.toISOString().slice(0, 10)}T14:00:00+02:00`;
    expect((await window(at(990), offset)).numbers).toEqual(expected(990, 1001));
    // open ends
    expect((await window(at(TOTAL - 10))).numbers).toEqual(expected(TOTAL - 10, TOTAL));
    expect((await window(undefined, at(10))).numbers).toEqual(expected(0, 10));
  });

  it("reads pages in proportion to the window, not to the history", async () => {
    const all = Math.ceil(TOTAL / 100);
    // a window of about 300 pull requests in the middle of 2,500: a bisection and its own pages
    const middle = await window(at(1100), at(1400));
    expect(middle.numbers).toEqual(expected(1100, 1400));
    expect(middle.pages).toBeLessThanOrEqual(Math.ceil(Math.log2(all)) + 1 + 4);
    expect(middle.requests).toBe(middle.pages);
    expect(middle.pages).toBeLessThan(all / 2);
    // the most recent month costs a page or two
    expect((await window(at(TOTAL - 30))).pages).toBeLessThanOrEqual(1);
  });
});
