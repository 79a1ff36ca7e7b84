import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { demoCorpus } from "../../helpers/demo-corpus.ts";
import { FakeGithub } from "../../../demo/github-server.ts";
import { runProjectOnce } from "../../../pipeline/project/project.ts";
import { createLogger } from "../../../pipeline/logger.ts";
import { mineStage } from "../../../stages/mine/index.ts";
import { prepareDemoCopy, type DemoCopy } from "../../helpers/demo-copy.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../../data/demo/corpus.yaml", import.meta.url));
const GEOMETRY = "demo-org/geometry";

// GitHub as it fails in the world: hung (connections accepted, nothing answered), failing (5xx to
// everything), rate-limited past every retry, renamed; and a profile that is not valid. Each is
// one fact for the run, said once with what it is, never an internal error nor a wait without bound.
describe("mining when GitHub hangs, fails or limits", () => {
  let corpusDir: string;
  let geometryNumbers: number[];
  const copies: DemoCopy[] = [];

  beforeAll(async () => {
    corpusDir = fileTempDir();
    await demoCorpus(plan, corpusDir);
    const records = JSON.parse(readFileSync(join(corpusDir, "github", "demo-org__geometry.json"), "utf8"));
    geometryNumbers = Object.values(records.pulls as Record<string, { number: number; merged_at: string | null }>)
      .filter((p) => p.merged_at)
      .map((p) => p.number)
      .sort((a, b) => a - b);
  });
  afterEach(async () => {
    while (copies.length) await copies.pop()!.server.stop();
  });

  async function copy(mine: Record<string, unknown> = {}, server?: ConstructorParameters<typeof FakeGithub>[0]): Promise<DemoCopy> {
    const c = await prepareDemoCopy(tempDir(), { corpusDir, mine: { wait_unit_ms: 5, graphql: "off", ...mine } });
    copies.push(c);
    if (server) {
      await c.server.stop();
      c.server = new FakeGithub(server);
      const url = await c.server.start();
      writeFileSync(c.configPath, readFileSync(c.configPath, "utf8").replace(/api_url: \S+/, `api_url: ${url}`));
      (c.options.stageConfigs as any).mine.github.api_url = url;
    }
    return c;
  }
  /** mine alone, with its log kept. */
  async function mine(c: DemoCopy, force = false) {
    const lines: string[] = [];
    const log = createLogger({ level: "info", write: (line) => lines.push(line) });
    const started = Date.now();
    const summary = await runProjectOnce({ ...c.options, stages: [mineStage], log }, force ? { force: true } : {});
    return { summary, lines, seconds: (Date.now() - started) / 1000 };
  }
  const read = (c: DemoCopy, name: string) =>
    readFileSync(join(c.workDir, "artifacts", "mine", `${name}.jsonl`), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  const geometryOnly = (numbers?: number[]) => ({ repos: [{ repo: GEOMETRY, ...(numbers ? { numbers } : {}) }] });
  /** The REST requests the run's summary line says it sent. */
  const restCounted = (lines: string[]) => Number(/GitHub requests sent \(each attempt of a retried one counted\): REST (\d+)/.exec(lines.join("\n"))?.[1]);
  const restSeen = (c: DemoCopy) => c.server.log.filter((e) => e.path !== "/graphql").length;

  for (const kind of ["hang", "stall_body"] as const) {
    it(`stops when GitHub accepts connections and never answers (${kind}): a few requests, each cut at its time limit, then one fact for the run`, async () => {
      const c = await copy({ ...geometryOnly(), timeout_seconds: 1 });
      c.server.inject({ kind, count: 100_000 });
      const { summary, lines } = await mine(c);
      expect(summary.ok).toBe(false);
      expect(summary.stages[0]).toMatchObject({ stage: "mine", status: "incomplete" });
      const rejects = read(c, "rejects").length ? read(c, "rejects") : [];
      // the stage says what happened, once, in words a person can act on
      const said = [...lines, ...rejects.map((r) => r.message), ...(summary.stages[0]!.transient ?? [])].join("\n");
      expect(said).toMatch(/accepts connections but does not answer: 3 requests in a row got no answer within the time limit/);
      expect(said).not.toMatch(/internal error|a bug/);
      // bounded: HUNG_AFTER requests (and the retries of the first), not a retry ladder per pull request
      expect(c.server.log.length).toBeLessThanOrEqual(6);
      expect(restCounted(lines)).toBe(restSeen(c));
      // nothing of the run is cached as a result: with GitHub back, the next run mines everything
      c.server.clearFaults();
      const again = await mine(c);
      expect(again.summary.ok).toBe(true);
      expect(read(c, "candidates")).toHaveLength(geometryNumbers.length);
    });
  }

  it("stops when GitHub answers 502 to everything: one request's failure names the status and the URL; a run of them across requests stops the stage", async () => {
    // listing fails: its one request walks its retries, then says what GitHub answered to what
    const listing = await copy(geometryOnly());
    listing.server.inject({ kind: "server_error", count: 100_000, status: 502 });
    const listed = await mine(listing);
    expect(listed.summary.ok).toBe(false);
    expect(read(listing, "rejects")).toEqual([
      expect.objectContaining({
        record_id: GEOMETRY,
        reason: "transient_failure",
        message: expect.stringMatching(
          /could not list pull requests: GitHub answered HTTP 502 to GET http:\/\/127\.0\.0\.1:\d+\/repos\/demo-org\/geometry\/pulls\S* after every retry/,
        ),
      }),
    ]);
    expect(listing.server.log).toHaveLength(5);
    // listed, then every pull request's own requests fail: a run of 502s across requests is one fact
    const c = await copy(geometryOnly());
    c.server.inject({ kind: "server_error", count: 100_000, status: 502, path: /\/pulls\/\d+\// });
    const { summary, lines } = await mine(c);
    expect(summary.ok).toBe(false);
    const rejects = read(c, "rejects");
    const said = [...lines, ...rejects.map((r) => r.message)].join("\n");
    expect(said).toMatch(
      /the GitHub API at http:\/\/127\.0\.0\.1:\d+ is failing: it answered HTTP 502 to 10 requests in a row \(last: HTTP 502 to GET http:\/\/127\.0\.0\.1:\d+\/repos\//,
    );
    expect(rejects.length).toBeGreaterThan(0);
    expect(rejects.every((r) => r.reason === "transient_failure")).toBe(true);
    expect(said).not.toMatch(/Unknown error|internal error/);
    // the run of ten and what was already on its way (4 pull requests at once, 5 lists each),
    // never a retry ladder per request (the 13 pull requests' would be over 300 requests)
    const failed = c.server.log.filter((e) => e.status === 502).length;
    expect(failed).toBeGreaterThanOrEqual(10);
    expect(failed).toBeLessThanOrEqual(30);
    // the summary counts what was sent, retries included, never what was only asked for
    expect(restCounted(lines)).toBe(restSeen(c));
    c.server.clearFaults();
    expect((await mine(c)).summary.ok).toBe(true);
    expect(read(c, "candidates")).toHaveLength(geometryNumbers.length);
  });

  it("lets a passing burst of 5xx through, request by request, as before", async () => {
    const c = await copy(geometryOnly(geometryNumbers.slice(0, 4)));
    c.server.inject({ kind: "server_error", count: 4, status: 503 });
    const { summary } = await mine(c);
    expect(summary.ok).toBe(true);
    expect(read(c, "candidates")).toHaveLength(4);
  });

  it("makes a secondary rate limit that outlives its retries a transient failure with its kind and wait, and warns only of retries it sends", async () => {
    const [first, second] = geometryNumbers;
    const c = await copy(geometryOnly([first!, second!]));
    const reviews = new RegExp(`/pulls/${first}/reviews(\\?|$)`);
    c.server.inject({ kind: "secondary_rate_limit", count: 100, retryAfterSeconds: 1, path: reviews });
    const { summary, lines } = await mine(c);
    expect(summary.ok).toBe(false);
    const rejects = read(c, "rejects");
    expect(rejects).toEqual([
      expect.objectContaining({
        record_id: `demo-org__geometry-${first}`,
        reason: "transient_failure",
        message: expect.stringMatching(
          new RegExp(
            `GitHub's secondary rate limit \\(HTTP 403\\) still held on GET \\S*/repos/demo-org/geometry/pulls/${first}/reviews\\S* after every retry; it asked to wait 1 s more`,
          ),
        ),
      }),
    ]);
    expect(read(c, "candidates").map((x) => x.pull_number)).toEqual([second]);
    // the request was sent 1 + 3 times, and every warning but the last announced a retry that was sent
    expect(c.server.log.filter((e) => reviews.test(e.path))).toHaveLength(4);
    const warnings = lines.filter((l) => /secondary rate limit on GET/.test(l));
    expect(warnings.map((w) => /then retry (\d) of 3|not retried/.exec(w)?.[0])).toEqual([
      "then retry 1 of 3",
      "then retry 2 of 3",
      "then retry 3 of 3",
      "not retried",
    ]);
  });

  it("retries an abuse 403 (a secondary rate limit, with or without Retry-After) three times, each after the wait asked, then fails that pull request alone", async () => {
    const [first, second, third] = geometryNumbers;
    const c = await copy({ ...geometryOnly([first!, second!, third!]), secondary_wait_seconds: 1 });
    const reviews = new RegExp(`/pulls/${first}/reviews(\\?|$)`);
    const files = new RegExp(`/pulls/${second}/files(\\?|$)`);
    // GitHub's wording without Retry-After (the client waits secondary_wait_seconds), and its older wording with one
    c.server.inject({ kind: "secondary_rate_limit", count: 100, path: reviews }, { kind: "abuse_detection", count: 100, retryAfterSeconds: 1, path: files });
    const { summary, lines } = await mine(c);
    expect(summary.ok).toBe(false);
    expect(read(c, "rejects").map((r) => [r.record_id, r.reason])).toEqual([
      [`demo-org__geometry-${first}`, "transient_failure"],
      [`demo-org__geometry-${second}`, "transient_failure"],
    ]);
    expect(read(c, "candidates").map((x) => x.pull_number)).toEqual([third]);
    // 1 + 3 requests each, three warnings announcing a wait of the second asked for and a retry, then one saying no more
    for (const path of [reviews, files]) {
      expect(c.server.log.filter((e) => path.test(e.path))).toHaveLength(4);
      const said = lines
        .filter((l) => /secondary rate limit on GET/.test(l) && path.test(l))
        .map((l) => /waiting \d+s, then retry \d of 3|not retried/.exec(l)?.[0]);
      expect(said).toEqual(["waiting 1s, then retry 1 of 3", "waiting 1s, then retry 2 of 3", "waiting 1s, then retry 3 of 3", "not retried"]);
    }
  });

  it("rejects a pull request GitHub refuses this token (the recorded 403 'Resource not accessible by integration') with why, sends it once, and mines the rest of the target", async () => {
    const [first, second, third] = geometryNumbers;
    const c = await copy(geometryOnly([first!, second!, third!]));
    const refused = new RegExp(`/pulls/${second}$`);
    c.server.inject({ kind: "not_accessible", count: 100, path: refused });
    const { summary, lines } = await mine(c);
    // a fact about the token and the pull request: the stage is complete, nothing of it is transient
    expect(summary.ok).toBe(true);
    expect(summary.stages[0]).toMatchObject({ status: "ran", rejected: 1, by_reason: { forbidden: 1 } });
    expect(read(c, "rejects")).toEqual([
      expect.objectContaining({
        record_id: `demo-org__geometry-${second}`,
        reason: "forbidden",
        field: "numbers",
        message: expect.stringMatching(
          new RegExp(
            `^demo-org/geometry#${second}: GitHub refuses this token GET \\S+/repos/demo-org/geometry/pulls/${second}: HTTP 403 "Resource not accessible by integration" \\(the token needs pull_requests=read\\)`,
          ),
        ),
      }),
    ]);
    expect(read(c, "candidates").map((x) => x.pull_number)).toEqual([first, third]);
    // a permission answer is not retried
    expect(c.server.log.filter((e) => refused.test(e.path))).toHaveLength(1);
    expect(lines.join("\n")).not.toMatch(/could not list pull requests|internal error/);
  });

  it("stops a target whose list GitHub refuses this token, naming it, and mines the other targets; a refused part of one pull request rejects that pull request alone", async () => {
    const c = await copy({ repos: [{ repo: GEOMETRY }, { repo: "demo-org/textkit" }] });
    const [, second] = geometryNumbers;
    c.server.inject({ kind: "not_accessible", count: 100, path: /^\/repos\/demo-org\/geometry\/pulls$/ });
    const listed = await mine(c);
    expect(listed.summary.ok).toBe(true);
    expect(read(c, "rejects")).toEqual([
      expect.objectContaining({
        record_id: GEOMETRY,
        reason: "forbidden",
        field: "repo",
        message: expect.stringMatching(
          /^demo-org\/geometry: its pull requests are not listed: GitHub refuses this token GET \S+: HTTP 403 .*nothing of demo-org\/geometry is mined/,
        ),
      }),
    ]);
    const textkit = read(c, "candidates");
    expect(textkit.length).toBeGreaterThan(0);
    expect(textkit.every((x) => x.repo === "demo-org/textkit")).toBe(true);

    // an issues permission missing: the pull request's conversation is refused, the others are mined
    const part = await copy(geometryOnly(geometryNumbers.slice(0, 3)));
    part.server.inject({ kind: "not_accessible", count: 100, permissions: "issues=read", path: new RegExp(`/issues/${second}/comments$`) });
    const { summary } = await mine(part);
    expect(summary.ok).toBe(true);
    expect(read(part, "rejects")).toEqual([
      expect.objectContaining({
        record_id: `demo-org__geometry-${second}`,
        reason: "forbidden",
        message: expect.stringMatching(/HTTP 403 "Resource not accessible by integration" \(the token needs issues=read\); the pull request is not mined/),
      }),
    ]);
    expect(read(part, "candidates")).toHaveLength(2);
  });

  it("sends nothing more and waits no more once an outage is declared: a retry waiting out its backoff ends at once", async () => {
    // a backoff unit of an hour: a retry that slept it out would hold the run for hours after the fact
    const c = await copy({ ...geometryOnly(), wait_unit_ms: 3_600_000 });
    c.server.inject({ kind: "server_error", count: 100_000, status: 502, path: /\/(pulls|issues)\/\d+\// });
    const { summary, lines } = await mine(c);
    expect(summary.ok).toBe(false);
    expect(lines.join("\n")).toMatch(/is failing: it answered HTTP 502 to 10 requests in a row/);
    // the pull requests' first attempts only (each waits an hour to retry): ten 502s in a row, and
    // what was on its way when the tenth came; no retry was sent
    const sent = c.server.log.filter((e) => e.status === 502).map((e) => e.path);
    expect(sent.length).toBeGreaterThanOrEqual(10);
    expect(new Set(sent).size).toBe(sent.length);
    expect(restCounted(lines)).toBe(restSeen(c));
  });

  it("says nothing of enriching SWE-bench-family records when there are none, offline or not", async () => {
    const c = await copy(geometryOnly(geometryNumbers.slice(0, 2)));
    const online = await mine(c);
    expect(online.summary.ok).toBe(true);
    (c.options.stageConfigs as any).mine.github.offline = true;
    const offline = await mine(c, true);
    expect(offline.summary.ok).toBe(true);
    expect(read(c, "candidates")).toHaveLength(2);
    for (const { lines } of [online, offline]) expect(lines.filter((l) => /SWE-bench-family/.test(l))).toEqual([]);
  });

  it("follows a renamed repository listed by number with one 301, warns naming its old and new name, and notes the new name on each candidate", async () => {
    const numbers = geometryNumbers.slice(0, 3);
    const c = await copy(
      { repos: [{ repo: "demo-org/geometry-old", numbers }] },
      { recordsDir: join(corpusDir, "github"), renamed: { "demo-org/geometry-old": GEOMETRY } },
    );
    const profileDir = join(c.configPath, "..", "repos");
    const profile = JSON.parse(readFileSync(join(profileDir, "demo-org__geometry.json"), "utf8"));
    writeFileSync(
      join(profileDir, "demo-org__geometry-old.json"),
      JSON.stringify({ ...profile, repo: "demo-org/geometry-old", clone_url: join(profileDir, profile.clone_url) }),
    );
    const { summary, lines } = await mine(c);
    expect(summary.ok).toBe(true);
    expect(c.server.log.filter((e) => e.status === 301)).toHaveLength(1);
    expect(c.server.log.filter((e) => e.path.startsWith("/repos/demo-org/geometry-old/"))).toHaveLength(1);
    expect(lines.filter((l) => /GitHub redirects demo-org\/geometry-old to demo-org\/geometry \(renamed or moved; repository \d+\)/.test(l))).toHaveLength(1);
    const candidates = read(c, "candidates");
    expect(candidates.map((x) => x.id)).toEqual(numbers.map((n) => `demo-org__geometry-old-${n}`));
    for (const candidate of candidates)
      expect(candidate.notes).toContain(
        "GitHub names this repository demo-org/geometry now (renamed or moved from demo-org/geometry-old); mined under the name the config gives",
      );
  });

  it("reuses every mined record when a number is added, or concurrency and waits change: only the new pull request is mined", async () => {
    const [a, b, d] = geometryNumbers;
    const c = await copy(geometryOnly([a!, b!]));
    expect((await mine(c)).summary.ok).toBe(true);
    const config = (c.options.stageConfigs as any).mine.github;
    config.repos = [{ repo: GEOMETRY, numbers: [a, b, d] }];
    config.concurrency = 2;
    config.wait_unit_ms = 7;
    config.secondary_wait_seconds = 61;
    config.timeout_seconds = 45;
    const before = c.server.log.length;
    const { summary } = await mine(c);
    expect(summary.stages[0]).toMatchObject({ status: "ran", out: 3, reused: 2 });
    const asked = c.server.log.slice(before).map((e) => e.path);
    // the earlier pull requests' lists are not asked again (each is asked for itself, to list it: answered 304)
    for (const n of [a, b]) expect(asked.filter((p) => p.startsWith(`/repos/${GEOMETRY}/pulls/${n}/`))).toEqual([]);
    expect(asked.some((p) => p.startsWith(`/repos/${GEOMETRY}/pulls/${d}/`))).toBe(true);
  });

  it("stops on an invalid repository profile, naming the file and the field, before any request or clone", async () => {
    const c = await copy(geometryOnly(geometryNumbers.slice(0, 2)));
    const profileDir = join(c.configPath, "..", "repos");
    const file = join(profileDir, "demo-org__geometry.json");
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), clone_url: 42 }));
    const { summary } = await mine(c);
    expect(summary.ok).toBe(false);
    expect(summary.stages[0]).toMatchObject({ stage: "mine", status: "failed" });
    expect(summary.stages[0]!.error).toMatch(/1 invalid repository profile\(s\) in .*: .*demo-org__geometry\.json: field clone_url: /);
    expect(c.server.log).toEqual([]);
  });
});
