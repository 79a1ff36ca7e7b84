import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { git } from "../../../pipeline/git.ts";
import { collectCheckoutArtifact } from "../../../pipeline/verifier/collect.ts";
import { parseGitDiff } from "../../../pipeline/changes/diff.ts";
import { tempDir } from "../../helpers/tmp.ts";
import { ClassificationRules } from "../../../pipeline/schemas/repo-profile.ts";
import { gradeRun, isResolved, statusFromPhases } from "../../../pipeline/verifier/grade.ts";
import { staticFindings } from "../../../pipeline/verifier/suspicious.ts";
import { ChannelReader, type GuardChannel } from "../../../pipeline/executors/guarded.ts";
import { assertSubmittedLinksInside, planSubmission, UnsafeSubmission } from "../../../pipeline/verifier/submission.ts";
import { repoWithChange } from "../../helpers/git-repo.ts";

const rules = ClassificationRules.parse({ package_roots: ["src/pkg"] });
const BASE = {
  "src/pkg/core.py": "def f():\n    return 1\n",
  "tests/test_core.py": "from pkg.core import f\n\ndef test_f():\n    assert f() == 2\n",
  "pyproject.toml": "[project]\nname = 'pkg'\n",
  "README.md": "pkg\n",
};

describe("planning a submission", () => {
  it("applies source and docs changes and drops test files, test configuration, held-out test paths and runner shadows", async () => {
    const { diff } = await repoWithChange(BASE, {
      "src/pkg/core.py": "def f():\n    return 2\n",
      "README.md": "pkg, fixed\n",
      "tests/test_core.py": "def test_f():\n    assert True\n",
      "tests/test_new.py": "def test_x():\n    pass\n",
      "conftest.py": "import pytest\n",
      "src/pkg/conftest.py": "import os\n",
      "pyproject.toml": "[project]\nname = 'pkg'\n[tool.pytest.ini_options]\naddopts = '-k nothing'\n",
      "setup.cfg": "[tool:pytest]\naddopts = -x\n",
      "pytest.ini": "[pytest]\naddopts = -x\n",
      "src/tox.ini": "[pytest]\naddopts = -x\n",
      "pytest.py": "raise SystemExit(0)\n",
      "_pytest/junitxml.py": "\n",
      "evil.dist-info/entry_points.txt": "[pytest11]\nevil = pkg.core\n",
      "src/pkg/helpers.py": "X = 1\n",
      "src/pkg/fixture_data.py": "Y = 2\n",
    });
    const plan = planSubmission(diff, rules, new Set(["src/pkg/fixture_data.py"]));
    expect(plan.applied.map((f) => f.path).sort()).toEqual(["README.md", "src/pkg/core.py", "src/pkg/helpers.py"]);
    expect(plan.dropped).toEqual([
      { path: "_pytest/junitxml.py", reason: "test_runner_shadow" },
      { path: "conftest.py", reason: "test_configuration" },
      { path: "evil.dist-info/entry_points.txt", reason: "test_runner_shadow" },
      { path: "pyproject.toml", reason: "test_configuration" },
      { path: "pytest.ini", reason: "test_configuration" },
      { path: "pytest.py", reason: "test_runner_shadow" },
      { path: "setup.cfg", reason: "test_configuration" },
      { path: "src/pkg/conftest.py", reason: "test_configuration" },
      { path: "src/pkg/fixture_data.py", reason: "held_out_test_path" },
      { path: "src/tox.ini", reason: "test_configuration" },
      { path: "tests/test_core.py", reason: "test_file" },
      { path: "tests/test_new.py", reason: "test_file" },
    ]);
    // What is applied is exactly the kept sections, in order.
    expect(plan.patch).toBe(plan.applied.map((f) => f.raw).join(""));
    expect(plan.patch).not.toContain("tests/test_core.py");
  });

  it("applies a change to the repository's own runner source (pytest's src/_pytest) only where the profile names it, and still drops its tests", async () => {
    const { diff } = await repoWithChange(BASE, {
      "src/_pytest/nodes.py": "def remove_marker():\n    pass\n",
      "src/pytest/__init__.py": "from _pytest.nodes import remove_marker\n",
      "src/pkg/_pytest/shadow.py": "\n",
      "testing/test_nodes.py": "def test_x():\n    pass\n",
    });
    expect(planSubmission(diff, rules, new Set()).dropped.map((d) => d.reason)).toEqual([
      "test_runner_shadow",
      "test_runner_shadow",
      "test_runner_shadow",
      "test_file",
    ]);
    const pytestRules = ClassificationRules.parse({ package_roots: ["src/_pytest", "src/pytest"], test_runner_source: ["src/_pytest", "src/pytest"] });
    const plan = planSubmission(diff, pytestRules, new Set());
    expect(plan.applied.map((f) => f.path)).toEqual(["src/_pytest/nodes.py", "src/pytest/__init__.py"]);
    // Only the named roots: a `_pytest` package elsewhere is still a stand-in for the runner.
    expect(plan.dropped).toEqual([
      { path: "src/pkg/_pytest/shadow.py", reason: "test_runner_shadow" },
      { path: "testing/test_nodes.py", reason: "test_file" },
    ]);
  });

  it("drops a rename that takes a test file away, and deletions of tests", async () => {
    const { diff } = await repoWithChange(BASE, { "tests/test_core.py": { rename: "src/pkg/moved.py" } });
    const plan = planSubmission(diff, rules, new Set());
    expect(plan.applied).toEqual([]);
    expect(plan.dropped).toEqual([{ path: "src/pkg/moved.py", reason: "test_file" }]);
    const deleted = await repoWithChange(BASE, { "tests/test_core.py": null });
    expect(planSubmission(deleted.diff, rules, new Set()).dropped).toEqual([{ path: "tests/test_core.py", reason: "test_file" }]);
  });

  it("refuses paths that climb out of the repository, absolute paths and .git", () => {
    const section = (path: string) =>
      `diff --git a/${path} b/${path}\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n+++ b/${path}\n@@ -0,0 +1 @@\n+x\n`;
    expect(() => planSubmission(section("../outside.py"), rules, new Set())).toThrow(UnsafeSubmission);
    expect(() => planSubmission(section("src/../../outside.py"), rules, new Set())).toThrow(/climbs out/);
    expect(() => planSubmission(section(".git/hooks/post-checkout"), rules, new Set())).toThrow(/\.git/);
    expect(() => planSubmission(section("src/pkg/ok.py"), rules, new Set())).not.toThrow();
  });

  it("refuses a symlink pointing outside the repository and keeps one pointing inside", () => {
    const link = (target: string) =>
      `diff --git a/src/pkg/link.py b/src/pkg/link.py\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/src/pkg/link.py\n@@ -0,0 +1 @@\n+${target}\n\\ No newline at end of file\n`;
    expect(() => planSubmission(link("/etc/passwd"), rules, new Set())).toThrow(/points outside the repository/);
    expect(() => planSubmission(link("../../../outside"), rules, new Set())).toThrow(/points outside the repository/);
    expect(() => planSubmission(link("../../.git/config"), rules, new Set())).toThrow(/\.git/);
    expect(planSubmission(link("core.py"), rules, new Set()).applied).toHaveLength(1);
  });

  it("follows a chain of symlinks through the checkout and refuses one that leaves the repository", () => {
    const dir = tempDir();
    mkdirSync(join(dir, "pkg"));
    writeFileSync(join(dir, "pkg", "core.py"), "x = 1\n");
    // Each link alone looks inside; followed for real, `out` is the repository's parent.
    symlinkSync("..", join(dir, "pkg", "up"));
    symlinkSync("up/..", join(dir, "pkg", "out"));
    symlinkSync("core.py", join(dir, "pkg", "alias.py"));
    symlinkSync("up/pkg/alias.py", join(dir, "pkg", "again.py"));
    symlinkSync("up/.git/config", join(dir, "pkg", "config"));
    const file = (path: string) => ({ path, oldPath: path, status: "added" as const, binary: false, raw: "", hunks: 1 });
    expect(() => assertSubmittedLinksInside(dir, [file("pkg/out")])).toThrow(/pkg\/out resolves outside the repository/);
    expect(() => assertSubmittedLinksInside(dir, [file("pkg/config")])).toThrow(/\.git/);
    expect(() => assertSubmittedLinksInside(dir, [file("pkg/up"), file("pkg/alias.py"), file("pkg/again.py"), file("pkg/core.py")])).not.toThrow();
    symlinkSync("loop", join(dir, "pkg", "loop"));
    expect(() => assertSubmittedLinksInside(dir, [file("pkg/loop")])).toThrow(/more than 40 links/);
  });

  it("says when the artifact is not a diff", () => {
    expect(() => planSubmission("diff --git a/x b/x\n@@ garbage\n", rules, new Set())).toThrow(/line/);
    // Text or bytes that hold no diff at all are refused, never scored as "no change".
    expect(() => planSubmission("I fixed it, see my branch.\n", rules, new Set())).toThrow(/not a diff/);
    expect(planSubmission("", rules, new Set())).toEqual({ patch: "", applied: [], dropped: [] });
  });
});

