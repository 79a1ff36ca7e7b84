import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkoutCommit, derivedCommit } from "../../../pipeline/checkouts/derived.ts";
import { parseGitDiff } from "../../../pipeline/changes/diff.ts";
import { TreeReader } from "../../../pipeline/answers/tree-reader.ts";
import { derivedSettingBack } from "../../../pipeline/checkouts/roll-back.ts";
import { takenAwayUse } from "../../../stages/select/taken-away.ts";
import { git } from "../../../pipeline/git.ts";
import { GIT_IDENTITY, repoWithChange } from "../../helpers/git-repo.ts";

/**
 * A derived checkout (SPEC §2.7) where a later base changed the lines around a reference's tests,
 * on real git: the reference's source is reversed, and from the test file whose reverse conflicts
 * its tests are taken out by name (a test it changed, a class it added), while later tests stay.
 */
const TESTS = "import os\n\n\ndef test_one():\n    assert os.sep\n";
const REFERENCE_TESTS =
  "import os\nimport re\n\n\ndef test_one():\n    assert os.sep\n    assert re.escape('.') == '\\\\.'\n\n\nclass TestNew:\n    def test_new(self):\n        assert True\n";

/** The reference's change, and later bases of it (a repository of each test's own). */
async function history() {
  const repo = await repoWithChange({ "pkg/m.py": "X = 1\n", "tests/test_a.py": TESTS }, { "pkg/m.py": "X = 2\n", "tests/test_a.py": REFERENCE_TESTS });
  const run = (args: string[]) => git(args, { cwd: repo.dir, env: GIT_IDENTITY });
  const later: Record<string, string> = {};
  const commit = async (files: Record<string, string>) => {
    for (const [path, text] of Object.entries(files)) writeFileSync(join(repo.dir, path), text);
    await run(["commit", "--quiet", "-am", "later"]);
    return (await run(["rev-parse", "HEAD"])).trim();
  };
  // A later test right after the reference's class, and a message added to the test it changed.
  later.adjacent = await commit({
    "tests/test_a.py": REFERENCE_TESTS.replace("assert os.sep\n", 'assert os.sep, "a separator"\n') + "\n\ndef test_two():\n    assert 2\n",
  });
  // The import line beside the reference's own, changed: a conflict outside any definition.
  later.imports = await commit({ "tests/test_a.py": (await run(["show", `${later.adjacent}:tests/test_a.py`])).replace("import os\n", "import os.path\n") });
  // The reference's test class renamed later, its tests unchanged.
  await run(["checkout", "--quiet", later.adjacent!]);
  later.renamed = await commit({ "tests/test_a.py": (await run(["show", `${later.adjacent}:tests/test_a.py`])).replace("class TestNew:", "class TestNewer:") });
  // The source line the reference changed, changed again.
  await run(["checkout", "--quiet", repo.head]);
  later.source = await commit({ "pkg/m.py": "X = 3\n" });
  const show = (commit: string, path: string) => git([`--git-dir=${repo.gitDir}`, "show", `${commit}:${path}`]);
  return { repo, later, show };
}

