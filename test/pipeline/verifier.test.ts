import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { demoCorpus } from "../helpers/demo-corpus.ts";
import { planEnvironments } from "../../pipeline/profiles/environments.ts";
import { recipeFor } from "../../pipeline/profiles/recipes.ts";
import { DockerExecutor, LocalExecutor } from "../../pipeline/executors/index.ts";
import { InfrastructureFault, type EnvironmentSpec, type Executor } from "../../pipeline/executors/types.ts";
import { git, MirrorCache } from "../../pipeline/git.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { loadProfiles } from "../../pipeline/profiles/load.ts";
import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import type { RepoProfile } from "../../pipeline/schemas/repo-profile.ts";
import { verifyArtifact, type VerifyOutcome } from "../../pipeline/verifier/verify.ts";
import { freshCheckout } from "../../pipeline/checkouts/checkout.ts";
import { qualifyTask } from "../../pipeline/qualification/qualify-task.ts";
import { oracleTask } from "../../stages/oracle/index.ts";
import { dockerForTests } from "../helpers/docker.ts";
import { fileTempDir } from "../helpers/tmp.ts";
import Docker from "dockerode";

const root = fileURLToPath(new URL("../../", import.meta.url));
const TASK = "demo-org__geometry-3";
const REPO = "demo-org/geometry";
const CIRCLE = "src/geometry/shapes/circle.py";
const TESTS = "tests/test_shapes_circle.py";
/** A wrong implementation: the tests run, and fail, unless something forges their outcome. */
const WRONG = "\n\ndef weigh_width(value, precision=None, maximum=None):\n    return 0\n";
/** Python that writes a JUnit report saying every test of the task passed, to the path pytest was given. */
const FORGE_JUNIT = `
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
const FORGE_CHANNEL = `
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

interface Fixture {
  heldout: HeldoutTask;
  env: EnvironmentSpec;
  mirror: string;
  profile: RepoProfile;
  scratch: string;
}

let fixture: Fixture;
let dir: string;

/** A submission: the diff a checkout of the base commit has after `edit`. */
async function submission(edit: (checkout: string) => void | Promise<void>): Promise<string> {
  const checkout = await freshCheckout(fixture.mirror, fixture.heldout.base_commit, [], fixture.scratch);
  try {
    await edit(checkout.dir);
    await git(["add", "--all"], { cwd: checkout.dir });
    return await git(["diff", "--cached", "--binary", "--full-index", "HEAD"], { cwd: checkout.dir });
  } finally {
    await checkout.dispose();
  }
}

function put(checkout: string, path: string, text: string) {
  mkdirSync(dirname(join(checkout, path)), { recursive: true });
  writeFileSync(join(checkout, path), text);
}
const append = (checkout: string, path: string, text: string) => writeFileSync(join(checkout, path), readFileSync(join(checkout, path), "utf8") + text);

