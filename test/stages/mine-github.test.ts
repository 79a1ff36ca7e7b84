import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildDemoCorpus, type PullIntent } from "../../pipeline/demo/build.ts";
import { runPipeline } from "../../pipeline/engine.ts";
import { mineStage } from "../../stages/mine/index.ts";
import { prepareDemoCopy, type DemoCopy } from "../helpers/demo-copy.ts";
import { fileTempDir, tempDir } from "../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../data/demo/corpus.yaml", import.meta.url));
const bin = fileURLToPath(new URL("../../bin/switch-swe.mjs", import.meta.url));

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
  const mineOnly = (c: DemoCopy, extra: Partial<DemoCopy["options"]> = {}) => runPipeline({ ...c.options, stages: [mineStage], ...extra });
  const candidates = (c: DemoCopy) => readFileSync(join(c.workDir, "artifacts", "mine", "candidates.jsonl"), "utf8");
  const rejects = (c: DemoCopy) => readFileSync(join(c.workDir, "artifacts", "mine", "rejects.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));

  beforeAll(async () => {
    corpusDir = fileTempDir();
    await buildDemoCorpus(plan, corpusDir);
    intents = JSON.parse(readFileSync(join(corpusDir, "intents.json"), "utf8"));
    // The uninterrupted, fault-free run every other run is compared with.
    const reference = await prepareDemoCopy(fileTempDir(), { corpusDir, mine: { wait_unit_ms: 5 } });
    const summary = await runPipeline({ ...reference.options, stages: [mineStage] });
    await reference.server.stop();
    expect(summary.stages[0]).toMatchObject({ status: "ran", out: 48, rejected: 0 });
    clean = readFileSync(join(reference.workDir, "artifacts", "mine", "candidates.jsonl"), "utf8");
  });
  afterEach(async () => {
    while (copies.length) await copies.pop()!.server.stop();
  });

  it("mines every merged pull request with its linked issues, discussion and exact reference change", async () => {
    const mined = clean.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const github = Object.fromEntries(readdirSync(join(corpusDir, "github")).map((f) => { const g = JSON.parse(readFileSync(join(corpusDir, "github", f), "utf8")); return [g.repository.full_name, g]; }));
    for (const candidate of mined) {
      const intent = intents.find((i) => `${i.repo.replace("/", "__")}-${i.number}` === candidate.id)!;
      expect(candidate.issues.map((i: any) => `${i.repo}#${i.number}`).join(",") || null, candidate.id).toBe(intent.issue);
      const g = github[candidate.repo];
      const n = candidate.pull_number;
      expect(candidate.pull_request.discussion).toHaveLength(g.reviews[n].length + g.review_comments[n].length + g.issue_comments[n].length);
      expect(candidate.base_commit).toBe(g.pulls[n].base.sha);
      expect(candidate.pull_request.changed_files).toEqual(g.pull_files[n].map((f: any) => f.filename).sort());
    }
    const byLink = new Map<string, number>();
    for (const m of mined) for (const i of m.issues) byLink.set(i.linked_by, (byLink.get(i.linked_by) ?? 0) + 1);
    expect([...byLink.keys()].sort()).toEqual(["commit_keyword", "pr_body_keyword", "timeline"]);
    // the decoy issue is mentioned, and even "fixx"ed, by several pull requests, but closed by none
    expect(mined.some((m) => /Related to #1\b/.test(m.pull_request.body))).toBe(true);
    expect(mined.every((m) => m.issues.every((i: any) => !(i.repo === m.repo && i.number === 1)))).toBe(true);
  });

  it("finishes with the same output under 5xx bursts, resets, truncated and slow bodies, and both rate limits", async () => {
    const c = await copy();
    c.server.inject(
      { kind: "server_error", count: 3, status: 503, path: /\/pulls\/\d+\/commits$/ },
      { kind: "reset", count: 2, path: /\/pulls\/\d+\/reviews$/ },
      { kind: "truncate", count: 2, path: /\/issues\/\d+\/comments$/ },
      { kind: "slow", count: 2, delayMs: 50, path: /\/pulls\/\d+\/files$/ },
      { kind: "secondary_rate_limit", count: 1, retryAfterSeconds: 1, path: /\/pulls\/\d+\/comments$/ },
      { kind: "server_error", count: 2, status: 502, path: /\/pulls$/ },
    );
    setTimeout(() => c.server.exhaustRateLimit(), 300);
    const summary = await mineOnly(c);
    expect(summary.stages[0]).toMatchObject({ out: 48, rejected: 0 });
    expect(candidates(c)).toBe(clean);
    const faults = new Set(c.server.log.filter((e) => e.fault).map((e) => e.fault));
    expect(faults).toEqual(new Set(["server_error", "reset", "truncate", "slow", "secondary_rate_limit"]));
    expect(c.server.log.some((e) => e.status === 403 && !e.fault)).toBe(true);
  });

  it("records a deleted issue as a not_found reject and mines the rest", async () => {
    const c = await copy();
    const first = intents.find((i) => i.issue?.startsWith("demo-org/geometry#"))!;
    const issueNumber = Number(first.issue!.split("#")[1]);
    c.server.inject({ kind: "not_found", count: 1000, path: new RegExp(`^/repos/demo-org/geometry/issues/${issueNumber}$`) });
    const summary = await mineOnly(c);
    expect(summary.stages[0]).toMatchObject({ out: 47, rejected: 1 });
    expect(rejects(c)).toEqual([expect.objectContaining({ record_id: `demo-org__geometry-${first.number}`, reason: "not_found", field: "issues", message: expect.stringContaining(`linked issue demo-org/geometry#${issueNumber} was not found`) })]);
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
    expect(summary.stages[0]).toMatchObject({ out: 48, reused: finished });
    expect(candidates(c)).toBe(clean);
    // The re-run asks about no pull request that the killed run had finished.
    const rerun = c.server.log.slice(before);
    const prsAsked = new Set(rerun.flatMap((e) => /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)\//.exec(e.path)?.slice(1, 3).join("#") ?? []));
    expect(prsAsked.size).toBeLessThanOrEqual(48 - finished);
    expect(rerun.filter((e) => e.path.includes("/pulls?")).every((e) => e.conditional && e.status === 304)).toBe(true);
  });

  it("replays a recorded run offline with no request, and says what an empty recording lacks", async () => {
    const c = await copy();
    await mineOnly(c);
    const sent = c.server.log.length;
    const offline = await mineOnly(c, { stageConfigs: { ...c.options.stageConfigs, mine: { ...(c.options.stageConfigs.mine as object), github: { ...(c.options.stageConfigs.mine as any).github, offline: true } } } });
    expect(offline.stages[0]).toMatchObject({ status: "ran", out: 48 });
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
      const c = await copy();
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