describe("a derived checkout whose test file does not reverse", () => {
  it("takes out the tests the reference added or changed, keeps the later ones, and reverses the source", async () => {
    const { repo, later, show } = await history();
    const made = await derivedCommit(repo.gitDir, later.adjacent!, [{ taskId: "o__r-1", patch: repo.diff }]);
    expect(made).toEqual({
      ok: true,
      commit: expect.stringMatching(/^[0-9a-f]{40}$/),
      removedTests: ["tests/test_a.py::test_one", "tests/test_a.py::TestNew"],
    });
    const commit = (made as { commit: string }).commit;
    // `import re`, outside any definition, reversed strictly once the tests are out.
    expect(await show(commit, "tests/test_a.py")).toBe("import os\n\n\ndef test_two():\n    assert 2\n");
    expect(await show(commit, "pkg/m.py")).toBe("X = 1\n");
    // The same inputs, the same commit.
    expect(await derivedCommit(repo.gitDir, later.adjacent!, [{ taskId: "o__r-1", patch: repo.diff }])).toEqual(made);
  });

  it("refuses where a later change conflicts outside the reference's definitions, where its test lives on under another name, or in a source file, naming the file", async () => {
    const { repo, later } = await history();
    expect(await derivedCommit(repo.gitDir, later.imports!, [{ taskId: "o__r-1", patch: repo.diff }])).toEqual({
      ok: false,
      taskId: "o__r-1",
      error: "the reverse conflicts with later changes to tests/test_a.py outside its tests",
      path: "tests/test_a.py",
    });
    expect(await derivedCommit(repo.gitDir, later.renamed!, [{ taskId: "o__r-1", patch: repo.diff }])).toEqual({
      ok: false,
      taskId: "o__r-1",
      error: "the reverse conflicts with later changes to tests/test_a.py, and the reference's TestNew is still there under another name",
      path: "tests/test_a.py",
    });
    expect(await derivedCommit(repo.gitDir, later.source!, [{ taskId: "o__r-1", patch: repo.diff }])).toEqual({
      ok: false,
      taskId: "o__r-1",
      error: "the reverse conflicts with later changes to pkg/m.py",
      path: "pkg/m.py",
    });
  });

  it("reverses a reference whose files merge back as one, as before: nothing taken out", async () => {
    const { repo, show } = await history();
    const made = await derivedCommit(repo.gitDir, repo.head, [{ taskId: "o__r-1", patch: repo.diff }]);
    expect(made).toEqual({ ok: true, commit: expect.stringMatching(/^[0-9a-f]{40}$/), removedTests: [] });
    expect(await show((made as { commit: string }).commit, "tests/test_a.py")).toBe(TESTS);
  });
});

