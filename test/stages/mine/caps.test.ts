import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeGithub } from "../../../demo/github-server.ts";
import { GithubRecorder } from "../../../demo/records.ts";
import { canonicalJson } from "../../../pipeline/canonical.ts";
import { createGithubClient } from "../../../pipeline/github-client.ts";
import { git, MirrorCache } from "../../../pipeline/git.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { minePull } from "../../../stages/mine/github.ts";
import type { PullRequest } from "../../../stages/mine/github-api.ts";
import { tempDir } from "../../helpers/tmp.ts";

const DATE = {
  GIT_AUTHOR_DATE: "2024-05-01T10:00:00Z",
  GIT_COMMITTER_DATE: "2024-05-01T10:00:00Z",
  GIT_AUTHOR_NAME: "A",
  GIT_AUTHOR_EMAIL: "a@x.invalid",
  GIT_COMMITTER_NAME: "A",
  GIT_COMMITTER_EMAIL: "a@x.invalid",
};

/**
 * A pull request over GitHub's 3,000-file list cap: pulls.listFiles stops at 3,000 without saying
 * so, and the miner must take the file list from git and say it did.
 */
describe("mining a pull request over GitHub's file-list cap", () => {
  let server: FakeGithub | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it("reads every changed file from git, and notes that the API's list was capped", async () => {
    const dir = tempDir();
    const repoDir = join(dir, "repo");
    mkdirSync(repoDir);
    const run = (args: string[]) => git(args, { cwd: repoDir, env: DATE });
    await run(["init", "--quiet", "--initial-branch=main"]);
    writeFileSync(join(repoDir, "README.md"), "data\n");
    await run(["add", "-A"]);
    await run(["commit", "--quiet", "-m", "Initial import"]);
    const base = (await run(["rev-parse", "HEAD"])).trim();
    await run(["checkout", "--quiet", "-b", "vendor"]);
    mkdirSync(join(repoDir, "data"));
    for (let i = 0; i < 3005; i++) writeFileSync(join(repoDir, "data", `row-${String(i).padStart(4, "0")}.txt`), `${i}\n`);
    await run(["add", "-A"]);
    await run(["commit", "--quiet", "-m", "Vendor the data set"]);
    const head = (await run(["rev-parse", "HEAD"])).trim();
    const tree = (await run(["rev-parse", "HEAD^{tree}"])).trim();
    await run(["checkout", "--quiet", "main"]);
    await run(["merge", "--quiet", "--no-ff", "-m", "Merge pull request #1", "vendor"]);
    const merge = (await run(["rev-parse", "HEAD"])).trim();
    const diff = await run(["diff", "--binary", "--full-index", "-M", base, head]);

    const at = Date.parse("2024-05-01T10:00:00Z");
    const recorder = new GithubRecorder("demo-org/bigdata", at);
    recorder.pullRequest({
      plan: { kind: "docs_only", modules: [], rounds: 0, link: "none", merge: "merge", extras: [] },
      index: 0,
      title: "Vendor the data set",
      texts: ["Vendor the data set."],
      fns: [],
      issueAt: at,
      prAt: at,
      roundAt: [],
      approvedAt: at,
      mergedAt: at + 1000,
      base,
      head,
      mergeCommit: merge,
      commits: [{ sha: head, message: "Vendor the data set", at, tree }],
      diff,
      decoyIssue: 0,
      tracker: new GithubRecorder("demo-org/tracker", at),
      moduleText: () => undefined,
    });
    const recordsDir = join(dir, "github");
    mkdirSync(recordsDir);
    const records = recorder.records();
    writeFileSync(join(recordsDir, "demo-org__bigdata.json"), canonicalJson(records));
    expect(records.pull_files[1]).toHaveLength(3005);

    server = new FakeGithub({ recordsDir });
    const { octokit } = createGithubClient({ baseUrl: await server.start(), cacheDir: join(dir, "cache"), log: silentLogger, waitUnitMs: 5 });
    const candidate = await minePull(
      { octokit, mirrors: new MirrorCache(join(dir, "mirrors")), cloneSource: () => repoDir },
      { repo: "demo-org/bigdata", number: 1, pull: records.pulls[1] as unknown as PullRequest },
    );

    // The API gave 3,000 over 30 pages; the candidate has all 3,005 files, from git.
    expect(server.log.filter((e) => e.path.includes("/files")).length).toBe(30);
    expect(candidate.pull_request!.changed_files).toHaveLength(3005);
    expect(candidate.pull_request!.changed_files).toContain("data/row-3004.txt");
    expect(candidate.notes).toEqual(["pulls.listFiles stops at 3000 files; all 3005 were read from git"]);
  });
});