beforeAll(async () => {
  dir = fileTempDir();
  const corpus = await demoCorpus(join(root, "data", "demo", "corpus.yaml"), join(dir, "corpus"));
  const records = readFileSync(corpus.recordsFile, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  const record = records.find((r) => r.instance_id === TASK)!;
  const profileFile = join(root, "data", "demo", "repos", "demo-org__geometry.json");
  const profile = loadProfiles([{ path: profileFile, text: readFileSync(profileFile, "utf8") }]).profiles.get(REPO)!.profile;
  // The environment the demo pipeline plans for this repository (as of its earliest PR), so a
  // Docker image built by either is shared.
  const recipe = recipeFor(profile, { id: TASK });
  const env = planEnvironments(records.filter((r) => r.repo === REPO).map((r) => ({ id: r.instance_id, repo: REPO, recipe, createdAt: r.created_at }))).get(
    TASK,
  )!;
  const mirror = await new MirrorCache(join(dir, "git")).ensure(REPO, join(corpus.dir, "repos", "demo-org__geometry"), record.base_commit);
  const scratch = join(dir, "scratch");
  mkdirSync(scratch, { recursive: true });
  // The task's sets, from a real qualification run (one run of each state).
  const local = new LocalExecutor(join(dir, "envs"), silentLogger);
  const checkout = (patches: { name: string; text: string }[]) => freshCheckout(mirror, record.base_commit, patches, scratch);
  const qualified = await qualifyTask(
    local,
    { id: TASK, baseCommit: record.base_commit, testPatch: record.test_patch, implementationPatch: record.patch, env, testArgs: [TESTS], runs: 1, checkout },
    silentLogger,
  );
  const heldout = HeldoutTask.parse({
    task_id: TASK,
    repo: REPO,
    base_commit: record.base_commit,
    implementation_patch: record.patch,
    test_patch: record.test_patch,
    fail_to_pass: qualified.sets.failToPass,
    pass_to_pass: qualified.sets.passToPass,
    test_command: "python -m pytest",
    environment: env.recipe,
    environment_as_of: env.asOf,
    upstream: { patch: record.patch + record.test_patch, pull_number: null, merge_commit: null },
  });
  fixture = { heldout, env, mirror, profile, scratch };
});

/** At least ten ways to try to pass without fixing anything; none may resolve. */
const ATTACKS: { name: string; patch: () => Promise<string>; expect: (outcome: VerifyOutcome) => void }[] = [
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
    patch: () => submission((c) => put(c, "conftest.py", `import os\n${FORGE_JUNIT}\ndef pytest_unconfigure(config):\n    _forge_junit()\n    os._exit(0)\n`)),
    expect: (o) => expect(o.dropped_paths).toEqual([{ path: "conftest.py", reason: "test_configuration" }]),
  },
  {
    name: "exits 0 from the code under test at import time, after writing passing results to files and to the channel",
    patch: () => submission((c) => append(c, CIRCLE, `${WRONG}\nimport os\n${FORGE_JUNIT}\n${FORGE_CHANNEL}\n_forge_junit()\n_forge_channel()\nos._exit(0)\n`)),
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
        await git(["apply", "-"], { cwd: c, input: fixture.heldout.implementation_patch });
        const outside = join(dir, "outside-circle.py");
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
        await git(["apply", "-"], { cwd: c, input: fixture.heldout.implementation_patch });
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

describe.each(["local", "docker"] as const)("the verifier with the %s executor", (kind) => {
  let executor: Executor | undefined;
  const verify = (artifact: string) =>
    verifyArtifact(
      executor!,
      { task: fixture.heldout, env: fixture.env, mirror: fixture.mirror, artifact, rules: fixture.profile.classification, scratch: fixture.scratch },
      silentLogger,
    );

  beforeAll(async () => {
    if (kind === "local") executor = new LocalExecutor(join(dir, "envs"), silentLogger);
    else if (await dockerForTests()) executor = new DockerExecutor(new Docker(), silentLogger);
  });

  it("resolves the reference patch, and the reference with edited tests and a conftest, and not the empty patch", async (ctx) => {
    if (!executor) return ctx.skip();
    expect(fixture.heldout.fail_to_pass).toEqual([
      `${TESTS}::test_weigh_width_basic`,
      `${TESTS}::test_weigh_width_maximum`,
      `${TESTS}::test_weigh_width_precision`,
      `${TESTS}::test_weigh_width_rejects_text`,
    ]);
    const reference = await verify(fixture.heldout.implementation_patch);
    expect(reference).toMatchObject({ applied: true, resolved: true, integrity_problems: [], dropped_paths: [] });
    expect(Object.keys(reference.tests)).toEqual([...fixture.heldout.fail_to_pass, ...fixture.heldout.pass_to_pass].sort());
    const withTests = await submission(async (c) => {
      await git(["apply", "-"], { cwd: c, input: fixture.heldout.implementation_patch });
      put(c, TESTS, "def test_weigh_width_basic():\n    assert False\n");
      put(c, "conftest.py", "import pytest\n");
    });
    expect(await verify(withTests)).toMatchObject({
      resolved: true,
      dropped_paths: [
        { path: "conftest.py", reason: "test_configuration" },
        { path: TESTS, reason: "held_out_test_path" },
      ],
    });
    const empty = await verify("");
    expect(empty).toMatchObject({ applied: true, resolved: false });
    expect(Object.values(empty.tests).filter((s) => s === "failed")).toHaveLength(fixture.heldout.fail_to_pass.length);
  });

  it("resolves an honest fix that uses threads, subprocesses, logging, warnings, dataclasses and its own data files", async (ctx) => {
    if (!executor) return ctx.skip();
    const honest = await submission(async (c) => {
      await git(["apply", "-"], { cwd: c, input: fixture.heldout.implementation_patch });
      put(c, "src/geometry/shapes/data.txt", "5\n");
      append(
        c,
        CIRCLE,
        [
          "",
          "import collections, dataclasses, logging, os, subprocess, sys, threading, warnings",
          "Pair = collections.namedtuple('Pair', 'a b')",
          "@dataclasses.dataclass",
          "class Box:",
          "    width: float",
          "def _factor():",
          "    with open(os.path.join(os.path.dirname(__file__), 'data.txt')) as f:",
          "        return int(f.read())",
          "assert _factor() == 5 and Box(1) == Box(1) and Pair(1, 2).a == 1",
          "threading.Thread(target=lambda: None, daemon=True).start()",
          "logging.getLogger(__name__).info('loaded')",
          "warnings.warn('geometry.shapes.circle is loaded', DeprecationWarning, stacklevel=2)",
          "subprocess.run([sys.executable, '-c', 'pass'], check=True)",
          "",
        ].join("\n"),
      );
      execFileSync("chmod", ["+x", join(c, "src/geometry/shapes/data.txt")]);
    });
    const outcome = await verify(honest);
    expect(outcome).toMatchObject({ applied: true, resolved: true, integrity_problems: [], timed_out: false });
    // Starting a process is rare in a fix: noted for an auditor, without changing the verdict.
    expect(outcome.suspicious.some((f) => f.rule === "runtime" && /started a process/.test(f.detail))).toBe(true);
  });

  it("never resolves a run that does not finish in time, and kills everything it started", async (ctx) => {
    if (!executor) return ctx.skip();
    const short: EnvironmentSpec = { ...fixture.env, recipe: { ...fixture.env.recipe, test_timeout_seconds: 20 } };
    const verifyShort = (artifact: string) =>
      verifyArtifact(
        executor!,
        { task: fixture.heldout, env: short, mirror: fixture.mirror, artifact, rules: fixture.profile.classification, scratch: fixture.scratch },
        silentLogger,
      );
    const withReference = (tail: string) =>
      submission(async (c) => {
        await git(["apply", "-"], { cwd: c, input: fixture.heldout.implementation_patch });
        append(c, CIRCLE, tail);
      });
    // A forged report and channel, then a hang: a timed-out run's results are never read.
    const forgedThenHung = await verifyShort(
      await submission((c) =>
        append(c, CIRCLE, `${WRONG}\nimport time\n${FORGE_JUNIT}\n${FORGE_CHANNEL}\n_forge_junit()\n_forge_channel()\ntime.sleep(100000)\n`),
      ),
    );
    expect(forgedThenHung).toMatchObject({ timed_out: true, resolved: false });
    // The reference fix, and a thread that never ends: pytest finishes, the process does not; that is a timeout.
    const lingering = await verifyShort(await withReference("\nimport threading, time\nthreading.Thread(target=lambda: time.sleep(100000)).start()\n"));
    expect(lingering).toMatchObject({ timed_out: true, resolved: false });
    // A grandchild in a session of its own, with a clean environment, holding the run's output open.
    const seconds = kind === "local" ? 100017 : 100018;
    const escaped = await verifyShort(
      await withReference(
        `\nimport os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.execve("/bin/sleep", ["sleep", "${seconds}"], {})\n    os._exit(0)\n`,
      ),
    );
    expect(escaped.applied).toBe(true);
    // Nothing the run started is left on this machine (a container's processes show here too).
    const left = readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8").includes(String(seconds));
        } catch {
          return false;
        }
      });
    expect(left).toEqual([]);
  });

  it(`rejects all ${ATTACKS.length} adversarial submissions`, async (ctx) => {
    if (!executor) return ctx.skip();
    expect(ATTACKS.length).toBeGreaterThanOrEqual(10);
    const resolved: string[] = [];
    for (const attack of ATTACKS) {
      const outcome = await verify(await attack.patch());
      if (outcome.resolved) resolved.push(attack.name);
      attack.expect(outcome);
    }
    expect(resolved).toEqual([]);
  });
});