describe("a derived checkout whose source file is set back whole (select's roll_back: files)", () => {
  it("sets the file back to its version before the fix, reverses the rest, names the files in its message, and is made again the same", async () => {
    const { repo, later, show } = await history();
    const reversal = [{ taskId: "o__r-1", patch: repo.diff, rolledBack: { to: repo.base, paths: ["pkg/m.py"] } }];
    const made = await derivedCommit(repo.gitDir, later.source!, reversal);
    expect(made).toEqual({ ok: true, commit: expect.stringMatching(/^[0-9a-f]{40}$/), removedTests: [] });
    const commit = (made as { commit: string }).commit;
    expect(await show(commit, "pkg/m.py")).toBe("X = 1\n");
    expect(await show(commit, "tests/test_a.py")).toBe(TESTS);
    expect(await git([`--git-dir=${repo.gitDir}`, "log", "-1", "--format=%B", commit])).toContain(`set back whole: o__r-1: pkg/m.py as at ${repo.base}`);
    expect(await derivedCommit(repo.gitDir, later.source!, reversal)).toEqual(made);
    // A runner makes it from the session's record of it, and refuses one that does not name the files it set back.
    const checkout = { path: "/work/b", task_id: "o__r-2", base_commit: later.source! };
    const derived = { without: ["o__r-1"], commit };
    const patch = () => repo.diff;
    expect(
      await checkoutCommit(
        repo.gitDir,
        { ...checkout, derived: { ...derived, rolled_back: [{ task_id: "o__r-1", to: repo.base, paths: ["pkg/m.py"] }] } },
        patch,
      ),
    ).toBe(commit);
    await expect(checkoutCommit(repo.gitDir, { ...checkout, derived }, patch)).rejects.toThrow(/o__r-1's fix does not reverse out of .*pkg\/m\.py/);
  });

  it("sets back only the task's source files as split classified them, one conflicting file after another", async () => {
    const { repo, later } = await history();
    const reference = { taskId: "o__r-1", patch: repo.diff };
    // The implementation patch as split writes it: the source files alone.
    const implementation = parseGitDiff(repo.diff)
      .filter((s) => s.path === "pkg/m.py")
      .map((s) => s.raw)
      .join("");
    const sources = await derivedSettingBack(repo.gitDir, later.source!, { ...reference, implementationPatch: implementation }, repo.base);
    expect(sources).toMatchObject({ made: { ok: true }, rolled: ["pkg/m.py"] });
    // A file the repository's profile calls a test (astroid's unittest_*.py) is never a source to set back.
    const notSource = await derivedSettingBack(repo.gitDir, later.source!, { ...reference, implementationPatch: "" }, repo.base);
    expect(notSource).toEqual({
      made: { ok: false, taskId: "o__r-1", error: "the reverse conflicts with later changes to pkg/m.py", path: "pkg/m.py" },
      rolled: [],
    });
    // No commit to set back to: the reverse alone.
    expect((await derivedSettingBack(repo.gitDir, later.source!, { ...reference, implementationPatch: implementation }, undefined)).rolled).toEqual([]);
  });

  it("removes a file the fix added where the commit before it has none", async () => {
    const repo = await repoWithChange({ "pkg/m.py": "X = 1\n" }, { "pkg/new.py": "def f():\n    return 1\n" });
    const run = (args: string[]) => git(args, { cwd: repo.dir, env: GIT_IDENTITY });
    writeFileSync(join(repo.dir, "pkg/new.py"), "def f():\n    return 2\n");
    await run(["commit", "--quiet", "-am", "later"]);
    const later = (await run(["rev-parse", "HEAD"])).trim();
    expect(await derivedCommit(repo.gitDir, later, [{ taskId: "o__r-1", patch: repo.diff }])).toMatchObject({ ok: false, path: "pkg/new.py" });
    const made = await derivedCommit(repo.gitDir, later, [{ taskId: "o__r-1", patch: repo.diff, rolledBack: { to: repo.base, paths: ["pkg/new.py"] } }]);
    expect(made.ok).toBe(true);
    expect(await git([`--git-dir=${repo.gitDir}`, "ls-tree", "-r", "--name-only", (made as { commit: string }).commit])).toBe("pkg/m.py\n");
  });
});

describe("what setting a file back takes away from the rest of the checkout", () => {
  /** A fix to pkg/m.py, then later work: a helper added to it and used by another module, and a helper no other file names. */
  async function built() {
    const repo = await repoWithChange({ "pkg/m.py": "def f():\n    return 1\n" }, { "pkg/m.py": "def f():\n    return 2\n" });
    const run = (args: string[]) => git(args, { cwd: repo.dir, env: GIT_IDENTITY });
    writeFileSync(
      join(repo.dir, "pkg/m.py"),
      "def f():\n    return 2\n\n\nclass Box:\n    def unpack(self):\n        return 3\n\n    def __repr__(self):\n        return 'Box'\n",
    );
    writeFileSync(join(repo.dir, "pkg/use.py"), "from pkg.m import f\n\nprint(f())\n");
    await run(["add", "--all"]);
    await run(["commit", "--quiet", "-m", "a class no one else uses"]);
    const unused = (await run(["rev-parse", "HEAD"])).trim();
    writeFileSync(join(repo.dir, "pkg/use.py"), "from pkg.m import Box, f\n\nprint(f(), Box().unpack())\n");
    writeFileSync(join(repo.dir, "pkg/notes.txt"), "Box unpack\n");
    await run(["add", "--all"]);
    await run(["commit", "--quiet", "-m", "used"]);
    const used = (await run(["rev-parse", "HEAD"])).trim();
    const derive = async (later: string) => {
      const made = await derivedCommit(repo.gitDir, later, [{ taskId: "o__r-1", patch: repo.diff, rolledBack: { to: repo.base, paths: ["pkg/m.py"] } }]);
      return (made as { commit: string }).commit;
    };
    return { repo, unused, used, derive };
  }

  it("finds the first Python file that still names a definition the older version lacks, and only Python files", async () => {
    const { repo, used, derive } = await built();
    expect(await takenAwayUse(new TreeReader((args) => git([`--git-dir=${repo.gitDir}`, ...args])), used, await derive(used), ["pkg/m.py"])).toEqual({
      name: "Box",
      definedIn: "pkg/m.py",
      usedIn: "pkg/use.py",
    });
  });

  it("finds nothing where no other file names what went, dunder methods aside", async () => {
    const { repo, unused, derive } = await built();
    expect(
      await takenAwayUse(new TreeReader((args) => git([`--git-dir=${repo.gitDir}`, ...args])), unused, await derive(unused), ["pkg/m.py"]),
    ).toBeUndefined();
  });
});
