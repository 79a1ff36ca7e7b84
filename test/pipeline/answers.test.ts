import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { answerEvidence, answerFacts, findFixCommit, PullRequestMerges, TreeReader } from "../../pipeline/answers/index.ts";
import { checkoutCommit, derivedCommit } from "../../pipeline/checkouts/derived.ts";
import { git } from "../../pipeline/git.ts";
import { GIT_IDENTITY } from "../helpers/git-repo.ts";
import { fileTempDir } from "../helpers/tmp.ts";

const MODULE = "def area(r):\n    return 3 * r * r\n";
const TESTS = "from pkg.shapes import area\n\n\ndef test_area():\n    assert area(1) == 3\n";
const WITH_TRIM = `${MODULE}\n\ndef trim_span(a, b):\n    return (min(a, b), max(a, b))\n`;
const TESTS_WITH_TRIM = `${TESTS}\n\ndef test_trim_span_basic():\n    from pkg.shapes import trim_span\n    assert trim_span(3, 1) == (1, 3)\n`;

/**
 * A history like a repository's: main at `base`; pull request #7 (trim_span and its test) branches
 * from it and is merged by a merge commit; an `early` commit of main made before that merge; a
 * `later` commit descending from the merge; `copied` (off `early`, not descending from the merge)
 * that carries the same code, as a backport would; `rewritten` descending from the merge with the
 * fix's lines changed since.
 */
let repo: {
  gitDir: string;
  base: string;
  head: string;
  merge: string;
  early: string;
  later: string;
  copied: string;
  rewritten: string;
  patch: string;
  testPatch: string;
};

beforeAll(async () => {
  const dir = fileTempDir("switch-swe-answers-");
  const run = (args: string[]) => git(args, { cwd: dir, env: GIT_IDENTITY });
  const write = (files: Record<string, string>) => {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
  };
  const commit = async (message: string) => {
    await run(["add", "--all"]);
    await run(["commit", "--quiet", "-m", message]);
    return (await run(["rev-parse", "HEAD"])).trim();
  };
  await run(["init", "--quiet", "--initial-branch=main"]);
  write({ "pkg/__init__.py": "", "pkg/shapes.py": MODULE, "tests/test_shapes.py": TESTS, "pkg/other.py": "X = 1\n" });
  const base = await commit("base");
  await run(["checkout", "--quiet", "-b", "feature"]);
  write({ "pkg/shapes.py": WITH_TRIM });
  await commit("Add trim_span");
  write({ "tests/test_shapes.py": TESTS_WITH_TRIM });
  const head = await commit("Add its test");
  await run(["checkout", "--quiet", "main"]);
  write({ "pkg/other.py": "X = 2\n" });
  const early = await commit("Unrelated change");
  await run(["merge", "--quiet", "--no-ff", "-m", "Merge pull request #7 from someone/feature", "feature"]);
  const merge = (await run(["rev-parse", "HEAD"])).trim();
  write({ "pkg/other.py": "X = 3\n" });
  const later = await commit("Later work");
  write({ "pkg/shapes.py": WITH_TRIM.replace("min(a, b), max(a, b)", "sorted((a, b))") });
  const rewritten = await commit("Rewrite trim_span");
  await run(["checkout", "--quiet", "-b", "backport", early]);
  write({ "pkg/shapes.py": WITH_TRIM });
  const copied = await commit("Backport trim_span");
  const patch = await run(["diff", base, head, "--", "pkg"]);
  const testPatch = await run(["diff", base, head, "--", "tests"]);
  repo = { gitDir: join(dir, ".git"), base, head, merge, early, later, copied, rewritten, patch, testPatch };
});

const gitOf = () => (args: string[]) => git([`--git-dir=${repo.gitDir}`, ...args]);

async function facts(fix: string | null) {
  return answerFacts(new TreeReader(gitOf()), { taskId: "o__n-7", base: repo.base, fix, implementationPatch: repo.patch, testPatch: repo.testPatch });
}

describe("the commit that brought a task's fix", () => {
  it("is the merge commit GitHub names, the commit whose message merges the pull request, or the first that holds the reference", async () => {
    const reader = new TreeReader(gitOf());
    const merges = await PullRequestMerges.read(gitOf());
    const upstream = (await facts(null)).hunks;
    const find = (given: { pullNumber: number | null; mergeCommit: string | null }) =>
      findFixCommit(reader, gitOf(), merges, { base: repo.base, upstream, ...given });
    expect(await find({ pullNumber: 7, mergeCommit: repo.merge })).toMatchObject({ commit: repo.merge, found_by: "merge_commit" });
    expect(await find({ pullNumber: 7, mergeCommit: null })).toMatchObject({ commit: repo.merge, found_by: "pull_request_message" });
    // No pull request named: the first commit after the base (on the default branch) holding it all, here the branch's own head.
    expect(await find({ pullNumber: null, mergeCommit: null })).toMatchObject({ commit: repo.head, found_by: "reference_present" });
    // A merge commit the repository does not have, and a pull request no message merges: the reference decides.
    expect(await find({ pullNumber: 8, mergeCommit: "f".repeat(40) })).toMatchObject({ found_by: "reference_present" });
  });
});

