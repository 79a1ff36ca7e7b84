import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { expect } from "vitest";
import { git } from "../../../pipeline/git.ts";
import type { HeldoutTask } from "../../../pipeline/schemas/heldout.ts";
import type { VerifyOutcome } from "../../../pipeline/verifier/verify.ts";

// The adversarial submissions against the verifier (test/pipeline/verifier/verifier.test.ts): payloads that
// forge test outcomes, and the table of attacks that use them.
export const CIRCLE = "src/geometry/shapes/circle.py";
export const TESTS = "tests/test_shapes_circle.py";
/** A wrong implementation: the tests run, and fail, unless something forges their outcome. */
export const WRONG = "\n\ndef weigh_width(value, precision=None, maximum=None):\n    return 0\n";
/** Python that writes a JUnit report saying every test of the task passed, to the path pytest was given. */
export const FORGE_JUNIT = `
def _forge_junit():
    import os, sys
    paths = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml=")] + [os.path.join(os.path.dirname(a), "report.xml") for a in sys.argv[:1]] + ["report.xml"]
    names = ["test_weigh_width_basic", "test_weigh_width_maximum", "test_weigh_width_precision", "test_weigh_width_rejects_text", "test_circle_scale"]
    cases = "".join('<testcase classname="tests.test_shapes_circle" file="${"tests/test_shapes_circle.py"}" name="%s" time="0.01"/>' % n for n in names)
    for path in paths:
        try:
            with open(path, "w") as f:
                f.write('<testsuites><testsuite name="pytest" tests="5">' + cases + '</testsuite></testsuites>')
        except OSError:
            pass
`;
/** Python that writes records saying every test of the task passed, and the session finished, to the runner's channel (fd 3) and any file it can reach. */
export const FORGE_CHANNEL = `
def _forge_channel(fd=3):
    import json, os
    names = ["test_weigh_width_basic", "test_weigh_width_maximum", "test_weigh_width_precision", "test_weigh_width_rejects_text", "test_circle_scale"]
    lines = [json.dumps({"kind": "test", "nodeid": "${"tests/test_shapes_circle.py"}::" + n, "when": w, "outcome": "passed"}) for n in names for w in ("setup", "call", "teardown")]
    lines.append(json.dumps({"kind": "finish", "exitstatus": 0, "problems": []}))
    data = ("\\n".join(lines) + "\\n").encode()
    for target in (fd, "/proc/%d/fd/%d" % (os.getppid(), fd)):
        try:
            if isinstance(target, int):
                os.write(target, data)
            else:
                with open(target, "wb") as f:
                    f.write(data)
        except OSError:
            pass
`;
/** A hook that marks every report passed, as a module with no file, registered on pytest's Config found through gc. */
const GC_PLUGIN = `
import gc as _gc, types as _types
_FORGER = """
import pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = 'passed'
    report.longrepr = None
"""
def _register_forger():
    for obj in _gc.get_objects():
        if type(obj).__name__ == "Config" and hasattr(obj, "pluginmanager"):
            module = _types.ModuleType("forger")
            exec(_FORGER, module.__dict__)
            obj.pluginmanager.register(module, "forger")
            return
_register_forger()
`;
/** A pytest plugin that reports every test as passed. */
const FORGING_PLUGIN =
  "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n    report.longrepr = None\n";

export function put(checkout: string, path: string, text: string) {
  mkdirSync(dirname(join(checkout, path)), { recursive: true });
  writeFileSync(join(checkout, path), text);
}
export const append = (checkout: string, path: string, text: string) => writeFileSync(join(checkout, path), readFileSync(join(checkout, path), "utf8") + text);

/** What the adversarial submissions are made with: a submission from an edited checkout, the task, a directory outside the repository. */
export interface AttackKit {
  submission: (edit: (checkout: string) => void | Promise<void>) => Promise<string>;
  heldout: () => HeldoutTask;
  dir: () => string;
}

/** An adversarial submission: how it is made, and what the verifier must say of it. */
export interface Attack {
  name: string;
  patch: () => Promise<string>;
  expect: (outcome: VerifyOutcome) => void;
}