describe("infrastructure faults in the verifier", () => {
  /** The local executor, failing its first `failures` test runs the way a dying engine does. */
  function flaky(failures: number): Executor & { artifacts: string[] } {
    const inner = new LocalExecutor(join(dir, "envs"), silentLogger);
    const seen: string[] = [];
    let left = failures;
    return {
      kind: "local",
      built: inner.built,
      buildSeconds: inner.buildSeconds,
      artifacts: seen,
      ensureEnvironment: (env, base) => inner.ensureEnvironment(env, base),
      pythonOffer: () => inner.pythonOffer(),
      async run(request) {
        seen.push(readFileSync(join(request.checkoutDir, CIRCLE), "utf8"));
        if (left-- > 0) throw new InfrastructureFault("the engine went away");
        return inner.run(request);
      },
    };
  }
  const verifyWith = (executor: Executor, artifact: string) =>
    verifyArtifact(
      executor,
      {
        task: fixture.heldout,
        env: fixture.env,
        mirror: fixture.mirror,
        artifact,
        rules: fixture.profile.classification,
        scratch: fixture.scratch,
        infrastructureBackoffMs: [0],
      },
      silentLogger,
    );

  it("re-runs the same frozen artifact after a fault and says how many re-runs it took", async () => {
    const executor = flaky(2);
    const outcome = await verifyWith(executor, fixture.heldout.implementation_patch);
    expect(outcome).toMatchObject({ resolved: true, infrastructure_retries: 2 });
    expect(outcome.infrastructure_fault).toBeUndefined();
    expect(new Set(executor.artifacts).size).toBe(1);
    expect(executor.artifacts).toHaveLength(3);
  });

  it("gives up after two re-runs and reports the fault, not a verdict on the submission", async () => {
    const outcome = await verifyWith(flaky(3), fixture.heldout.implementation_patch);
    expect(outcome).toMatchObject({ applied: true, resolved: false, infrastructure_retries: 2 });
    expect(outcome.infrastructure_fault).toMatch(/the engine went away \(after 2 retries\)/);
  });
});

