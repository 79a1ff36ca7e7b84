import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseJunitReport } from "../../pipeline/test-results/junit.ts";
import { swebenchTestId } from "../../pipeline/test-results/test-ids.ts";
import { environmentSpec } from "../../pipeline/executors/environment.ts";
import { LocalExecutor } from "../../pipeline/executors/local.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { EnvironmentRecipe } from "../../pipeline/schemas/repo-profile.ts";
import { BuildFailed } from "../../pipeline/executors/types.ts";
import { NETWORK_FAILURE } from "../../pipeline/qualification/qualify-task.ts";
import { fileTempDir } from "../helpers/tmp.ts";

/** The machine's Python, which the local executor builds environments from. */
const PYTHON = "3.11";

function writeTree(root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

// A miniature of Django's own layout: tests/runtests.py takes --settings, --parallel, --verbosity
// and labels, and runs the settings' TEST_RUNNER, as Django's does.
const DJANGO_PROJECT = {
  "tests/runtests.py": [
    "import argparse, os, sys",
    "import django",
    "from django.conf import settings",
    "from django.test.utils import get_runner",
    "parser = argparse.ArgumentParser()",
    "parser.add_argument('labels', nargs='*')",
    "parser.add_argument('--settings')",
    "parser.add_argument('--parallel', type=int, default=0)",
    "parser.add_argument('-v', '--verbosity', type=int, default=1)",
    "options = parser.parse_args()",
    "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))",
    "os.environ['DJANGO_SETTINGS_MODULE'] = options.settings or 'test_sqlite'",
    "django.setup()",
    "TestRunner = get_runner(settings)",
    "runner = TestRunner(verbosity=options.verbosity, parallel=options.parallel)",
    "sys.exit(bool(runner.run_tests(options.labels)))",
    "",
  ].join("\n"),
  "tests/test_sqlite.py":
    "DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': ':memory:'}}\nSECRET_KEY = 'tests'\nINSTALLED_APPS = []\nUSE_TZ = False\n",
  "tests/basic/__init__.py": "",
  "tests/basic/tests.py": [
    "import urllib.request",
    "from django.test import SimpleTestCase",
    "",
    "class BasicTests(SimpleTestCase):",
    "    def test_passes(self):",
    "        self.assertEqual(1 + 1, 2)",
    "",
    "    def test_fails(self):",
    "        self.assertEqual(1 + 1, 3)",
    "",
    "    def test_needs_network(self):",
    "        urllib.request.urlopen('http://example.invalid/', timeout=5)",
    "",
  ].join("\n"),
  "tests/other/__init__.py": "",
  "tests/other/tests.py": "from django.test import SimpleTestCase\n\nclass OtherTests(SimpleTestCase):\n    def test_not_selected(self):\n        pass\n",
};

// sympy's layout: bin/test (its own runner, which writes no structured report) and tests beside
// the code in <package>/<module>/tests/test_*.py, as plain functions.
const SYMPY_PROJECT = {
  "bin/test": "#!/usr/bin/env python\n# sympy's own runner prints results as text only; switch-swe runs these tests with pytest.\n",
  "symkit/__init__.py": "",
  "symkit/core/__init__.py": "def add(a, b):\n    return a + b\n",
  "symkit/core/tests/__init__.py": "",
  "symkit/core/tests/test_basic.py":
    "from symkit.core import add\n\ndef test_add():\n    assert add(1, 2) == 3\n\ndef test_issue_1234():\n    assert add(1, 1) == 3\n",
  "conftest.py": "",
};

describe("test runners give JUnit-derived ids in SWE-bench's formats", () => {
  let executor: LocalExecutor;
  let root: string;
  beforeAll(() => {
    root = fileTempDir();
    executor = new LocalExecutor(join(root, "envs"), silentLogger);
  });

  it("django: tests/runtests.py through unittest-xml-reporting's runner, ids as `name (module.Class...)`", async () => {
    const project = join(root, "django-project");
    writeTree(project, DJANGO_PROJECT);
    const env = environmentSpec("o/django-like", EnvironmentRecipe.parse({ python: PYTHON, test_runner: "django", pip_requirements: ["django"] }), null);
    await executor.ensureEnvironment(env);
    const result = await executor.run({ env, checkoutDir: project, tests: ["tests/basic/tests.py"], timeoutSeconds: 600 });
    expect(result.junitXml, result.outputTail).toBeDefined();
    const report = parseJunitReport(result.junitXml!, { runner: "django", python: PYTHON });
    const statuses = Object.fromEntries(report.results.map((r) => [r.nodeId, r.status]));
    // Python 3.11 changed unittest's id form; the environment's version decides it
    expect(statuses).toEqual({
      "test_passes (basic.tests.BasicTests.test_passes)": "passed",
      "test_fails (basic.tests.BasicTests.test_fails)": "failed",
      "test_needs_network (basic.tests.BasicTests.test_needs_network)": "error",
    });
    expect(report.results.find((r) => r.nodeId.startsWith("test_needs_network"))!.failureText).toMatch(NETWORK_FAILURE);
    // and a single test, by its id
    const one = await executor.run({ env, checkoutDir: project, tests: ["test_passes (basic.tests.BasicTests.test_passes)"], timeoutSeconds: 600 });
    expect(parseJunitReport(one.junitXml!, { runner: "django", python: PYTHON }).results.map((r) => r.nodeId)).toEqual([
      "test_passes (basic.tests.BasicTests.test_passes)",
    ]);
  });

  it("sympy: the tests collected by pytest, ids mapped to the bare names SWE-bench records", async () => {
    const project = join(root, "sympy-project");
    writeTree(project, SYMPY_PROJECT);
    const env = environmentSpec("o/sympy-like", EnvironmentRecipe.parse({ python: PYTHON, test_runner: "sympy" }), null);
    await executor.ensureEnvironment(env);
    const result = await executor.run({ env, checkoutDir: project, tests: ["symkit/core/tests/test_basic.py"], timeoutSeconds: 600 });
    const report = parseJunitReport(result.junitXml!, { runner: "sympy", python: PYTHON });
    expect(report.results.map((r) => [r.nodeId, r.status])).toEqual([
      ["symkit/core/tests/test_basic.py::test_add", "passed"],
      ["symkit/core/tests/test_basic.py::test_issue_1234", "failed"],
    ]);
    expect(report.results.map((r) => swebenchTestId("sympy", r.nodeId))).toEqual(["test_add", "test_issue_1234"]);
  });

  it("a Python no interpreter here gives is uv's managed one where that can be downloaded, else a build failure naming it", async () => {
    const env = environmentSpec("o/old-python", EnvironmentRecipe.parse({ python: "3.10" }), null);
    try {
      await executor.ensureEnvironment(env);
    } catch (error) {
      // No internet for python-build-standalone (CI, this machine): said plainly, and a property of the setup
      expect(error).toBeInstanceOf(BuildFailed);
      expect((error as Error).message).toMatch(/Python 3\.10 is not available here \(.*\) and uv could not download a managed Python 3\.10.*whole log: /);
      return;
    }
    // With the internet (a user's machine): the environment runs that Python
    const project = join(root, "py310");
    writeTree(project, { "test_version.py": "import sys\n\ndef test_version():\n    assert sys.version_info[:2] == (3, 10)\n" });
    const result = await executor.run({ env, checkoutDir: project, tests: ["test_version.py"], timeoutSeconds: 600 });
    expect(parseJunitReport(result.junitXml!).results.map((r) => r.status)).toEqual(["passed"]);
  });
});
