import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { classifyPair, LocalityIndex, type LocalityTask } from "../../pipeline/locality.ts";
import { splitReferenceChange } from "../../stages/split/split.ts";
import { ClassificationRules } from "../../pipeline/schemas/repo-profile.ts";
import { parentDir } from "../../stages/split/split.ts";

const task = (id: string, files: string[], repo = "o/r"): LocalityTask => ({
  id: `o__r-${id}`,
  repo,
  sourceFiles: files,
  sourceDirs: [...new Set(files.map(parentDir))].sort(),
});

describe("locality", () => {
  it("near: a shared directory, no shared file", () => {
    expect(classifyPair(task("1", ["pkg/a.py"]), task("2", ["pkg/b.py"]))).toEqual({ eligible: true, class: "near", sharedFiles: [], sharedDirs: ["pkg"] });
  });

  it("far: no shared directory (a subdirectory is not its parent)", () => {
    expect(classifyPair(task("1", ["pkg/a.py"]), task("2", ["pkg/sub/b.py"]))).toMatchObject({ eligible: true, class: "far" });
  });

  it("ineligible: a shared file, even when directories are shared too", () => {
    expect(classifyPair(task("1", ["pkg/a.py", "pkg/b.py"]), task("2", ["pkg/a.py"]))).toEqual({
      eligible: false,
      sharedFiles: ["pkg/a.py"],
      sharedDirs: ["pkg"],
    });
  });

  it("top-level files share the repository root", () => {
    expect(parentDir("setup_helper.py")).toBe(".");
    expect(classifyPair(task("1", ["a.py"]), task("2", ["b.py", "pkg/c.py"]))).toMatchObject({ class: "near", sharedDirs: ["."] });
    expect(classifyPair(task("1", ["a.py"]), task("2", ["pkg/c.py"]))).toMatchObject({ class: "far" });
  });

  it("a rename counts as both its old and its new path", () => {
    const diff = "diff --git a/pkg/old.py b/lib/new.py\nsimilarity index 100%\nrename from pkg/old.py\nrename to lib/new.py\n";
    const split = splitReferenceChange(diff, ClassificationRules.parse({}));
    const renamer: LocalityTask = { id: "o__r-1", repo: "o/r", sourceFiles: split.sourceFiles, sourceDirs: split.sourceDirs };
    expect(classifyPair(renamer, task("2", ["pkg/old.py"]))).toMatchObject({ eligible: false, sharedFiles: ["pkg/old.py"] });
    expect(classifyPair(renamer, task("3", ["lib/new.py"]))).toMatchObject({ eligible: false });
    expect(classifyPair(renamer, task("4", ["pkg/other.py"]))).toMatchObject({ eligible: true, class: "near" });
  });

  it("refuses pairs across repositories", () => {
    expect(() => classifyPair(task("1", ["a.py"]), task("2", ["a.py"], "o/other"))).toThrow(/only within a repository/);
  });

  it("the directory index agrees with the pairwise definition on random pools", () => {
    const path = fc.tuple(fc.constantFrom("", "a/", "a/b/", "c/"), fc.constantFrom("x.py", "y.py", "z.py"));
    const pool = fc.array(fc.tuple(fc.array(path, { minLength: 1, maxLength: 3 }), fc.constantFrom("o/r", "o/s")), { minLength: 2, maxLength: 12 });
    fc.assert(
      fc.property(pool, (entries) => {
        const tasks = entries.map(([paths, repo], i) => task(String(i + 1), [...new Set(paths.map(([d, f]) => d + f))], repo));
        const index = new LocalityIndex(tasks);
        const pairs = [...index.pairs()];
        const expected = tasks.flatMap((a, i) =>
          tasks
            .slice(i + 1)
            .filter((b) => b.repo === a.repo)
            .map((b) => [a, b] as const),
        );
        expect(pairs).toHaveLength(expected.length);
        for (const p of pairs) {
          const c = classifyPair(index.get(p.task_a), index.get(p.task_b));
          expect(p.eligible).toBe(c.eligible);
          expect(p.class).toBe(c.class);
        }
        for (const t of tasks) {
          for (const group of ["near", "far"] as const) {
            const want = tasks
              .filter((o) => o.id !== t.id && o.repo === t.repo && classifyPair(t, o).eligible && classifyPair(t, o).class === group)
              .map((o) => o.id)
              .sort();
            expect(index.eligiblePartners(t.id, group)).toEqual(want);
          }
        }
        const counts = index.counts();
        for (const repo of index.repos()) {
          const inRepo = pairs.filter((p) => p.repo === repo);
          expect(counts.get(repo)).toEqual({
            near: inRepo.filter((p) => p.class === "near").length,
            far: inRepo.filter((p) => p.class === "far").length,
            ineligible: inRepo.filter((p) => !p.eligible).length,
          });
        }
      }),
      { numRuns: 200 },
    );
  });
});
