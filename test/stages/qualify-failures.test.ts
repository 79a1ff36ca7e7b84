import { describe, expect, it } from "vitest";
import { environmentSpec } from "../../pipeline/executors/environment.ts";
import type { Executor, TestRunRequest, TestRunResult } from "../../pipeline/executors/types.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { EnvironmentRecipe } from "../../pipeline/schemas/repo-profile.ts";
import { RecordError } from "../../pipeline/engine/stage.ts";
import { qualificationRecord, qualifyTask, type QualifyTaskInput } from "../../pipeline/qualification/qualify-task.ts";
import { rerunInParts } from "../../pipeline/qualification/crash-reruns.ts";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const REPORT =
  '<testsuites><testsuite name="pytest" time="0.1"><testcase classname="tests.test_a" name="test_x" file="tests/test_a.py" time="0.01"/></testsuite></testsuites>';

/** An executor whose every run is answered by `answer` (given the request and how many came before), counting every run. */
function answering(answer: (request: TestRunRequest, before: number) => Partial<TestRunResult>): Executor & { runs: TestRunRequest[] } {
  const runs: TestRunRequest[] = [];
  return {
    kind: "local",
    built: [],
    buildSeconds: new Map(),
    runs,
    ensureEnvironment: async () => ({ built: false }),
    pythonOffer: async () => ({ installed: ["3.11"], downloads: false, describe: "a scripted executor" }),
    async run(request) {
      runs.push(request);
      return { timedOut: false, exitCode: 0, wallSeconds: 1, outputTail: "", ...answer(request, runs.length - 1) };
    },
  };
}

/** An executor whose runs give `results` in turn (the last one repeated), counting every run. */
const scripted = (results: Partial<TestRunResult>[]) => answering((_, before) => results[Math.min(before, results.length - 1)]!);

function task(saved: Map<string, string>): QualifyTaskInput {
  return {
    id: "o__r-1",
    baseCommit: "a".repeat(40),
    testPatch: "",
    implementationPatch: "",
    env: environmentSpec("o/r", EnvironmentRecipe.parse({ python: "3.11", test_timeout_seconds: 5 }), null),
    testArgs: ["tests/test_a.py"],
    runs: 2,
    checkout: async () => ({ dir: "/nonexistent", dispose: async () => undefined }),
    infrastructureBackoffMs: [0],
    saveLog: async (name, text) => {
      saved.set(name, text);
      return `/work/logs/qualify/${name}.log`;
    },
  };
}

async function rejection(promise: Promise<unknown>): Promise<RecordError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof RecordError) return error;
    throw error;
  }
  throw new Error("the task was qualified");
}

describe("a run that says nothing about the tests never becomes test outcomes", () => {
  it("a run cut off by its timeout is run again, and if it keeps timing out the task is not cached", async () => {
    const executor = scripted([{ timedOut: true, exitCode: -1, junitXml: REPORT }]);
    const error = await rejection(qualifyTask(executor, task(new Map()), silentLogger));
    expect(error.reason).toBe("timeout");
    expect(error.cacheable).toBe(false);
    // the first run and its two retries; the report a timed-out run left is never read
    expect(executor.runs).toHaveLength(3);
  });

  it("a timed-out run that succeeds when retried counts once, with its retry recorded", async () => {
    const executor = scripted([{ timedOut: true }, { junitXml: REPORT }]);
    const result = await qualifyTask(executor, task(new Map()), silentLogger);
    expect(result.runs.map((r) => [r.state, r.run, r.infrastructure_retries])).toEqual([
      ["before", 0, 1],
      ["before", 1, 0],
      ["after", 0, 0],
      ["after", 1, 0],
    ]);
    expect(result.runs.every((r) => r.outcomes["tests/test_a.py::test_x"] === "passed")).toBe(true);
  });

  it("a run that wrote no report is run_failed, with its whole log saved and named, and no outcome", async () => {
    const saved = new Map<string, string>();
    const output = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'simplejson'\n";
    const executor = scripted([{ exitCode: 1, outputTail: output }]);
    const error = await rejection(qualifyTask(executor, task(saved), silentLogger));
    expect(error.reason).toBe("run_failed");
    expect(error.message).toMatch(
      /before run 1 wrote no JUnit report \(exit 1\), so it has no test outcomes to read; its log: \/work\/logs\/qualify\/o__r-1\.before-1\.log: .*No module named 'simplejson'/,
    );
    expect(saved.get("o__r-1.before-1")).toBe(output);
    // Every run crashed and no run reported a test: the first was run again file by file, to no avail, and that ends it.
    expect(executor.runs.map((r) => r.tests)).toEqual(Array.from({ length: 5 }, () => ["tests/test_a.py"]));
  });

  it("pytest's INTERNALERROR or usage error is run_failed even when a report was written, when no run reports a test", async () => {
    for (const exitCode of [3, 4]) {
      const error = await rejection(
        qualifyTask(
          scripted([{ exitCode, junitXml: REPORT, outputTail: "INTERNALERROR> ValueError: Unknown config option: pytester_example_dir" }]),
          task(new Map()),
          silentLogger,
        ),
      );
      expect(error.reason).toBe("run_failed");
      expect(error.message).toMatch(exitCode === 3 ? /INTERNALERROR/ : /usage error/);
    }
  });
});

