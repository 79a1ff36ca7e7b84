import { describe, expect, it } from "vitest";
import { readHunkHeader } from "../../../pipeline/changes/hunk-header.ts";
import { fileHunks, linesOn, readDiff, sideOf } from "../../../pipeline/changes/hunks.ts";

const PATCH = [
  "diff --git a/docs/notes.rst b/docs/notes.rst",
  "--- a/docs/notes.rst",
  "+++ b/docs/notes.rst",
  "@@ -1,3 +1,3 @@",
  " Title",
  "----- old rule",
  "+++++ new rule",
  "",
  "diff --git a/tests/test_m.py b/tests/test_m.py",
  "--- a/tests/test_m.py",
  "+++ b/tests/test_m.py",
  "@@ -10,3 +10,4 @@ class TestM:",
  "     def test_a(self):",
  "-        assert f() == 1",
  "+        assert f() == 2",
  "+        assert g() == 3",
  "         return",
  "@@ -40,1 +41,1 @@ def test_b():",
  "-    x = 1",
  "\\ No newline at end of file",
  "+    x = 2",
  "\\ No newline at end of file",
  "",
].join("\n");

describe("a diff read into files, hunks and sides", () => {
  it("reads each hunk by its header's counts, so content that looks like a header is content", () => {
    const [docs, tests] = readDiff(PATCH);
    expect(docs!.hunks[0]!.lines.map((l) => [l.side, l.text])).toEqual([
      ["context", "Title"],
      ["removed", "---- old rule"],
      ["added", "++++ new rule"],
      // A blank context line whose space a tool stripped is still context.
      ["context", ""],
    ]);
    expect(tests!.path).toBe("tests/test_m.py");
    expect(tests!.hunks.map((h) => [h.oldStart, h.oldLines, h.newStart, h.newLines, h.scope])).toEqual([
      [10, 3, 10, 4, "class TestM:"],
      [40, 1, 41, 1, "def test_b():"],
    ]);
  });

  it("numbers each line on the sides it stands on, and drops git's no-newline markers", () => {
    const [, tests] = readDiff(PATCH);
    expect(tests!.hunks[0]!.lines.map((l) => [l.side, l.oldLine, l.newLine])).toEqual([
      ["context", 10, 10],
      ["removed", 11, undefined],
      ["added", undefined, 11],
      ["added", undefined, 12],
      ["context", 12, 13],
    ]);
    expect(tests!.hunks[1]!.lines.map((l) => l.text)).toEqual(["    x = 1", "    x = 2"]);
    // The marker is no line, but what it says stays: each side's last line ends its file without a newline.
    expect(tests!.hunks[1]!.lines.map((l) => l.noNewline)).toEqual([true, true]);
    expect(tests!.hunks[0]!.lines.some((l) => l.noNewline)).toBe(false);
  });

  it("gives each side whole: indented context lines are context, `---` and `+++` content is content", () => {
    const files = readDiff(PATCH);
    expect(linesOn(files, "context")).toEqual(["Title", "", "    def test_a(self):", "        return"]);
    expect(linesOn(files, "removed")).toEqual(["---- old rule", "        assert f() == 1", "    x = 1"]);
    expect(linesOn(files, "added")).toEqual(["++++ new rule", "        assert f() == 2", "        assert g() == 3", "    x = 2"]);
  });

  it("reads a hunk header with counts left out, and one of a CRLF file whose section ends in CR", () => {
    expect(readHunkHeader("@@ -3 +4 @@")).toEqual({ oldStart: 3, oldLines: 1, newStart: 4, newLines: 1, section: "" });
    expect(readHunkHeader("@@ -0,0 +1,2 @@ def f():\r")).toEqual({ oldStart: 0, oldLines: 0, newStart: 1, newLines: 2, section: "def f():\r" });
    expect(readHunkHeader("@@@ -1,2 -1,2 +1,3 @@@")).toBeUndefined();
    expect(readHunkHeader("+@@ -1 +1 @@")).toBeUndefined();
  });
});

describe("one side of a hunk, and a diff's files with their hunks", () => {
  it("gives a hunk's old side (context and removed) and new side (context and added)", () => {
    const { hunks } = fileHunks(PATCH)[1]!;
    expect(sideOf(hunks[0]!, "old")).toEqual(["    def test_a(self):", "        assert f() == 1", "        return"]);
    expect(sideOf(hunks[0]!, "new")).toEqual(["    def test_a(self):", "        assert f() == 2", "        assert g() == 3", "        return"]);
  });
});
