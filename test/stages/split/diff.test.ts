import { describe, expect, it } from "vitest";
import { applyCheck } from "../../../pipeline/git.ts";
import { ClassificationRules } from "../../../pipeline/schemas/repo-profile.ts";
import { parseGitDiff, DiffParseError } from "../../../pipeline/changes/diff.ts";
import { splitReferenceChange } from "../../../stages/split/split.ts";
import { repoWithChange } from "../../helpers/git-repo.ts";

const rules = ClassificationRules.parse({});
const lines = (n: number, tag = "line") => Array.from({ length: n }, (_, i) => `${tag} ${i}\n`).join("");

/** Every split must apply to its base revision, and its sections must be the input's bytes. */
async function expectExactSplit(repo: Awaited<ReturnType<typeof repoWithChange>>) {
  const split = splitReferenceChange(repo.diff, rules);
  expect(await applyCheck(repo.gitDir, repo.base, split.implementationPatch)).toEqual({ ok: true });
  expect(await applyCheck(repo.gitDir, repo.base, split.testPatch)).toEqual({ ok: true });
  const raw = parseGitDiff(repo.diff)
    .map((f) => f.raw)
    .join("");
  expect(raw).toBe(repo.diff);
  return split;
}

describe("git diff parsing and splitting", () => {
  it("splits modified source and test files and both halves apply", async () => {
    const repo = await repoWithChange(
      { "pkg/a.py": lines(20), "tests/test_a.py": lines(5) },
      { "pkg/a.py": lines(20).replace("line 3\n", "line three\n"), "tests/test_a.py": lines(5) + "def test_x(): pass\n" },
    );
    const split = await expectExactSplit(repo);
    expect(split.sourceFiles).toEqual(["pkg/a.py"]);
    expect(split.testPatch).toContain("tests/test_a.py");
    expect(split.implementationPatch).not.toContain("tests/test_a.py");
  });

  it("handles renames with similarity, counting both paths in C_t", async () => {
    const repo = await repoWithChange(
      { "pkg/old.py": lines(30), "tests/test_x.py": "x\n" },
      { "pkg/old.py": { rename: "pkg/sub/new.py" }, "tests/test_x.py": "y\n" },
    );
    const file = parseGitDiff(repo.diff).find((f) => f.path === "pkg/sub/new.py")!;
    expect(file).toMatchObject({ status: "renamed", oldPath: "pkg/old.py", similarity: 100 });
    const split = await expectExactSplit(repo);
    expect(split.sourceFiles).toEqual(["pkg/old.py", "pkg/sub/new.py"]);
    expect(split.sourceDirs).toEqual(["pkg", "pkg/sub"]);
  });

  it("handles copies, deletions and new files", async () => {
    const repo = await repoWithChange(
      { "pkg/a.py": lines(30), "pkg/gone.py": lines(3), "tests/test_a.py": "a\n" },
      {
        "pkg/copy.py": { copyFrom: "pkg/a.py" },
        "pkg/a.py": lines(30).replace("line 29\n", "line 29 changed\n"),
        "pkg/gone.py": null,
        "pkg/fresh.py": "x = 1\n",
        "tests/test_a.py": "b\n",
      },
      ["-M", "-C", "--find-copies-harder", "--binary", "--full-index"],
    );
    const files = parseGitDiff(repo.diff);
    expect(files.find((f) => f.path === "pkg/copy.py")).toMatchObject({ status: "copied", oldPath: "pkg/a.py" });
    expect(files.find((f) => f.path === "pkg/gone.py")).toMatchObject({ status: "deleted" });
    expect(files.find((f) => f.path === "pkg/fresh.py")).toMatchObject({ status: "added" });
    const split = await expectExactSplit(repo);
    // a copy leaves its source untouched, so only the copy's new path is in C_t
    expect(split.sourceFiles).toEqual(["pkg/a.py", "pkg/copy.py", "pkg/fresh.py", "pkg/gone.py"]);
  });

  it("handles a mode change with and without content changes", async () => {
    const repo = await repoWithChange(
      { "bin/tool.py": "print(1)\n", "pkg/m.py": "a\n", "tests/test_m.py": "t\n" },
      { "bin/tool.py": { mode: "755" }, "tests/test_m.py": "u\n" },
    );
    expect(parseGitDiff(repo.diff).find((f) => f.path === "bin/tool.py")).toMatchObject({ status: "mode_changed", oldMode: "100644", newMode: "100755" });
    await expectExactSplit(repo);
  });

  it("handles binary patches, with and without --binary", async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3, 0, 0, 255, 254]);
    const repo = await repoWithChange(
      { "pkg/a.py": "a\n", "tests/test_a.py": "t\n" },
      { "pkg/data/icon.png": png, "tests/data/blob.bin": Buffer.from([0, 0, 7]), "tests/test_a.py": "u\n" },
    );
    const files = parseGitDiff(repo.diff);
    expect(files.find((f) => f.path === "pkg/data/icon.png")).toMatchObject({ binary: true, status: "added" });
    const split = await expectExactSplit(repo);
    expect(split.testPatch).toContain("GIT binary patch");
    const plain = parseGitDiff(repo.diff.replace(/GIT binary patch[\s\S]*?(?=diff --git|$)/g, "Binary files /dev/null and b/x differ\n"));
    expect(plain.filter((f) => f.binary)).toHaveLength(2);
  });

  it("keeps '\\ No newline at end of file' and CRLF content byte for byte", async () => {
    const repo = await repoWithChange(
      { "pkg/crlf.py": "a = 1\r\nb = 2\r\n", "pkg/nonl.py": "x = 1", "tests/test_c.py": "t\n" },
      { "pkg/crlf.py": "a = 1\r\nb = 3\r\n", "pkg/nonl.py": "x = 2", "tests/test_c.py": "u" },
    );
    expect(repo.diff).toContain("\\ No newline at end of file");
    expect(repo.diff).toContain("\r\n");
    const split = await expectExactSplit(repo);
    expect(split.implementationPatch).toContain("+b = 3\r\n");
    expect(split.testPatch).toContain("\\ No newline at end of file");
  });

  it("handles paths with spaces and unicode, quoted or not", async () => {
    const repo = await repoWithChange(
      { "pkg/with space.py": "a\n", "pkg/café.py": "b\n", "tests/test ü.py": "t\n" },
      { "pkg/with space.py": "a2\n", "pkg/café.py": "b2\n", "tests/test ü.py": "t2\n" },
    );
    expect(repo.diff).toContain('"a/pkg/caf\\303\\251.py"');
    const split = await expectExactSplit(repo);
    expect(split.sourceFiles).toEqual(["pkg/café.py", "pkg/with space.py"]);
    const renamed = await repoWithChange(
      { "pkg/a b.py": lines(10), "tests/test_x.py": "x\n" },
      { "pkg/a b.py": { rename: "pkg/c d.py" }, "tests/test_x.py": "y\n" },
    );
    expect(parseGitDiff(renamed.diff)[0]).toMatchObject({ oldPath: "pkg/a b.py", path: "pkg/c d.py", status: "renamed" });
    const modeOnly = parseGitDiff("diff --git a/x y.py b/x y.py\nold mode 100644\nnew mode 100755\n");
    expect(modeOnly[0]).toMatchObject({ path: "x y.py", status: "mode_changed" });
  });

  it("does not mistake hunk content that looks like a header for a new file", () => {
    const diff = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-x\n+--- not a header\n ctx\n";
    const files = parseGitDiff(diff);
    expect(files).toHaveLength(1);
    expect(files[0]!.raw).toBe(diff);
  });

  it("rejects a truncated diff with the line where it broke", () => {
    const diff = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n-x\n+y\n";
    expect(() => parseGitDiff(diff)).toThrow(DiffParseError);
    expect(() => parseGitDiff(diff)).toThrow(/line 7: the diff ends inside a hunk/);
  });

  it("keeps docs and other files out of both patches and lists them", () => {
    const diff = ["docs/a.rst", "CHANGES.rst", "setup.py", ".github/workflows/ci.yml", "pkg/m.py", "tests/test_m.py"]
      .map((p) => `diff --git a/${p} b/${p}\n--- a/${p}\n+++ b/${p}\n@@ -1 +1 @@\n-a\n+b\n`)
      .join("");
    const split = splitReferenceChange(diff, rules);
    expect(split.excluded).toEqual([
      { path: "docs/a.rst", class: "docs" },
      { path: "CHANGES.rst", class: "docs" },
      { path: "setup.py", class: "other" },
      { path: ".github/workflows/ci.yml", class: "other" },
    ]);
    expect(split.implementationPatch).toBe("diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1 +1 @@\n-a\n+b\n");
  });

  it("moves a source file into tests: the change counts as source, not hidden in the test patch", () => {
    const diff = "diff --git a/pkg/helpers.py b/tests/helpers.py\nsimilarity index 100%\nrename from pkg/helpers.py\nrename to tests/helpers.py\n";
    const split = splitReferenceChange(diff, rules);
    expect(split.files[0]).toMatchObject({ class: "source", status: "renamed" });
    expect(split.sourceFiles).toEqual(["pkg/helpers.py", "tests/helpers.py"]);
  });
});