describe("a run that crashes the runner yields outcomes, not a lost task", () => {
  const PASSED = (ids: string[]) =>
    `<testsuites><testsuite name="pytest" time="0.1">${ids
      .map((id) => {
        const [file, name] = id.split("::") as [string, string];
        return `<testcase classname="${file.replace(/\.py$/, "").replaceAll("/", ".")}" name="${name}" file="${file}" time="0.01"/>`;
      })
      .join("")}</testsuite></testsuites>`;
  const X = "tests/test_a.py::test_x";
  const Y = "tests/test_a.py::test_y";
  const Z = "tests/test_b.py::test_z";

  /** Before the fix, running test_x crashes pytest (the bug is in what pytest reports); everything else passes. */
  function crashingBefore(): Executor & { runs: TestRunRequest[] } {
    return answering((request) => {
      const ids = request.tests.flatMap((t) => (t.includes("::") ? [t] : t === "tests/test_a.py" ? [X, Y] : [Z]));
      return request.checkoutDir.endsWith("before") && ids.includes(X)
        ? { exitCode: 3, outputTail: "INTERNALERROR> TypeError in saferepr", junitXml: PASSED([]) }
        : { junitXml: PASSED(ids) };
    });
  }

  it("re-runs the crashed run file by file, then the crashing file's tests one by one; the crashing test fails before", async () => {
    const executor = crashingBefore();
    const input: QualifyTaskInput = {
      ...task(new Map()),
      testArgs: ["tests/test_a.py", "tests/test_b.py"],
      runs: 1,
      checkout: async (patches) => ({ dir: patches.length > 1 ? "/checkouts/after" : "/checkouts/before", dispose: async () => undefined }),
    };
    const result = await qualifyTask(executor, input, silentLogger);
    expect(result.sets.failToPass).toEqual([X]);
    expect(result.sets.passToPass).toEqual([Y, Z]);
    const before = result.runs.find((r) => r.state === "before")!;
    expect(before.crashes).toEqual([{ target: X, reason: "ended in a pytest INTERNALERROR" }]);
    expect(executor.runs.map((r) => `${r.checkoutDir.split("/").pop()} ${r.tests.join(" ")}`)).toEqual([
      "before tests/test_a.py tests/test_b.py",
      "after tests/test_a.py tests/test_b.py",
      "before tests/test_a.py",
      `before ${X}`,
      `before ${Y}`,
      "before tests/test_b.py",
    ]);
  });

  it("a crashing file whose tests nobody knows counts its tests another run reports as failing there", async () => {
    const executor = crashingBefore();
    const input: QualifyTaskInput = {
      ...task(new Map()),
      testArgs: ["tests/test_a.py"],
      runs: 1,
      checkout: async (patches) => ({ dir: patches.length > 1 ? "/checkouts/after" : "/checkouts/before", dispose: async () => undefined }),
    };
    // Known ids come from the after state's run: test_x alone crashes, test_y alone passes.
    const result = await qualifyTask(executor, input, silentLogger);
    expect(result.sets.failToPass).toEqual([X]);
    expect(result.sets.passToPass).toEqual([Y]);
  });
});