const TOKEN = "t0k3n";
/** The lines a runner sends for tests whose phases have these outcomes, then (unless `finish` is false) its finish record. */
function runnerLines(outcomes: Record<string, Record<string, string>>, options: { problems?: string[]; finish?: boolean; token?: string } = {}): string {
  const token = options.token ?? TOKEN;
  const lines = Object.entries(outcomes).flatMap(([nodeid, phases]) =>
    Object.entries(phases).map(([when, outcome]) => JSON.stringify({ kind: "test", nodeid, when, outcome, token })),
  );
  if (options.finish !== false) lines.push(JSON.stringify({ kind: "finish", exitstatus: 0, problems: options.problems ?? [], token }));
  return lines.join("\n") + "\n";
}
/** Feeds text to a channel reader in small chunks, as a pipe delivers it; returns what it kept and whether it asked to stop. */
function read(text: string): { channel: GuardChannel; stopped: number } {
  let stopped = 0;
  const reader = new ChannelReader(TOKEN, () => stopped++);
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length; at += 7) reader.push(bytes.subarray(at, at + 7));
  return { channel: reader.channel, stopped };
}
const allPassed = { setup: "passed", call: "passed", teardown: "passed" };

describe("the guarded runner's channel", () => {
  const required = ["tests/test_core.py::test_a", "tests/test_core.py::test_b"];

  it("passes a test only when the runner reported every phase passed, and the session finished", () => {
    const { channel, stopped } = read(runnerLines({ [required[0]!]: allPassed, [required[1]!]: allPassed }));
    expect(stopped).toBe(1);
    const graded = gradeRun(required, { channel, timedOut: false, exitCode: 0 });
    expect(graded).toEqual({ tests: { [required[0]!]: "passed", [required[1]!]: "passed" }, integrityProblems: [], suspicious: [], timedOut: false });
    expect(isResolved(true, graded)).toBe(true);
    expect(isResolved(false, graded)).toBe(false);
  });

  it("reads nothing after the finish record: what a process writes once the session ended does not count", () => {
    const forged = JSON.stringify({ kind: "test", nodeid: required[1], when: "call", outcome: "passed", token: TOKEN });
    const { channel } = read(
      runnerLines({ [required[0]!]: allPassed, [required[1]!]: { setup: "passed", call: "failed", teardown: "passed" } }) + forged + "\n",
    );
    const graded = gradeRun(required, { channel, timedOut: false, exitCode: 0 });
    expect(graded.tests[required[1]!]).toBe("failed");
    expect(graded.integrityProblems).toEqual([]);
  });

  it("distrusts a run whose channel carried a line without the run's token, or a phase reported twice", () => {
    const foreign = read(
      JSON.stringify({ kind: "finish", exitstatus: 0, problems: [] }) + "\n" + runnerLines({ [required[0]!]: allPassed, [required[1]!]: allPassed }),
    );
    const graded = gradeRun(required, { channel: foreign.channel, timedOut: false, exitCode: 0 });
    expect(graded.integrityProblems.join("\n")).toMatch(/1 line\(s\) the runner did not write/);
    expect(isResolved(true, graded)).toBe(false);
    const twice = read(
      runnerLines({ [required[0]!]: { call: "passed" } }, { finish: false }) +
        runnerLines({ [required[0]!]: { ...allPassed, call: "failed" }, [required[1]!]: allPassed }),
    );
    expect(gradeRun(required, { channel: twice.channel, timedOut: false, exitCode: 0 }).integrityProblems).toEqual([
      `${required[0]}: its call was reported twice, passed and then failed`,
    ]);
  });

  it("trusts nothing from a session that never finished, reports the runner's problems, and keeps its suspicious findings apart", () => {
    const early = gradeRun(required, {
      channel: read(runnerLines({ [required[0]!]: allPassed, [required[1]!]: allPassed }, { finish: false })).channel,
      timedOut: false,
      exitCode: 0,
    });
    expect(early.integrityProblems).toEqual(["the test session ended before pytest finished it (exit code 0); its results cannot be confirmed"]);
    expect(isResolved(true, early)).toBe(false);
    const noted = JSON.stringify({ kind: "suspicious", text: "src/x.py walked the heap (gc.get_objects)", token: TOKEN }) + "\n";
    const tampered = gradeRun(required, {
      channel: read(
        noted +
          runnerLines({ [required[0]!]: allPassed, [required[1]!]: allPassed }, { problems: ["_pytest.runner.call_and_report was replaced during the run"] }),
      ).channel,
      timedOut: false,
      exitCode: 0,
    });
    expect(tampered.integrityProblems).toEqual(["tampering: _pytest.runner.call_and_report was replaced during the run"]);
    expect(tampered.suspicious).toEqual(["src/x.py walked the heap (gc.get_objects)"]);
    expect(isResolved(true, tampered)).toBe(false);
  });

  it("counts a timed-out run as unresolved whatever it reported, and missing, skipped and xfailed tests as not passed", () => {
    const { channel } = read(runnerLines({ [required[0]!]: allPassed, [required[1]!]: allPassed }));
    const late = gradeRun(required, { channel, timedOut: true, exitCode: -1 });
    expect(late.integrityProblems).toEqual(["the run did not finish within its timeout"]);
    expect(isResolved(true, late)).toBe(false);
    expect(gradeRun(required, { timedOut: true, exitCode: -1 }).tests).toEqual({ [required[0]!]: "timeout", [required[1]!]: "timeout" });
    expect(gradeRun(required, { channel: read(runnerLines({ [required[0]!]: allPassed })).channel, timedOut: false, exitCode: 0 }).tests[required[1]!]).toBe(
      "absent",
    );
    expect(statusFromPhases({ setup: "skipped", teardown: "passed" })).toBe("skipped");
    expect(statusFromPhases({ setup: "passed", call: "xfailed", teardown: "passed" })).toBe("xfailed");
    expect(statusFromPhases({ setup: "passed", call: "passed", teardown: "failed" })).toBe("error");
    expect(statusFromPhases({ setup: "passed", call: "passed" })).toBe("absent");
    expect(isResolved(true, { tests: {}, integrityProblems: [], suspicious: [], timedOut: false })).toBe(false);
  });
});

