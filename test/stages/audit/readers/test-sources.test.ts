import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../../../pipeline/logger.ts";
import { alignTask } from "../../../../stages/audit/runner.ts";
import { PatchOnlyTree, RepositoryTree } from "../../../../stages/audit/readers/source-tree.ts";
import { auditSwebench } from "../../../../stages/audit/study/swebench.ts";
import { importSwebench } from "../../../../stages/mine/swebench.ts";
import { repoWithChange } from "../../../helpers/git-repo.ts";
import { fileTempDir } from "../../../helpers/tmp.ts";
import { MIRRORS, records } from "../../../helpers/audit-subjects.ts";

describe("test sources from the repository", () => {
  it("reads a test the patch does not hold, and a parametrized case, from the bundled mirrors (sqlfluff-1625, astroid-1866)", async () => {
    const work = fileTempDir();
    const lines = ["sqlfluff__sqlfluff-1625", "pylint-dev__astroid-1866"].map((id) => JSON.stringify(records.get(id))).join("\n") + "\n";
    const { candidates } = importSwebench("records.jsonl", lines);
    const withMirrors = await auditSwebench({ candidates, mirrors: MIRRORS, workDir: join(work, "w"), log: silentLogger });
    const without = await auditSwebench({ candidates, workDir: join(work, "w2"), log: silentLogger });
    const by = (audit: typeof without, id: string) => audit.records.find((r) => r.task_id === id)!;
    expect(by(withMirrors, "sqlfluff__sqlfluff-1625").source).toBe("repository");
    expect(by(withMirrors, "sqlfluff__sqlfluff-1625").flags.some((f) => f.flag === "source_not_found")).toBe(false);
    expect(by(without, "sqlfluff__sqlfluff-1625").flags.find((f) => f.flag === "source_not_found")!.subject).toBe(
      "test/cli/commands_test.py::test__cli__command_directed",
    );
    expect(by(without, "sqlfluff__sqlfluff-1625").flags.find((f) => f.flag === "no_repository")!.detail).toContain("no --mirrors folder was given");
    // The parametrized case's values live in its decorator, outside the patch's hunk.
    expect(by(withMirrors, "pylint-dev__astroid-1866").flags.filter((f) => f.flag === "unjustified_test")).toEqual([]);
    expect(by(without, "pylint-dev__astroid-1866").flags.filter((f) => f.flag === "unjustified_test").length).toBeGreaterThan(0);
  });

  it("does not call a name new that the base already defines (a moved function), as the patch alone must", async () => {
    // The fix adds `shift` to core.py; the base already had one in util.py, which the fix does not touch.
    const base = {
      "pkg/core.py": "def step(x):\n    return x + 1\n",
      "pkg/util.py": "def shift(x):\n    return x + 2\n",
      "pkg/tests/test_core.py": "from pkg.core import step\n\n\ndef test_old():\n    assert step(1) == 2\n",
    };
    const repo = await repoWithChange(base, {
      "pkg/core.py": "def step(x):\n    return x + 1\n\n\ndef shift(x):\n    return x + 2\n",
    });
    const testPatch = `diff --git a/pkg/tests/test_core.py b/pkg/tests/test_core.py
--- a/pkg/tests/test_core.py
+++ b/pkg/tests/test_core.py
@@ -5,0 +6,4 @@ def test_old():
+
+
+def test_new():
+    assert shift(1) == 3
`;
    const task = {
      id: "o__r-1",
      requests: [{ stage: 1, text: "Make the step two instead of one.", provenance: { sources: [{ kind: "issue" as const, record_id: "1", author: "x" }] } }],
      verifier: { test_patch: testPatch, fail_to_pass: ["pkg/tests/test_core.py::test_new"] },
    };
    const patchOnly = await alignTask({ task, referencePatch: repo.diff, tree: new PatchOnlyTree(testPatch, "none") });
    expect(patchOnly.flags.map((f) => f.flag)).toContain("new_name");
    const tree = await RepositoryTree.open(repo.gitDir, repo.base, testPatch);
    const fromRepo = await alignTask({ task, referencePatch: repo.diff, tree });
    expect(fromRepo.flags.map((f) => f.flag)).not.toContain("new_name");
    // The test patch is applied to the base: the new test reads whole, from its own file.
    expect(fromRepo.links[0]!.test).toBe("pkg/tests/test_core.py::test_new");
    expect(fromRepo.flags.some((f) => f.flag === "source_not_found")).toBe(false);
  });
  it("marks the lines the test patch added where they stand in the tree, when git applied a hunk away from its header's line", async () => {
    // The header says line 2; the base has three more lines above, so git applies the hunk at line 5.
    const repo = await repoWithChange(
      { "pkg/tests/test_core.py": "import os\nimport sys\nimport re\n\ndef test_old():\n    assert True\n", "pkg/core.py": "X = 1\n" },
      { "pkg/core.py": "X = 2\n" },
    );
    const testPatch = `diff --git a/pkg/tests/test_core.py b/pkg/tests/test_core.py
--- a/pkg/tests/test_core.py
+++ b/pkg/tests/test_core.py
@@ -2,2 +2,3 @@
 def test_old():
     assert True
+    assert X == 2
`;
    const tree = await RepositoryTree.open(repo.gitDir, repo.base, testPatch);
    const lines = (await tree.lines("pkg/tests/test_core.py"))!;
    expect(lines.filter((l) => l.added)).toEqual([{ n: 7, text: "    assert X == 2", added: true }]);
  });
  it("unchanged_test: every F2P test is one the patch leaves alone, while the test it adds is not F2P (as requests-2674's)", async () => {
    const base = [
      "import requests",
      "",
      "def test_HTTP_200_OK_GET():",
      "    assert requests.get(httpbin('get')).status_code == 200",
      "",
      "def test_HTTP_200_OK_HEAD():",
      "    assert requests.head(httpbin('get')).status_code == 200",
      "",
      "def test_vendor_aliases():",
      "    from requests.packages import urllib3",
      "",
    ].join("\n");
    const repo = await repoWithChange({ "test_requests.py": base, "requests/adapters.py": "X = 1\n" }, { "requests/adapters.py": "X = 2\n" });
    const testPatch = `diff --git a/test_requests.py b/test_requests.py
--- a/test_requests.py
+++ b/test_requests.py
@@ -8,2 +8,7 @@ def test_HTTP_200_OK_HEAD():
 
+def test_urllib3_pool_connection_closed():
+    s = requests.Session()
+    assert "Pool is closed." in str(s.get(httpbin('status/200')))
+
+
 def test_vendor_aliases():
`;
    const request = "urllib3 exceptions pass through the requests API: DecodeError and TimeoutError should be wrapped.";
    const audit = async (failToPass: string[]) =>
      alignTask({
        task: {
          id: "psf__requests-1",
          requests: [{ stage: 1, text: request, provenance: { sources: [{ kind: "issue" as const, record_id: "1", author: "x" }] } }],
          verifier: { test_patch: testPatch, fail_to_pass: failToPass },
        },
        referencePatch: repo.diff,
        tree: await RepositoryTree.open(repo.gitDir, repo.base, testPatch),
      });
    const deciding = ["test_requests.py::test_HTTP_200_OK_GET", "test_requests.py::test_HTTP_200_OK_HEAD"];
    const unchanged = (await audit(deciding)).flags.filter((f) => f.flag === "unchanged_test");
    expect(unchanged.map((f) => [f.subject, f.severity, f.evidence[0]!.line])).toEqual([
      ["test_requests.py::test_HTTP_200_OK_GET", 2, 3],
      ["test_requests.py::test_HTTP_200_OK_HEAD", 2, 6],
    ]);
    expect(unchanged[0]!.detail).toContain("the tests it adds (`test_urllib3_pool_connection_closed`) are not fail-to-pass");
    // Once the test written for the issue decides too, nothing is said.
    expect((await audit([...deciding, "test_requests.py::test_urllib3_pool_connection_closed"])).flags.map((f) => f.flag)).not.toContain("unchanged_test");
  });

  it("exact_format: a drawing the test patch changed inside, its assignment and comparison unchanged (as sympy-16503's)", async () => {
    const testFile = (rows: string[]) =>
      ["from pkg.draw import pretty", "", "", "def test_box():", "    drawn = \\", '"""\\', ...rows, '"""', "    assert pretty(1) == drawn", ""].join("\n");
    const repo = await repoWithChange(
      { "pkg/draw.py": "def pretty(x):\n    return '+-+'\n", "pkg/tests/test_draw.py": testFile(["+-+", "| |"]) },
      { "pkg/draw.py": "def pretty(x):\n    return '+=+'\n" },
    );
    const testPatch = `diff --git a/pkg/tests/test_draw.py b/pkg/tests/test_draw.py
--- a/pkg/tests/test_draw.py
+++ b/pkg/tests/test_draw.py
@@ -6,3 +6,3 @@ def test_box():
-+-+
++=+
 | |
 """
`;
    const task = {
      id: "o__r-2",
      requests: [{ stage: 1, text: "The box looks wrong; please fix it.", provenance: { sources: [{ kind: "issue" as const, record_id: "2", author: "x" }] } }],
      verifier: { test_patch: testPatch, fail_to_pass: ["pkg/tests/test_draw.py::test_box"] },
    };
    const tree = await RepositoryTree.open(repo.gitDir, repo.base, testPatch);
    const flag = (await alignTask({ task, referencePatch: repo.diff, tree })).flags.find((f) => f.flag === "exact_format")!;
    expect(flag.evidence[0]).toEqual({ file: "pkg/tests/test_draw.py", line: 5, text: "drawn = \\" });
    expect(flag.detail).toContain("+=+");
  });
});