describe("a crashing file's tests are halved, not run one by one", () => {
  it("settles 64 known tests with one crashing among them in a few runs, each other test with its own outcome", async () => {
    const ids = Array.from({ length: 64 }, (_, i) => `tests/test_a.py::test_${String(i).padStart(2, "0")}`);
    const bad = ids[37]!;
    const runs: string[][] = [];
    const report = (list: string[]) =>
      `<testsuites><testsuite name="pytest">${list.map((id) => `<testcase classname="tests.test_a" name="${id.split("::")[1]}" file="tests/test_a.py" time="0.01"/>`).join("")}</testsuite></testsuites>`;
    const result = await rerunInParts(["tests/test_a.py"], ids, {
      runner: "pytest",
      python: "3.11",
      run: async (tests) => {
        runs.push(tests);
        const expanded = tests.flatMap((t) => (t.includes("::") ? [t] : ids));
        return expanded.includes(bad)
          ? { timedOut: false, exitCode: 3, wallSeconds: 1, outputTail: "INTERNALERROR>", junitXml: report([]) }
          : { timedOut: false, exitCode: 0, wallSeconds: 1, outputTail: "", junitXml: report(expanded) };
      },
    });
    expect(result.crashes).toEqual([{ target: bad, reason: "ended in a pytest INTERNALERROR" }]);
    expect(Object.entries(result.outcomes).filter(([, s]) => s !== "passed")).toEqual([[bad, "failed"]]);
    expect(Object.keys(result.outcomes)).toHaveLength(64);
    // the file, then two halves at each of six levels: 13 runs, where one by one would take 65
    expect(runs.length).toBe(13);
  });
});

describe("the qualification record says what the environment let past its date or raised, and why", () => {
  it("names the checkout's exact pins let past the as-of date and the Python floors that raised a package", async () => {
    const dir = mkdtempSync(join(tmpdir(), "switch-swe-pins-"));
    writeFileSync(join(dir, "requirements_test_min.txt"), "astroid==2.12.2\npytest>=7\n");
    const floor = { python: "3.9", package: "hypothesis", version: "4.18.2", released: "2019-04-30T01:30:00Z", why: "crashes on 3.8+ before" };
    const input: QualifyTaskInput = {
      ...task(new Map()),
      runs: 1,
      env: environmentSpec(
        "o/r",
        EnvironmentRecipe.parse({ python: "3.9", requirements_files: ["requirements_test_min.txt"], python_floors: [floor] }),
        "2019-04-01T00:00:00Z",
      ),
      checkout: async () => ({ dir, dispose: async () => undefined }),
    };
    const record = qualificationRecord(input, "local", await qualifyTask(scripted([{ junitXml: REPORT }]), input, silentLogger));
    expect(record.let_past_as_of).toEqual([
      {
        package: "astroid",
        version: "2.12.2",
        file: "requirements_test_min.txt",
        why: "pinned exactly in requirements_test_min.txt, the checkout's own requirements",
      },
    ]);
    expect(record.raised_for_python).toEqual([{ package: "hypothesis", to: ">=4.18.2", python: "3.9", why: "crashes on 3.8+ before" }]);
    // an environment with nothing let past or raised says nothing of either
    const plain = { ...input, env: environmentSpec("o/r", EnvironmentRecipe.parse({ python: "3.9" }), "2019-04-01T00:00:00Z") };
    const quiet = qualificationRecord(plain, "local", await qualifyTask(scripted([{ junitXml: REPORT }]), plain, silentLogger));
    expect("let_past_as_of" in quiet || "raised_for_python" in quiet).toBe(false);
  });
});