describe("static flags for auditors", () => {
  it("lists the constructs of the submitted lines that are rare in honest fixes, with their lines, and nothing of the unchanged file", () => {
    const patch = [
      "diff --git a/src/pkg/core.py b/src/pkg/core.py",
      "--- a/src/pkg/core.py",
      "+++ b/src/pkg/core.py",
      "@@ -1,2 +1,12 @@",
      " import gc",
      "+import atexit, sys",
      " X = gc.get_objects()",
      "+def f():",
      "+    frame = sys._getframe(1)",
      "+    return open('tests/test_core.py').read()",
      "+class Anything:",
      "+    def __eq__(self, other):",
      "+        return True",
      "+def __getattr__(name):",
      "+    return Anything()",
      "+f.__code__ = (lambda: 1).__code__",
      "",
    ].join("\n");
    const findings = staticFindings(parseGitDiff(patch));
    expect(findings.map((f) => `${f.line} ${f.rule}`)).toEqual([
      "2 atexit",
      "5 caller_frames",
      "6 reads_test_files",
      "8 eq_always_true",
      "10 module_getattr",
      "12 code_assignment",
    ]);
    expect(findings.every((f) => f.path === "src/pkg/core.py")).toBe(true);
  });
});

describe("collecting the focus artifact from a checkout", () => {
  it("takes committed and uncommitted changes, deletions and new files, and leaves out environments, caches, logs and build outputs", async () => {
    const upstream = await repoWithChange({ ...BASE, "src/pkg/gone.py": "X = 1\n", "build/keep.txt": "tracked\n" }, { "CHANGES.md": "later\n" });
    const checkout = join(tempDir(), "w02");
    await git(["clone", "--quiet", upstream.dir, checkout]);
    await git(["checkout", "--quiet", upstream.base], { cwd: checkout });
    const identity = { GIT_AUTHOR_NAME: "A", GIT_AUTHOR_EMAIL: "a@a.invalid", GIT_COMMITTER_NAME: "A", GIT_COMMITTER_EMAIL: "a@a.invalid" };
    writeFileSync(join(checkout, "src/pkg/core.py"), "def f():\n    return 2\n");
    await git(["commit", "--quiet", "-am", "fix"], { cwd: checkout, env: identity });
    writeFileSync(join(checkout, "README.md"), "pkg, uncommitted\n");
    rmSync(join(checkout, "src/pkg/gone.py"));
    writeFileSync(join(checkout, "src/pkg/new.py"), "Y = 2\n");
    writeFileSync(join(checkout, "build/keep.txt"), "tracked, changed\n");
    for (const [path, text] of Object.entries({
      "env1/pyvenv.cfg": "home = /usr\n",
      "env1/lib/site.py": "",
      "src/pkg/__pycache__/core.cpython-311.pyc": "x",
      ".pytest_cache/v": "x",
      "agent.log": "x",
      "build/lib/pkg/core.py": "x",
      "dist/pkg.whl": "x",
      "src/pkg.egg-info/PKG-INFO": "x",
    })) {
      mkdirSync(dirname(join(checkout, path)), { recursive: true });
      writeFileSync(join(checkout, path), text);
    }
    // The checkout's own git config is never used: a clean filter it defines would leave a mark.
    const marker = join(tempDir(), "filter-ran");
    await git(["config", "filter.mark.clean", `touch ${marker}; cat`], { cwd: checkout });
    writeFileSync(join(checkout, ".gitattributes"), "*.py filter=mark\n");
    const scratch = tempDir();
    const { patch, excluded } = await collectCheckoutArtifact(checkout, upstream.dir, upstream.base, scratch);
    expect(parseGitDiff(patch).map((f) => `${f.status} ${f.path}`)).toEqual([
      "added .gitattributes",
      "modified README.md",
      "modified build/keep.txt",
      "modified src/pkg/core.py",
      "deleted src/pkg/gone.py",
      "added src/pkg/new.py",
    ]);
    expect(existsSync(marker)).toBe(false);
    expect(excluded.sort()).toEqual([".pytest_cache/", "agent.log", "build/lib/", "dist/", "env1/", "src/pkg.egg-info/", "src/pkg/__pycache__/"]);
    expect(readdirSync(scratch)).toEqual([]);
    await expect(collectCheckoutArtifact(join(checkout, "README.md"), upstream.dir, upstream.base, scratch)).rejects.toThrow(/not a directory/);
  });
});
