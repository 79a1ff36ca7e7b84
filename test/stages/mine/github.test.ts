import { spawn } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type PullIntent } from "../../../demo/build.ts";
import { demoCorpus } from "../../helpers/demo-corpus.ts";
import { FakeGithub } from "../../../demo/github-server.ts";
import { runProjectOnce } from "../../../pipeline/project/project.ts";
import { mineStage } from "../../../stages/mine/index.ts";
import { prepareDemoCopy, type DemoCopy } from "../../helpers/demo-copy.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../../data/demo/corpus.yaml", import.meta.url));
const bin = fileURLToPath(new URL("../../../bin/switch-swe.mjs", import.meta.url));

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
}

/** Whole cache entries; a killed writer's temporary files start with a dot. */
const entries = (dir: string) => walk(dir).filter((f) => !f.split("/").pop()!.startsWith("."));

describe("mining GitHub", () => {
  let corpusDir: string;
  let intents: PullIntent[];
  let clean: string;
  const copies: DemoCopy[] = [];

  async function copy(mine: Record<string, unknown> = {}): Promise<DemoCopy> {
    // A two-second rate-limit window, so waiting for its reset takes seconds, not the hour GitHub's does.
    const c = await prepareDemoCopy(tempDir(), { corpusDir, mine: { wait_unit_ms: 5, ...mine }, rateWindowMs: 2000 });
    copies.push(c);
    return c;
  }
  const mineOnly = (c: DemoCopy, extra: Partial<DemoCopy["options"]> = {}) => runProjectOnce({ ...c.options, stages: [mineStage], ...extra });
  const candidates = (c: DemoCopy) => readFileSync(join(c.workDir, "artifacts", "mine", "candidates.jsonl"), "utf8");
  const rejects = (c: DemoCopy) =>
    readFileSync(join(c.workDir, "artifacts", "mine", "rejects.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));

  beforeAll(async () => {
    corpusDir = fileTempDir();
    await demoCorpus(plan, corpusDir);
    intents = JSON.parse(readFileSync(join(corpusDir, "intents.json"), "utf8"));
    // The uninterrupted, fault-free run every other run is compared with.
    const reference = await prepareDemoCopy(fileTempDir(), { corpusDir, mine: { wait_unit_ms: 5 } });
    const summary = await runProjectOnce({ ...reference.options, stages: [mineStage] });
    await reference.server.stop();
    expect(summary.stages[0]).toMatchObject({ status: "ran", out: intents.length, rejected: 0 });
    clean = readFileSync(join(reference.workDir, "artifacts", "mine", "candidates.jsonl"), "utf8");
  });
  afterEach(async () => {
    while (copies.length) await copies.pop()!.server.stop();
  });

  /** The sources that must link each pull request's issue, by how the generator linked it. */
  const expectedSources = (intent: PullIntent, graphql: boolean): string[] => {
    if (!intent.issue) return [];
    if (intent.extras.includes("moved_issues")) return graphql ? ["closing_reference", "pr_body_keyword"] : ["pr_body_keyword"];
    if (intent.link === "commit_keyword") return ["commit_keyword"];
    // Linked in the sidebar: only GraphQL knows; mentioned too, its closer names the PR.
    if (intent.link === "sidebar") return graphql ? ["closing_reference"] : [];
    if (intent.link === "timeline") return graphql ? ["closing_reference", "timeline"] : [];
    return graphql ? ["closing_reference", "pr_body_keyword"] : ["pr_body_keyword"];
  };

  function checkMined(text: string, graphql: boolean): any[] {
    const mined = text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(mined).toHaveLength(intents.length);
    const github = Object.fromEntries(
      readdirSync(join(corpusDir, "github")).map((f) => {
        const g = JSON.parse(readFileSync(join(corpusDir, "github", f), "utf8"));
        return [g.repository.full_name, g];
      }),
    );
    for (const candidate of mined) {
      const intent = intents.find((i) => `${i.repo.replace("/", "__")}-${i.number}` === candidate.id)!;
      const sources = expectedSources(intent, graphql);
      expect(candidate.issues.map((i: any) => `${i.repo}#${i.number}`).join(",") || null, candidate.id).toBe(sources.length ? intent.issue : null);
      for (const issue of candidate.issues)
        expect({ id: candidate.id, sources: issue.link_sources, first: issue.linked_by }).toEqual({ id: candidate.id, sources, first: sources[0] });
      const g = github[candidate.repo];
      const n = candidate.pull_number;
      // never-submitted reviews, and COMMENTED reviews with no text (mere holders of line comments), are no discussion
      const submitted = g.reviews[n].filter((r: any) => r.state !== "PENDING" && !(r.state === "COMMENTED" && !String(r.body ?? "").trim()));
      expect(candidate.pull_request.discussion).toHaveLength(submitted.length + g.review_comments[n].length + g.issue_comments[n].length);
      // each line comment keeps the review it was submitted in
      for (const item of candidate.pull_request.discussion.filter((d: any) => d.kind === "review_comment")) {
        const raw = g.review_comments[n].find((c: any) => c.id === item.id);
        expect(item.review_id, `${candidate.id} ${item.id}`).toBe(raw.pull_request_review_id ?? undefined);
      }
      expect(candidate.base_commit).toBe(g.pulls[n].base.sha);
      expect(candidate.pull_request.changed_files).toEqual(g.pull_files[n].map((f: any) => f.filename).sort());
      expect(candidate.pull_request.commits.map((c: any) => c.sha)).toEqual(g.pull_commits[n].map((c: any) => c.sha));
    }
    // the decoy issue is mentioned, and even "fixx"ed, by several pull requests, but closed by none
    expect(mined.some((m) => /Related to #1\b/.test(m.pull_request.body))).toBe(true);
    expect(mined.every((m) => m.issues.every((i: any) => !(i.repo === m.repo && i.number === 1)))).toBe(true);
    // A deleted issue is a link skipped and said; a transferred one is followed to its new home.
    const moved = mined.find((m) => intents.find((i) => `${i.repo.replace("/", "__")}-${i.number}` === m.id)!.extras.includes("moved_issues"))!;
    const records = github[moved.repo];
    const [old, home] = Object.entries(records.transferred as Record<string, { repo: string; number: number }>)[0]!;
    expect(moved.issues).toEqual([expect.objectContaining({ repo: home.repo, number: home.number, transferred_from: `${moved.repo}#${old}` })]);
    expect(moved.notes).toEqual(
      expect.arrayContaining([
        `linked issue ${moved.repo}#${records.deleted[0]} (pr_body_keyword) was deleted (410 Gone); the link is skipped`,
        expect.stringMatching(new RegExp(`^linked issue ${moved.repo}#${old} was transferred to ${home.repo}#${home.number} \\(301\\)`)),
      ]),
    );
    // Over GitHub's 250-commit cap: all commits come from git, the keyword in the last one links.
    const long = mined.find((m) => m.pull_request.commits.length > 250)!;
    expect(long.notes).toEqual([expect.stringMatching(/^pulls\.listCommits stops at 250 commits; all 257 were read from git/)]);
    expect(long.issues.map((i: any) => i.linked_by)).toEqual(["commit_keyword"]);
    return mined;
  }

  it("mines every merged pull request with its linked issues, each with its sources, discussion and exact reference change", () => {
    checkMined(clean, true);
  });

  it("without a token, links by keywords and commit closings over REST alone, and loses no pull request", async () => {
    const c = await copy({ graphql: "off" });
    const summary = await mineOnly(c);
    expect(summary.stages[0]).toMatchObject({ out: intents.length, rejected: 0 });
    checkMined(candidates(c), false);
    expect(c.server.log.some((e) => e.path === "/graphql")).toBe(false);
    // The mentioned issues' timelines were asked, and the closed events the PRs caused name no commit.
    expect(c.server.log.some((e) => /\/issues\/\d+\/timeline/.test(e.path))).toBe(true);
  });

  it("finishes with the same output under 5xx bursts, resets, truncated and slow bodies, and both rate limits", async () => {
    const c = await copy({ secondary_wait_seconds: 1 });
    c.server.inject(
      { kind: "server_error", count: 3, status: 503, path: /\/pulls\/\d+\/commits$/ },
      { kind: "reset", count: 2, path: /\/pulls\/\d+\/reviews$/ },
      { kind: "truncate", count: 2, path: /\/issues\/\d+\/comments$/ },
      { kind: "slow", count: 2, delayMs: 50, path: /\/pulls\/\d+\/files$/ },
      { kind: "secondary_rate_limit", count: 1, retryAfterSeconds: 1, path: /\/pulls\/\d+\/comments$/ },
      { kind: "server_error", count: 2, status: 502, path: /\/pulls$/ },
      // GitHub may answer a secondary limit with 429, and without Retry-After (then wait a minute; here a second).
      { kind: "too_many_requests", count: 1, path: /\/issues\/\d+$/ },
      { kind: "secondary_rate_limit", count: 1, path: /^\/graphql$/ },
      { kind: "server_error", count: 1, status: 502, path: /^\/graphql$/ },
    );
    setTimeout(() => c.server.exhaustRateLimit(), 300);
    const summary = await mineOnly(c);
    expect(summary.stages[0]).toMatchObject({ out: intents.length, rejected: 0 });
    expect(candidates(c)).toBe(clean);
    const faults = new Set(c.server.log.filter((e) => e.fault).map((e) => e.fault));
    expect(faults).toEqual(new Set(["server_error", "reset", "truncate", "slow", "secondary_rate_limit", "too_many_requests"]));
    expect(c.server.log.some((e) => e.status === 403 && !e.fault)).toBe(true);
  });

  it("reads every page of a PR's closing references and keeps the closers of its mentions", async () => {
    // A PR whose closing references run past one page (50): its own issue many times over, and
    // one more issue only on the second page.
    const intent = intents.find((i) => i.link === "timeline" && i.repo === "demo-org/geometry")!;
    const own = Number(intent.issue!.split("#")[1]);
    const recordsDir = join(tempDir(), "github");
    cpSync(join(corpusDir, "github"), recordsDir, { recursive: true });
    const file = join(recordsDir, "demo-org__geometry.json");
    const records = JSON.parse(readFileSync(file, "utf8"));
    const other = intents.find((i) => i.repo === "demo-org/geometry" && i.link === "keyword")!;
    const otherIssue = Number(other.issue!.split("#")[1]);
    records.closing_references[intent.number] = [
      ...Array.from({ length: 55 }, () => ({ repo: "demo-org/geometry", number: own })),
      { repo: "demo-org/geometry", number: otherIssue },
    ];
    writeFileSync(file, JSON.stringify(records));
    const server = new FakeGithub({ recordsDir });
    const url = await server.start();
    try {
      const c = await copy({ api_url: url, repos: [{ repo: "demo-org/geometry", numbers: [intent.number] }] });
      await mineOnly(c);
      const [mined] = candidates(c)
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(mined.issues.map((i: any) => [i.number, i.link_sources])).toEqual([
        [own, ["closing_reference", "timeline"]],
        [otherIssue, ["closing_reference"]],
      ]);
      expect(server.log.filter((e) => e.graphql).length).toBe(2);
    } finally {
      await server.stop();
    }
  });

  it("skips a linked issue GitHub no longer has (404 or 410) with a note, and rejects a listed pull request that is gone", async () => {
    const c = await copy({ repos: [{ repo: "demo-org/geometry" }, { repo: "demo-org/ledger", numbers: [3, 9999] }] });
    const first = intents.find((i) => i.issue?.startsWith("demo-org/geometry#") && i.link === "keyword")!;
    const issueNumber = Number(first.issue!.split("#")[1]);
    c.server.inject({ kind: "not_found", count: 1000, path: new RegExp(`^/repos/demo-org/geometry/issues/${issueNumber}$`) });
    await mineOnly(c);
    const mined = candidates(c)
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const hit = mined.find((m) => m.id === `demo-org__geometry-${first.number}`)!;
    expect(hit.issues).toEqual([]);
    expect(hit.notes).toEqual([`linked issue demo-org/geometry#${issueNumber} (closing_reference, pr_body_keyword) does not exist (404); the link is skipped`]);
    expect(mined.filter((m) => m.repo === "demo-org/geometry")).toHaveLength(intents.filter((i) => i.repo === "demo-org/geometry").length);
    expect(rejects(c)).toEqual([
      expect.objectContaining({
        record_id: "demo-org__ledger-9999",
        reason: "not_found",
        field: "numbers",
        message: "demo-org/ledger#9999: no such pull request (404)",
      }),
    ]);
  });

  it("resumes after a SIGKILL without refetching finished pull requests, to byte-identical output", async () => {
    const c = await copy();
    const cacheDir = join(c.workDir, "cache", "mine");
    // Every answer of the killed run comes slowly, so it is still mining when 15 pull requests are
    // done, however fast or loaded the machine: the kill never races the run's end.
    c.server.inject({ kind: "slow", count: 1_000_000, delayMs: 40 });
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, [bin, "mine", "--config", c.configPath, "-q"], { stdio: "ignore" });
      const poll = setInterval(() => {
        if (existsSync(cacheDir) && entries(cacheDir).length >= 15) {
          clearInterval(poll);
          child.kill("SIGKILL");
        }
      });
      child.on("exit", (_code, signal) => {
        clearInterval(poll);
        signal === "SIGKILL" ? resolve() : reject(new Error("the mining run finished before it could be killed"));
      });
    });
    const finished = entries(cacheDir).length;
    expect(finished).toBeGreaterThanOrEqual(15);
    c.server.clearFaults();
    const before = c.server.log.length;
    const summary = await mineOnly(c);
    expect(summary.stages[0]).toMatchObject({ out: intents.length, reused: finished });
    expect(candidates(c)).toBe(clean);
    // The re-run asks about no pull request that the killed run had finished.
    const rerun = c.server.log.slice(before);
    const prsAsked = new Set(rerun.flatMap((e) => /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)\//.exec(e.path)?.slice(1, 3).join("#") ?? []));
    expect(prsAsked.size).toBeLessThanOrEqual(intents.length - finished);
    expect(rerun.filter((e) => e.path.includes("/pulls?")).every((e) => e.conditional && e.status === 304)).toBe(true);
  });

  it("replays a recorded run offline with no request, and says what an empty recording lacks", async () => {
    const c = await copy();
    await mineOnly(c);
    const sent = c.server.log.length;
    const offline = await mineOnly(c, {
      stageConfigs: {
        ...c.options.stageConfigs,
        mine: { ...(c.options.stageConfigs.mine as object), github: { ...(c.options.stageConfigs.mine as any).github, offline: true } },
      },
    });
    expect(offline.stages[0]).toMatchObject({ status: "ran", out: intents.length });
    expect(c.server.log.length).toBe(sent);
    expect(candidates(c)).toBe(clean);

    const empty = await copy({ offline: true });
    await mineOnly(empty);
    expect(rejects(empty)[0].message).toMatch(/offline: GET \/repos\/demo-org\/\w+\/pulls\?.* is not in the recording/);
    expect(empty.server.log).toHaveLength(0);
  });

  it("sends the token but never writes it to an artifact, cache, log or message", async () => {
    const secret = "ghp_NeverWriteMe0123456789";
    const saved = process.env.GITHUB_TOKEN;
    process.env.GITHUB_TOKEN = secret;
    try {
      // The demo's config names a token file; without one, the token comes from GITHUB_TOKEN.
      const c = await copy({ token_file: null });
      c.server.inject({ kind: "not_found", count: 1000, path: /^\/repos\/demo-org\/ledger\/pulls$/ });
      await mineOnly(c);
      expect(c.server.log.every((e) => e.authorized)).toBe(true);
      for (const file of walk(c.workDir)) expect(readFileSync(file).includes(secret), file).toBe(false);
    } finally {
      if (saved === undefined) delete process.env.GITHUB_TOKEN;
      else process.env.GITHUB_TOKEN = saved;
    }
  });
});
