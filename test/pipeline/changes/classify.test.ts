import { describe, expect, it } from "vitest";
import { ClassificationRules } from "../../../pipeline/schemas/repo-profile.ts";
import { classifyPath } from "../../../pipeline/changes/classify.ts";
import { globMatcher } from "../../../pipeline/changes/classify.ts";

const rules = ClassificationRules.parse({});
const cls = (path: string, r = rules) => classifyPath(path, r).class;

describe("default classification", () => {
  it.each([
    ["tests/test_a.py", "test"],
    ["test/helpers.py", "test"],
    ["testing/util.py", "test"],
    ["src/pkg/tests/data/sample.json", "test"],
    ["pkg/test_mod.py", "test"],
    ["pkg/mod_test.py", "test"],
    ["app/tests.py", "test"],
    ["conftest.py", "test"],
    ["src/pkg/conftest.py", "test"],
    ["pkg/contest.py", "source"],
    ["pkg/latest/mod.py", "source"],
    ["pkg/attestation.py", "source"],
    ["pkg/testsuite_runner.py", "source"],
    ["docs/index.rst", "docs"],
    ["doc/api/mod.rst", "docs"],
    ["docs/img/logo.png", "docs"],
    ["README.md", "docs"],
    ["CHANGES.rst", "docs"],
    ["CHANGELOG.md", "docs"],
    ["HISTORY.txt", "docs"],
    ["changelog.d/1234.bugfix.rst", "docs"],
    ["newsfragments/99.feature", "docs"],
    // News fragments wherever they sit (pytest, astropy, pylint, and a package's own directory).
    ["changelog/1234.bugfix.rst", "docs"],
    ["docs/changes/io.fits/16231.bugfix.rst", "docs"],
    ["doc/whatsnew/fragments/8111.bugfix", "docs"],
    ["doc/whatsnew/2/2.15/index.rst", "docs"],
    ["src/pkg/changelog/3.other", "docs"],
    ["src/changes/tracker.py", "source"],
    ["setup.py", "other"],
    ["setup.cfg", "other"],
    ["pyproject.toml", "other"],
    ["tox.ini", "other"],
    ["MANIFEST.in", "other"],
    ["requirements-dev.txt", "other"],
    [".github/workflows/ci.yml", "other"],
    [".travis.yml", "other"],
    ["LICENSE", "other"],
    ["pkg/mod.py", "source"],
    ["top_level_module.py", "source"],
    ["pkg/_speedups.c", "source"],
    ["pkg/templates/page.html", "source"],
    ["pkg/README.md", "source"],
  ])("%s is %s", (path, expected) => {
    expect(cls(path)).toBe(expected);
  });

  it("treats prose inside declared package roots as source and outside them as docs", () => {
    const withRoots = ClassificationRules.parse({ package_roots: ["src/pkg"] });
    expect(cls("src/pkg/data/words.txt", withRoots)).toBe("source");
    expect(cls("examples/README.md", withRoots)).toBe("docs");
  });

  it("lets a repository decide what conftest.py is", () => {
    expect(cls("conftest.py", ClassificationRules.parse({ conftest: "other" }))).toBe("other");
  });

  it("applies profile overrides first, in order, and records which rule decided", () => {
    const custom = ClassificationRules.parse({
      overrides: [
        { globs: ["django/test/**"], class: "source" },
        { globs: ["**/*.{png,svg}"], class: "other" },
        { globs: ["django/**"], class: "test" },
      ],
    });
    expect(classifyPath("django/test/testcases.py", custom)).toEqual({ class: "source", rule: "override[0]" });
    expect(classifyPath("docs/logo.png", custom)).toEqual({ class: "other", rule: "override[1]" });
    expect(classifyPath("django/db/models.py", custom).class).toBe("test");
    expect(classifyPath("tests/test_x.py", custom)).toEqual({ class: "test", rule: "test_dir" });
  });

  it("matches globs by segments", () => {
    expect(globMatcher("src/*.py")("src/a.py")).toBe(true);
    expect(globMatcher("src/*.py")("src/sub/a.py")).toBe(false);
    expect(globMatcher("src/**/*.py")("src/a.py")).toBe(true);
    expect(globMatcher("src/**/*.py")("src/x/y/a.py")).toBe(true);
    expect(globMatcher("**/conftest.py")("conftest.py")).toBe(true);
    expect(globMatcher("a?.py")("ab.py")).toBe(true);
    // Alternatives and classes, which the hand-written matcher got wrong.
    expect(globMatcher("tests/{test_*.py,conftest.py}")("tests/test_foo.py")).toBe(true);
    expect(globMatcher("tests/{test_*.py,conftest.py}")("tests/conftest.py")).toBe(true);
    expect(globMatcher("tests/{test_*.py,conftest.py}")("tests/test.py")).toBe(false);
    expect(globMatcher("pkg/[ab].py")("pkg/a.py")).toBe(true);
    expect(globMatcher("pkg/[ab].py")("pkg/c.py")).toBe(false);
    expect(globMatcher(".github/**")(".github/workflows/ci.yml")).toBe(true);
  });
});
