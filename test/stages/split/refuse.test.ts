import { execFileSync } from "node:child_process";
import { sharedDataForTests } from "../../helpers/shared-data.ts";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { applyCheck, git } from "../../../pipeline/git.ts";
import { ClassificationRules } from "../../../pipeline/schemas/repo-profile.ts";
import { DiffParseError, parseGitDiff } from "../../../pipeline/changes/diff.ts";
import { splitReferenceChange } from "../../../stages/split/split.ts";
import { repoWithChange } from "../../helpers/git-repo.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";

const rules = ClassificationRules.parse({});
const MIRRORS = fileURLToPath(new URL("../../../../shared/data/mirrors/", import.meta.url));
const lines = (n: number, tag = "line") => Array.from({ length: n }, (_, i) => `${tag} ${i}\n`).join("");

function refusal(text: string): string {
  try {
    parseGitDiff(text);
  } catch (error) {
    if (error instanceof DiffParseError) return error.message;
    throw error;
  }
  throw new Error("the diff was accepted");
}

/** A small real repository whose change has a source file, a test file and a binary file. */
const sampleChange = () =>
  repoWithChange(
    { "pkg/a.py": lines(20), "tests/test_a.py": lines(4), "pkg/data.bin": Buffer.from([0, 1, 2, 3, 255, 254]) },
    {
      "pkg/a.py": lines(20).replace("line 5\n", "line five\n"),
      "tests/test_a.py": lines(4) + "def test_x():\n    pass\n",
      "pkg/data.bin": Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 7) % 256)),
    },
  );

describe("split refuses what it cannot split faithfully", () => {
  it("refuses a combined diff of a merge, and input with several commits", async () => {
    const sample = await sampleChange();
    const combined = "diff --cc pkg/a.py\nindex 1111111,2222222..3333333\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@@ -1,1 -1,1 +1,1 @@@\n- a\n -b\n++c\n";
    expect(refusal(combined)).toMatch(/^line 1: a combined diff of a merge commit \(diff --cc\)/);
    // A merge in `git log -p --cc` after an ordinary commit: refused, not silently dropped.
    const log = `commit ${"a".repeat(40)}\nAuthor: T <t@t>\n\n    one\n\n${sample.diff}commit ${"b".repeat(40)}\nMerge: 1 2\n\n    merge\n\n${combined}`;
    expect(refusal(log)).toMatch(/more than one commit/);
    const series = `commit ${"a".repeat(40)}\n\n    one\n\n${sample.diff}commit ${"c".repeat(40)}\n\n    two\n\n${sample.diff}`;
    expect(refusal(series)).toMatch(/more than one commit/);
  });

  it("refuses text that is not a diff, and diffs cut short anywhere", async () => {
    const sample = await sampleChange();
    expect(refusal("Just some notes about the fix.\nNothing to apply here.\n")).toMatch(/not a diff/);
    expect(refusal(Buffer.from(Array.from({ length: 200 }, (_, i) => (i * 37) % 256)).toString("latin1") + "\n")).toMatch(/not a diff|line/);
    const diff = sample.diff;
    // mid-line
    expect(refusal(diff.slice(0, diff.indexOf("line five") + 6))).toMatch(/cut off mid-line/);
    // right after the ---/+++ lines of a file
    const afterHeaders = diff.indexOf("+++ b/pkg/a.py\n") + "+++ b/pkg/a.py\n".length;
    expect(refusal(diff.slice(0, afterHeaders))).toMatch(/pkg\/a\.py has ---\/\+\+\+ lines but no hunk/);
    // inside a binary patch
    const binary = diff.indexOf("GIT binary patch\n");
    expect(binary).toBeGreaterThan(0);
    const cut = diff.indexOf("\n", diff.indexOf("\n", binary + 20) + 1) + 1;
    expect(refusal(diff.slice(0, cut))).toMatch(/binary patch of .*pkg\/data\.bin (ends before its block does|is cut short)/);
    // after a `diff --git` line alone
    expect(refusal(diff.slice(0, diff.indexOf("diff --git a/tests") + "diff --git a/tests/test_a.py b/tests/test_a.py\n".length))).toMatch(
      /tests\/test_a\.py has a header but no change/,
    );
  });

  it("accepts a plain unified diff (diff -ruN) and a format-patch mail with its signature", async () => {
    const sample = await sampleChange();
    const dir = tempDir();
    for (const [side, text] of [
      ["old", lines(20)],
      ["new", lines(20).replace("line 5\n", "line five\n")],
    ] as const) {
      mkdirSync(join(dir, side, "pkg"), { recursive: true });
      writeFileSync(join(dir, side, "pkg", "a.py"), text);
    }
    mkdirSync(join(dir, "new", "tests"), { recursive: true });
    writeFileSync(join(dir, "new", "tests", "test_new.py"), "def test_new():\n    pass\n");
    let plain = "";
    try {
      execFileSync("diff", ["-ruN", "old", "new"], { cwd: dir, encoding: "utf8" });
    } catch (error) {
      plain = (error as { stdout: string }).stdout; // diff exits 1 when the trees differ
    }
    const split = splitReferenceChange(plain, rules);
    expect(split.files.map((f) => `${f.status} ${f.path}`)).toEqual(["modified pkg/a.py", "added tests/test_new.py"]);
    expect(await applyCheck(sample.gitDir, sample.base, split.implementationPatch)).toEqual({ ok: true });
    expect(split.testPatch).toMatch(
      /^diff --git a\/tests\/test_new\.py b\/tests\/test_new\.py\nnew file mode 100644\n--- \/dev\/null\n\+\+\+ b\/tests\/test_new\.py\n/,
    );

    const mail = await git(["format-patch", "-1", "--stdout", "--binary", "--full-index", sample.head], { cwd: sample.dir });
    expect(mail).toMatch(/\n-- \n\d+\.\d+/);
    expect(
      parseGitDiff(mail)
        .map((f) => f.raw)
        .join(""),
    ).toBe(
      parseGitDiff(sample.diff)
        .map((f) => f.raw)
        .join(""),
    );
  });
});

