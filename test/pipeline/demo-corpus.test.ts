import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { buildDemoCorpus, demoRepoPath, type PullIntent } from "../../demo/build.ts";
import { git } from "../../pipeline/git.ts";
import { ClassificationRules } from "../../pipeline/schemas/repo-profile.ts";
import { LocalityIndex } from "../../pipeline/locality.ts";
import { importSwebench } from "../../stages/mine/swebench.ts";
import { splitReferenceChange } from "../../stages/split/split.ts";
import { pytestAt } from "../helpers/pytest-run.ts";
import { fileTempDir, tempDir } from "../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../data/demo/corpus.yaml", import.meta.url));

async function fingerprint(dir: string): Promise<string> {
  const hash = createHash("sha256");
  for (const file of [
    "records.jsonl",
    "intents.json",
    ...readdirSync(join(dir, "github"))
      .sort()
      .map((f) => `github/${f}`),
  ])
    hash.update(file).update(readFileSync(join(dir, file)));
  for (const repo of readdirSync(join(dir, "repos")).sort())
    hash.update(await git(["for-each-ref", "--format=%(objectname) %(refname)"], { cwd: join(dir, "repos", repo) }));
  return hash.digest("hex");
}

describe("the demo corpus", () => {
  let dir: string;
  let intents: PullIntent[];
  let records: ReturnType<typeof importSwebench>["candidates"];
  let github: Record<string, any>;

  beforeAll(async () => {
    dir = fileTempDir();
    await buildDemoCorpus(plan, dir);
    intents = JSON.parse(readFileSync(join(dir, "intents.json"), "utf8"));
    records = importSwebench("records.jsonl", readFileSync(join(dir, "records.jsonl"), "utf8")).candidates;
    github = Object.fromEntries(readdirSync(join(dir, "github")).map((f) => [f, JSON.parse(readFileSync(join(dir, "github", f), "utf8"))]));
  });

  it("is byte-identical when generated again, commit ids included", async () => {
    const again = tempDir();
    await buildDemoCorpus(plan, again);
    expect(await fingerprint(again)).toBe(await fingerprint(dir));
  });

  it("has pull requests open at the same time: each of a wave branches from main as the wave began, before any of the others is merged", async () => {
    const planned = (parse(readFileSync(plan, "utf8")) as { repositories: { repo: string; pull_requests: { wave?: number }[] }[] }).repositories;
    let waves = 0;
    for (const repoPlan of planned) {
      const repoDir = demoRepoPath(dir, repoPlan.repo);
      const pulls = Object.values(github[`${repoPlan.repo.replace("/", "__")}.json`].pulls as Record<string, any>).sort((a, b) => a.number - b.number);
      const record = new Map(records.map((r) => [r.id, r]));
      // The plan's pull requests in order, with their wave: the GitHub records number them in the same order.
      const inWave = new Map<number, any[]>();
      pulls.forEach((pull, i) => {
        const wave = repoPlan.pull_requests[i]?.wave;
        if (wave !== undefined) inWave.set(wave, [...(inWave.get(wave) ?? []), pull]);
      });
      for (const members of inWave.values()) {
        waves++;
        const bases = new Set(members.map((p) => record.get(`${repoPlan.repo.replace("/", "__")}-${p.number}`)!.base_commit));
        expect(bases.size, `${repoPlan.repo}: one base for a wave`).toBe(1);
        const [base] = bases;
        for (const a of members)
          for (const b of members) {
            if (a === b) continue;
            // No base of the wave holds another's merge, and every head branches off the wave's base.
            await expect(git(["merge-base", "--is-ancestor", a.merge_commit_sha, base!], { cwd: repoDir })).rejects.toThrow();
            expect((await git(["merge-base", a.head.sha, b.head.sha], { cwd: repoDir })).trim()).toBe(base);
          }
      }
    }
    expect(waves).toBeGreaterThanOrEqual(4);
  });

  it("is built by one process at a time, and never commits into a repository around it", async () => {
    // The corpus inside a git repository of its own, as a clone's .switch-swe/ is.
    const outer = tempDir();
    await git(["init", "--quiet"], { cwd: outer });
    await git(["-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "--quiet", "--allow-empty", "-m", "outer"], { cwd: outer });
    const out = join(outer, "corpus");
    const [first, second] = await Promise.allSettled([buildDemoCorpus(plan, out), buildDemoCorpus(plan, out)]);
    const refused = [first, second].filter((r) => r.status === "rejected");
    expect(refused).toHaveLength(1);
    expect(String((refused[0] as PromiseRejectedResult).reason)).toMatch(
      new RegExp(`another process \\(pid ${process.pid}\\) is building the demo corpus here`),
    );
    expect((await git(["rev-list", "--count", "HEAD"], { cwd: outer })).trim()).toBe("1");
    expect(await fingerprint(out)).toBe(await fingerprint(dir));
  });

  it("has three repositories of different shapes with 15+ merged pull requests each, merged both ways", async () => {
    const repos = Object.values(github).filter((g) => Object.keys(g.pulls).length);
    expect(repos.length).toBeGreaterThanOrEqual(3);
    for (const g of repos) expect(Object.values(g.pulls).filter((p: any) => p.merged_at).length).toBeGreaterThanOrEqual(15);
    const layouts = new Set(
      records.map((r) => (r.reference_diff.includes("b/src/") ? "src" : r.reference_diff.match(/b\/\w+\/tests\//) ? "inpackage" : "flat")),
    );
    expect(layouts).toEqual(new Set(["src", "flat", "inpackage"]));
    // merge commits have two parents, squash merges one; every PR has several commits
    let merges = 0;
    let squashes = 0;
    for (const g of repos) {
      const repoDir = demoRepoPath(dir, g.repository.full_name);
      for (const pr of Object.values(g.pulls) as any[]) {
        const parents = (await git(["rev-list", "--parents", "-n", "1", pr.merge_commit_sha], { cwd: repoDir })).trim().split(" ").length - 1;
        parents === 2 ? merges++ : squashes++;
        expect((await git(["rev-parse", `refs/pull/${pr.number}/head`], { cwd: repoDir })).trim()).toBe(pr.head.sha);
        expect(g.pull_commits[pr.number].length).toBeGreaterThanOrEqual(1);
      }
    }
    expect(merges).toBeGreaterThan(0);
    expect(squashes).toBeGreaterThan(0);
    expect(intents.filter((i) => i.stages >= 2).length / intents.length).toBeGreaterThanOrEqual(0.6);
  });

  it("has the variety every stage needs, found in the diffs themselves", () => {
    const profiles = { package_roots: ["src/geometry", "textkit", "ledger"] };
    const splits = records.map((r) => ({ id: r.id, repo: r.repo, split: splitReferenceChange(r.reference_diff, ClassificationRules.parse(profiles)) }));
    const sourceCounts = new Set(splits.map((s) => s.split.sourceFiles.length));
    for (const n of [1, 2, 3, 4]) expect(sourceCounts).toContain(n);
    const statuses = new Set(splits.flatMap((s) => s.split.files.map((f) => f.status)));
    expect(statuses).toContain("renamed");
    expect(statuses).toContain("deleted");
    expect(statuses).toContain("added");
    expect(splits.some((s) => s.split.files.some((f) => f.binary && f.class === "test"))).toBe(true);
    expect(splits.some((s) => s.split.files.some((f) => f.binary && f.class === "source"))).toBe(true);
    expect(splits.some((s) => s.split.files.some((f) => f.path.endsWith("conftest.py")))).toBe(true);
    expect(splits.some((s) => s.split.sourceDirs.includes("."))).toBe(true);
    expect(
      splits.filter(
        (s) => s.split.files.every((f) => f.class === "docs") && s.split.files.some((f) => f.path.startsWith("docs/") || f.path.startsWith("README")),
      ).length,
    ).toBeGreaterThan(0);
    expect(splits.filter((s) => s.split.files.length && s.split.files.every((f) => f.path === "CHANGES.rst")).length).toBeGreaterThan(0);
    expect(splits.filter((s) => s.split.sourceFiles.length && !s.split.testPatch).length).toBeGreaterThan(0);
    expect(records.some((r) => r.reference_diff.includes("flaky on purpose"))).toBe(true);
    const index = new LocalityIndex(
      splits
        .filter((s) => s.split.sourceFiles.length)
        .map((s) => ({ id: s.id, repo: s.repo, sourceFiles: s.split.sourceFiles, sourceDirs: s.split.sourceDirs })),
    );
    const counts = [...index.counts().values()].reduce((a, c) => ({ near: a.near + c.near, far: a.far + c.far, ineligible: a.ineligible + c.ineligible }), {
      near: 0,
      far: 0,
      ineligible: 0,
    });
    expect(counts.near).toBeGreaterThanOrEqual(30);
    expect(counts.far).toBeGreaterThanOrEqual(100);
    expect(counts.ineligible).toBeGreaterThanOrEqual(30);
  });

  it("has linked issues in every form GitHub accepts, decoys that must not link, and the discussion noise", () => {
    const bodies = Object.values(github).flatMap((g) => Object.values(g.pulls).map((p: any) => p.body as string));
    for (const form of [
      /^Fixes #\d+/m,
      /^closes #\d+/m,
      /^Resolves: #\d+/m,
      /^Closes demo-org\/tracker#\d+/m,
      /^Resolved https:\/\/github\.com\/demo-org\/\w+\/issues\/\d+/m,
      /^Follow-up to the discussion in #\d+\./m,
      /fixx #\d+/,
    ]) {
      expect(
        bodies.some((b) => form.test(b)),
        String(form),
      ).toBe(true);
    }
    const commitMessages = Object.values(github).flatMap((g) =>
      Object.values(g.pull_commits)
        .flat()
        .map((c: any) => c.commit.message as string),
    );
    expect(commitMessages.some((m) => /This fixes #\d+\./.test(m))).toBe(true);
    const reviews = Object.values(github).flatMap((g) => Object.values(g.reviews).flat() as any[]);
    expect(new Set(reviews.map((r) => r.state))).toEqual(new Set(["APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING"]));
    // A pending review was never submitted: GitHub gives it no submitted_at.
    expect(reviews.filter((r) => r.state === "PENDING").every((r) => !("submitted_at" in r))).toBe(true);
    expect(reviews.filter((r) => r.state !== "PENDING").every((r) => r.submitted_at)).toBe(true);
    const reviewComments = Object.values(github).flatMap((g) => Object.values(g.review_comments).flat() as any[]);
    expect(reviewComments.every((c) => c.path && c.line >= 1)).toBe(true);
    expect(reviewComments.some((c) => c.body.includes("```suggestion"))).toBe(true);
    const bodiesOf = reviewComments.map((c) => `${c.pull_request_review_id}:${c.body}`);
    expect(bodiesOf.length).toBeGreaterThan(new Set(bodiesOf).size);
    const comments = Object.values(github).flatMap((g) =>
      Object.entries(g.issue_comments).flatMap(([n, list]) => (list as any[]).map((c) => ({ ...c, merged_at: g.pulls[n]?.merged_at }))),
    );
    expect(comments.some((c) => c.user.type === "Bot")).toBe(true);
    expect(comments.some((c) => /^(Thanks, done!|Rebased on main)/.test(c.body))).toBe(true);
    expect(comments.some((c) => c.merged_at && c.created_at > c.merged_at)).toBe(true);
    const timelines = Object.values(github).flatMap((g) => Object.values(g.timelines).flat() as any[]);
    expect(timelines.some((e) => e.event === "connected")).toBe(true);
    // A commit message closed it: the closed event names the commit. A pull request closed it:
    // GitHub leaves commit_id null, and only GraphQL's closer (and closing references) say which.
    expect(timelines.some((e) => e.event === "closed" && e.commit_id)).toBe(true);
    expect(timelines.some((e) => e.event === "closed" && e.commit_id === null)).toBe(true);
    const closers = Object.values(github).flatMap((g) => Object.values(g.closers).flat() as any[]);
    expect(new Set(closers.map((c) => c.type))).toEqual(new Set(["PullRequest", "Commit"]));
    // Linked in the sidebar only: in the closing references, named nowhere in the pull request.
    const repoOf = (name: string) => Object.values(github).find((g) => g.repository.full_name === name)!;
    const sidebar = intents.filter((i) => {
      if (!i.issue) return false;
      const g = repoOf(i.repo);
      const named = new RegExp(`#${i.issue.split("#")[1]}\\b`);
      return !named.test(String(g.pulls[i.number].body)) && !g.pull_commits[i.number].some((c: any) => named.test(c.commit.message));
    });
    expect(sidebar.length).toBeGreaterThanOrEqual(1);
    for (const i of sidebar)
      expect(repoOf(i.repo).closing_references[i.number]).toContainEqual({ repo: i.issue!.split("#")[0], number: Number(i.issue!.split("#")[1]) });
    // A deleted and a transferred issue; a pull request over GitHub's 250-commit list cap; a null body.
    expect(Object.values(github).some((g) => g.deleted.length > 0)).toBe(true);
    expect(Object.values(github).some((g) => Object.keys(g.transferred).length > 0)).toBe(true);
    expect(Object.values(github).some((g) => Object.values(g.pull_commits).some((list: any) => list.length > 250))).toBe(true);
    expect(Object.values(github).some((g) => Object.values(g.pulls).some((p: any) => p.body === null))).toBe(true);
  });

  it("has real tests: F2P fail before the fix and pass after, regressions break, the rest passes in both states", async () => {
    const byId = new Map(intents.map((i) => [`${i.repo.replace("/", "__")}-${i.number}`, i]));
    const problems: string[] = [];
    for (const record of records) {
      const intent = byId.get(record.id)!;
      const repoDir = demoRepoPath(dir, record.repo);
      const before = await pytestAt(repoDir, record.base_commit, [record.upstream_split!.test_patch]);
      const after = await pytestAt(repoDir, record.base_commit, [record.upstream_split!.test_patch, record.upstream_split!.patch]);
      const f2p = [...after]
        .filter(([t, s]) => s === "passed" && before.get(t) !== "passed")
        .map(([t]) => t)
        .sort();
      const p2f = [...before]
        .filter(([t, s]) => s === "passed" && after.get(t) !== "passed")
        .map(([t]) => t)
        .sort();
      const expected = intent.fail_to_pass;
      const unexpected = f2p.filter((t) => !expected.includes(t) && !intent.flaky.includes(t));
      if (expected.some((t) => !f2p.includes(t)) || unexpected.length || p2f.join() !== [...intent.regressions].sort().join()) {
        problems.push(`${record.id}: F2P ${f2p.join(", ")} expected ${expected.join(", ")}; P2F ${p2f.join(", ")}`);
      }
      for (const t of intent.flaky) expect(before.get(t), t).not.toBe("passed");
    }
    expect(problems).toEqual([]);
    expect(intents.filter((i) => i.regressions.length).length).toBeGreaterThanOrEqual(1);
  });
});