describe("the oracle", () => {
  const check = (heldout: HeldoutTask) =>
    oracleTask(
      new LocalExecutor(join(dir, "envs"), silentLogger),
      { heldout, env: fixture.env, mirror: fixture.mirror, rules: fixture.profile.classification, runs: 2, scratch: fixture.scratch },
      silentLogger,
    );

  it("passes a task whose reference resolves in every run and whose empty patch never does", async () => {
    const record = await check(fixture.heldout);
    expect(record).toMatchObject({ task_id: TASK, passed: true, runs_per_patch: 2 });
    expect(record.runs.map((r) => [r.patch, r.run, r.resolved])).toEqual([
      ["reference", 0, true],
      ["reference", 1, true],
      ["empty", 0, false],
      ["empty", 1, false],
    ]);
  });

  it("rejects a task whose reference does not resolve under the verifier, naming the tests", async () => {
    // A reference patch that misses the precision argument: three of the four F2P tests pass.
    const partial = fixture.heldout.implementation_patch
      .replace("+    if precision is not None:\n+        result = round(result, precision)\n", "")
      .replace("@@ -3,3 +3,14 @@", "@@ -3,3 +3,12 @@");
    const record = await check({ ...fixture.heldout, implementation_patch: partial });
    expect(record.passed).toBe(false);
    expect(record.reject_reason).toBe("oracle_failed");
    expect(record.reject_detail).toMatch(
      /^the reference implementation does not resolve under the verifier \(run 1 of 2\): tests\/test_shapes_circle\.py::test_weigh_width_precision failed \(these tests passed in qualification/,
    );
    // The first contrary run decides; the empty patch is still checked.
    expect(record.runs.map((r) => r.patch)).toEqual(["reference", "empty", "empty"]);
  });

  it("rejects a task whose empty patch already resolves", async () => {
    const record = await check({ ...fixture.heldout, fail_to_pass: [`${TESTS}::test_circle_scale`], pass_to_pass: [] });
    expect(record.passed).toBe(false);
    expect(record.reject_detail).toMatch(/the empty patch resolves \(run 1 of 2\): every required test already passes without a fix/);
  });
});