describe("whether a checkout holds a task's answer", () => {
  it("finds it by history, by a hunk with its context and by a name only the reference defines; never where it is not", async () => {
    const answer = await facts(repo.merge);
    expect(answer.newNames).toEqual(["test_trim_span_basic", "trim_span"]);
    const reader = new TreeReader(gitOf());
    const at = (commit: string, reversed = false) => answerEvidence(reader, answer, { commit, reversed });
    expect(await at(repo.early)).toEqual([]);
    expect(await at(repo.base)).toEqual([]);
    const later = await at(repo.later);
    expect(later[0]).toEqual({ by: "history", commit: repo.merge });
    expect(later.map((e) => e.by)).toEqual(expect.arrayContaining(["hunk", "name"]));
    expect(later).toContainEqual({ by: "name", name: "trim_span", path: "pkg/shapes.py" });
    // The backport holds the code (hunk and name) but not the test, and not by history.
    const copied = await at(repo.copied);
    expect(copied.map((e) => e.by)).not.toContain("history");
    expect(copied).toContainEqual({ by: "hunk", path: "pkg/shapes.py", line: 1, part: "implementation" });
    expect(copied).toContainEqual({ by: "name", name: "trim_span", path: "pkg/shapes.py" });
    // Lines changed since the merge: no hunk is there verbatim, but history and the names still are.
    const rewritten = await at(repo.rewritten);
    expect(rewritten.map((e) => e.by)).toEqual(expect.arrayContaining(["history", "name"]));
    expect(rewritten.filter((e) => e.by === "hunk" && e.part === "implementation")).toEqual([]);
  });

  it("does not count lines already at the task's own base", async () => {
    // A change whose only added line is one the base already has elsewhere in the same block: nothing to look for.
    const reader = new TreeReader(gitOf());
    const none = await answerFacts(reader, { taskId: "o__n-1", base: repo.later, fix: null, implementationPatch: repo.patch, testPatch: "" });
    expect(none.hunks).toEqual([]);
    expect(none.newNames).toEqual([]);
  });
});

describe("a checkout with a task's fix reversed out of it", () => {
  it("is one commit, the same id every time, holding nothing of the answer; it cannot be made where the lines changed since", async () => {
    const reversed = [{ taskId: "o__n-7", patch: repo.patch + repo.testPatch }];
    const made = await derivedCommit(repo.gitDir, repo.later, reversed);
    expect(made.ok).toBe(true);
    const again = await derivedCommit(repo.gitDir, repo.later, reversed);
    expect(again).toEqual(made);
    const commit = (made as { commit: string }).commit;
    const answer = await facts(repo.merge);
    expect(await answerEvidence(new TreeReader(gitOf()), answer, { commit, reversed: true })).toEqual([]);
    // Without saying it was reversed, its history still names the fix.
    expect((await answerEvidence(new TreeReader(gitOf()), answer, { commit, reversed: false })).map((e) => e.by)).toEqual(["history"]);
    // The rest of the later base is untouched.
    expect(await git([`--git-dir=${repo.gitDir}`, "show", `${commit}:pkg/other.py`])).toBe("X = 3\n");
    const failed = await derivedCommit(repo.gitDir, repo.rewritten, reversed);
    expect(failed).toMatchObject({ ok: false, taskId: "o__n-7", error: "the reverse conflicts with later changes to pkg/shapes.py" });
    // A session's checkout made again and compared with what the session says.
    const checkout = { path: "/workspace/w01", task_id: "o__n-9", base_commit: repo.later, derived: { without: ["o__n-7"], commit } };
    expect(await checkoutCommit(repo.gitDir, checkout, () => repo.patch + repo.testPatch)).toBe(commit);
    await expect(
      checkoutCommit(repo.gitDir, { ...checkout, derived: { without: ["o__n-7"], commit: "0".repeat(40) } }, () => repo.patch + repo.testPatch),
    ).rejects.toThrow(/made again, the derived checkout is [0-9a-f]{40}, not 0{40}/);
    await expect(checkoutCommit(repo.gitDir, checkout, () => undefined)).rejects.toThrow(/no held-out asset of o__n-7/);
  });
});