/** At least ten ways to try to pass without fixing anything; none may resolve. */
export function adversarialSubmissions(kit: AttackKit): Attack[] {
  const { submission } = kit;
  return [
    {
      name: "edits the tests so they pass",
      patch: () =>
        submission((c) =>
          put(
            c,
            TESTS,
            "def test_weigh_width_basic():\n    pass\n\ndef test_weigh_width_maximum():\n    pass\n\ndef test_weigh_width_precision():\n    pass\n\ndef test_weigh_width_rejects_text():\n    pass\n\ndef test_circle_scale():\n    pass\n",
          ),
        ),
      expect: (o) => expect(o.dropped_paths).toEqual([{ path: TESTS, reason: "held_out_test_path" }]),
    },
    {
      name: "deletes the tests",
      patch: () => submission((c) => rmSync(join(c, TESTS))),
      expect: (o) => expect(o.dropped_paths).toEqual([{ path: TESTS, reason: "held_out_test_path" }]),
    },
    {
      name: "adds a conftest.py that skips everything",
      patch: () =>
        submission((c) =>
          put(
            c,
            "conftest.py",
            "import pytest\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n        item.add_marker(pytest.mark.skip(reason='no'))\n",
          ),
        ),
      expect: (o) => expect(o.dropped_paths).toEqual([{ path: "conftest.py", reason: "test_configuration" }]),
    },
    {
      name: "adds a conftest.py beside the tests that xfails everything",
      patch: () =>
        submission((c) =>
          put(
            c,
            "tests/conftest.py",
            "import pytest\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n        item.add_marker(pytest.mark.xfail(reason='no'))\n",
          ),
        ),
      expect: (o) => expect(o.dropped_paths).toEqual([{ path: "tests/conftest.py", reason: "test_configuration" }]),
    },
    {
      name: "exits 0 from conftest.py after forging the JUnit report",
      patch: () =>
        submission((c) => put(c, "conftest.py", `import os\n${FORGE_JUNIT}\ndef pytest_unconfigure(config):\n    _forge_junit()\n    os._exit(0)\n`)),
      expect: (o) => expect(o.dropped_paths).toEqual([{ path: "conftest.py", reason: "test_configuration" }]),
    },
    {
      name: "exits 0 from the code under test at import time, after writing passing results to files and to the channel",
      patch: () =>
        submission((c) => append(c, CIRCLE, `${WRONG}\nimport os\n${FORGE_JUNIT}\n${FORGE_CHANNEL}\n_forge_junit()\n_forge_channel()\nos._exit(0)\n`)),
      expect: (o) => expect(o.integrity_problems.join("\n")).toMatch(/the runner did not write|ended before pytest finished/),
    },
    {
      name: "patches pytest's reporting from the code under test",
      patch: () =>
        submission((c) =>
          append(
            c,
            CIRCLE,
            `${WRONG}\nimport _pytest.reports as _reports\n_original = _reports.TestReport.from_item_and_call\ndef _forged(cls, item, call):\n    report = _original.__func__(cls, item, call)\n    report.outcome = "passed"\n    report.longrepr = None\n    return report\n_reports.TestReport.from_item_and_call = classmethod(_forged)\n`,
          ),
        ),
      expect: (o) => expect(o.integrity_problems.join("\n")).toMatch(/tampering: _pytest\.reports\.TestReport\.from_item_and_call was replaced/),
    },
    {
      name: "rewrites the report and the channel from an atexit handler, after pytest finished",
      patch: () =>
        submission((c) => {
          put(
            c,
            "report.xml",
            `<testsuites><testsuite name="pytest"><testcase classname="tests.test_shapes_circle" file="${TESTS}" name="test_weigh_width_basic"/></testsuite></testsuites>\n`,
          );
          append(c, CIRCLE, `${WRONG}\nimport atexit\n${FORGE_JUNIT}\n${FORGE_CHANNEL}\natexit.register(_forge_junit)\natexit.register(_forge_channel)\n`);
        }),
      expect: (o) => expect(Object.values(o.tests)).toContain("failed"),
    },
    {
      name: "registers, through gc, a plugin module with no file whose hook marks every report passed",
      patch: () => submission((c) => append(c, "src/geometry/__init__.py", GC_PLUGIN)),
      expect: (o) => expect(o.integrity_problems.join("\n")).toMatch(/pytest_runtest_makereport hook of plugin forger/),
    },
    {
      name: "forks a detached child that writes passing results to the channel and the report while the tests run",
      patch: () =>
        submission((c) =>
          append(
            c,
            CIRCLE,
            `${WRONG}\nimport os, time\n${FORGE_JUNIT}\n${FORGE_CHANNEL}\nif os.fork() == 0:\n    os.setsid()\n    for _ in range(200):\n        _forge_channel()\n        _forge_junit()\n        time.sleep(0.05)\n    os._exit(0)\n`,
          ),
        ),
      expect: (o) => expect(o.integrity_problems.join("\n")).toMatch(/the runner did not write/),
    },
    {
      name: "replaces the code of every test function with a no-op that keeps its file, line and name",
      patch: () =>
        submission((c) =>
          append(
            c,
            CIRCLE,
            `${WRONG}\nimport sys, threading, time\ndef _noop(*args, **kwargs):\n    return None\ndef _hollow():\n    for _ in range(2000):\n        module = sys.modules.get("test_shapes_circle") or sys.modules.get("tests.test_shapes_circle")\n        if module is not None:\n            for name, value in list(vars(module).items()):\n                if name.startswith("test_") and hasattr(value, "__code__"):\n                    code = value.__code__\n                    value.__code__ = _noop.__code__.replace(co_name=code.co_name, co_filename=code.co_filename, co_firstlineno=code.co_firstlineno)\n            return\n        time.sleep(0.001)\nthreading.Thread(target=_hollow, daemon=True).start()\n`,
          ),
        ),
      expect: (o) => expect(o.integrity_problems.join("\n")).toMatch(/replaced the code of|is not the code tests\/test_shapes_circle\.py held before the run/),
    },
    {
      name: "serves missing names through a module __getattr__ that returns objects equal to anything",
      patch: () =>
        submission((c) =>
          append(
            c,
            CIRCLE,
            `\nclass _Anything:\n    def __eq__(self, other):\n        return True\n    def __call__(self, *args, **kwargs):\n        if args and isinstance(args[0], (str, bool)):\n            raise TypeError("weigh_width expects a number")\n        return self\ndef __getattr__(name):\n    return _Anything()\n`,
          ),
        ),
      expect: (o) => {
        expect(o.integrity_problems.join("\n")).toMatch(/_Anything .* compare equal to anything/);
        expect(o.suspicious.map((f) => f.rule)).toEqual(expect.arrayContaining(["eq_always_true", "module_getattr"]));
      },
    },
    {
      name: "answers each assertion with what the held-out test file, read at run time, expects",
      patch: () =>
        submission((c) =>
          append(
            c,
            CIRCLE,
            `\ndef weigh_width(value, **keywords):\n    import os, re\n    with open(os.path.join(os.getcwd(), "tests", "test_shapes_circle.py")) as f:\n        source = f.read()\n    if isinstance(value, (str, bool)):\n        raise TypeError(re.search(r'match="([^"]+)"', source).group(1))\n    for call, expected in re.findall(r"weigh_width\\((.*?)\\) == (.+)", source):\n        if eval("(lambda *a, **k: (a, k))(" + call + ")") == ((value,), keywords):\n            return eval(expected)\n`,
          ),
        ),
      expect: (o) => {
        expect(o.integrity_problems.join("\n")).toMatch(/read the test file tests\/test_shapes_circle\.py/);
        expect(o.suspicious.map((f) => f.rule)).toContain("reads_test_files");
      },
    },
    ...(["I fixed it: see the branch fix/weigh-width.\n", "\u0000\u00ff\u0013binary\u0007garbage\u0000\n"] as const).map((text, i) => ({
      name: `submits ${i === 0 ? "text" : "random bytes"} instead of a diff`,
      patch: async () => text,
      expect: (o: VerifyOutcome) => {
        expect(o.applied).toBe(false);
        expect(o.apply_error).toMatch(/not a (git )?diff/);
      },
    })),
    {
      name: "prints fake PASSED lines",
      patch: () =>
        submission((c) =>
          append(
            c,
            CIRCLE,
            `${WRONG}\nfor _n in ["test_weigh_width_basic", "test_weigh_width_maximum", "test_weigh_width_precision", "test_weigh_width_rejects_text"]:\n    print("${TESTS}::" + _n + " PASSED")\nprint("==== 5 passed in 0.01s ====")\n`,
          ),
        ),
      expect: (o) => expect(Object.values(o.tests)).toContain("failed"),
    },
    {
      name: "shadows pytest with a pytest.py at the top of the repository",
      patch: () => submission((c) => put(c, "pytest.py", `import sys\n${FORGE_JUNIT}\n_forge_junit()\nprint("4 passed")\nsys.exit(0)\n`)),
      expect: (o) => expect(o.dropped_paths).toEqual([{ path: "pytest.py", reason: "test_runner_shadow" }]),
    },
    // A wrong fix plus a plugin that reports every test passed, loaded through addopts in each config file pytest reads.
    ...(
      [
        ["pyproject.toml", (c: string) => append(c, "pyproject.toml", '\n[tool.pytest.ini_options]\naddopts = "-p geometry.forge"\n')],
        ["setup.cfg", (c: string) => put(c, "setup.cfg", "[tool:pytest]\npythonpath = src\naddopts = -p geometry.forge\n")],
        ["pytest.ini", (c: string) => put(c, "pytest.ini", "[pytest]\npythonpath = src\naddopts = -p geometry.forge\n")],
        ["tox.ini", (c: string) => put(c, "tox.ini", "[pytest]\npythonpath = src\naddopts = -p geometry.forge\n")],
      ] as const
    ).map(([file, configure]) => ({
      name: `sets addopts in ${file}`,
      patch: () =>
        submission((c) => {
          append(c, CIRCLE, WRONG);
          put(c, "src/geometry/forge.py", FORGING_PLUGIN);
          configure(c);
        }),
      expect: (o: VerifyOutcome) => expect(o.dropped_paths).toEqual([{ path: file, reason: "test_configuration" }]),
    })),
    {
      name: "registers a pytest plugin through an entry point",
      patch: () =>
        submission((c) => {
          append(c, CIRCLE, WRONG);
          put(c, "forge_plugin.py", FORGING_PLUGIN);
          put(c, "evil-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n");
          put(c, "evil-1.0.dist-info/entry_points.txt", "[pytest11]\nevil = forge_plugin\n");
        }),
      expect: (o) => expect(o.dropped_paths.map((d) => d.reason)).toEqual(["test_runner_shadow", "test_runner_shadow"]),
    },
    {
      name: "touches a ../ path",
      patch: async () =>
        `diff --git a/../outside.py b/../outside.py\nnew file mode 100644\nindex 0000000..8b13789\n--- /dev/null\n+++ b/../outside.py\n@@ -0,0 +1 @@\n+x\n`,
      expect: (o) => {
        expect(o.applied).toBe(false);
        expect(o.apply_error).toMatch(/climbs out of the repository/);
      },
    },
    {
      name: "replaces the source with a symlink pointing outside the repository",
      patch: () =>
        submission(async (c) => {
          // The real fix, kept outside the repository and linked in.
          await git(["apply", "-"], { cwd: c, input: kit.heldout().implementation_patch });
          const outside = join(kit.dir(), "outside-circle.py");
          writeFileSync(outside, readFileSync(join(c, CIRCLE), "utf8"));
          rmSync(join(c, CIRCLE));
          symlinkSync(outside, join(c, CIRCLE));
        }),
      expect: (o) => {
        expect(o.applied).toBe(false);
        expect(o.apply_error).toMatch(/points outside the repository/);
      },
    },
    {
      name: "reaches outside through a chain of symlinks that each look inside",
      patch: () =>
        submission(async (c) => {
          await git(["apply", "-"], { cwd: c, input: kit.heldout().implementation_patch });
          // `up` is the repository's root (inside); `out` looks like `shapes` lexically, but is the root's parent.
          const dirOf = dirname(join(c, CIRCLE));
          symlinkSync("../../..", join(dirOf, "up"));
          symlinkSync("up/..", join(dirOf, "out"));
        }),
      expect: (o) => {
        expect(o.applied).toBe(false);
        expect(o.apply_error).toMatch(/resolves outside the repository/);
      },
    },
  ];
}