/** Real base→merge diffs of SWE-bench Lite records, from the bundled mirrors. */
async function realDiffs(): Promise<{ diff: string; gitDir: string; base: string; id: string }[]> {
  const out: { diff: string; gitDir: string; base: string; id: string }[] = [];
  for (const [bundle, ids] of [
    ["marshmallow-code__marshmallow", ["marshmallow-code__marshmallow-1343", "marshmallow-code__marshmallow-1359"]],
    ["pylint-dev__astroid", ["pylint-dev__astroid-1268"]],
  ] as const) {
    const gitDir = join(fileTempDir(), `${bundle}.git`);
    await git(["clone", "--quiet", "--bare", join(MIRRORS, `${bundle}.bundle`), gitDir]);
    for (const id of ids) {
      const base = (await git([`--git-dir=${gitDir}`, "rev-parse", `base-${id}`])).trim();
      out.push({ id, gitDir, base, diff: await git([`--git-dir=${gitDir}`, "diff", "--binary", "--full-index", "-M", base, `merged-${id}`]) });
    }
  }
  return out;
}

describe.skipIf(!sharedDataForTests(MIRRORS))("split fuzzed with real diffs", () => {
  let diffs: Awaited<ReturnType<typeof realDiffs>>;
  beforeAll(async () => {
    diffs = await realDiffs();
  });

  it("either refuses a truncated or mutated diff, or splits it so that both patches apply and the sections are the input", async () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant("truncate" as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
      fc.record({ kind: fc.constant("drop_line" as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
      fc.record({ kind: fc.constant("duplicate_line" as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
      fc.record({ kind: fc.constant("garble_line" as const), at: fc.double({ min: 0, max: 1, noNaN: true }), text: fc.string({ maxLength: 12 }) }),
      // Keeps the line's diff prefix: it still parses, and changed context no longer applies.
      fc.record({ kind: fc.constant("alter_line" as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
    );
    let refused = 0;
    let split = 0;
    let notApplying = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: diffs.length - 1 }), mutation, async (which, m) => {
        const { diff, gitDir, base } = diffs[which]!;
        const rows = diff.split("\n");
        const row = Math.floor(m.at * (rows.length - 1));
        const mutant =
          m.kind === "truncate"
            ? diff.slice(0, Math.floor(m.at * diff.length))
            : m.kind === "drop_line"
              ? [...rows.slice(0, row), ...rows.slice(row + 1)].join("\n")
              : m.kind === "duplicate_line"
                ? [...rows.slice(0, row + 1), ...rows.slice(row)].join("\n")
                : m.kind === "garble_line"
                  ? [...rows.slice(0, row), m.text, ...rows.slice(row + 1)].join("\n")
                  : [...rows.slice(0, row), `${rows[row]}~`, ...rows.slice(row + 1)].join("\n");
        let result;
        try {
          result = splitReferenceChange(mutant, rules);
        } catch (error) {
          if (!(error instanceof DiffParseError)) throw error;
          refused++;
          return;
        }
        const implementation = await applyCheck(gitDir, base, result.implementationPatch);
        const tests = await applyCheck(gitDir, base, result.testPatch);
        if (!implementation.ok || !tests.ok) {
          notApplying++; // the split stage rejects it (patch_does_not_apply): refused all the same
          return;
        }
        split++;
        // Nothing was dropped or invented: the sections, in order, are exactly the input from its
        // first file on (a preamble, a commit message say, belongs to no file).
        expect(
          parseGitDiff(mutant)
            .map((f) => f.raw)
            .join(""),
        ).toBe(mutant.slice(mutant.indexOf("diff --git ")));
      }),
      { seed: 20261130, numRuns: 250 },
    );
    // The property means something only if every outcome was reached.
    expect(refused).toBeGreaterThan(50);
    expect(split).toBeGreaterThan(5);
    expect(notApplying).toBeGreaterThan(0);
  });
});
