import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { readTestPatch } from "../../pipeline/changes/added-tests.ts";
import { git } from "../../pipeline/git.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { PipelineSettings } from "../../pipeline/engine/settings.ts";
import { runProjectOnce, type ProjectRun } from "../../pipeline/project/project.ts";
import type { Reject } from "../../pipeline/schemas/common.ts";
import type { QualificationRecord } from "../../pipeline/schemas/qualification.ts";
import { ClassificationRules } from "../../pipeline/schemas/repo-profile.ts";
import type { SplitChange } from "../../pipeline/schemas/split.ts";
import type { Task } from "../../pipeline/schemas/task.ts";
import { BUILT_STAGES } from "../../stages/index.ts";
import { extensionDecision } from "../../pipeline/qualification/extension-checks.ts";
import { withAuthoredStages } from "../../stages/reconstruct/authored.ts";
import { checkExtension, ExtensionError, parseExtension } from "../../stages/split/extensions.ts";
import { fileTempDir } from "../helpers/tmp.ts";
import { GIT_IDENTITY as IDENTITY } from "../helpers/git-repo.ts";

const rules = ClassificationRules.parse({ package_roots: ["calc"] });

const OPS = "def add(a, b):\n    return a + b\n";
const TESTS = "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
const SUB = `${OPS}\n\ndef sub(a, b):\n    return a - b\n`;
const SUB_TESTS = `${TESTS}\n\ndef test_sub():\n    from calc.ops import sub\n\n    assert sub(5, 3) == 2\n`;
const SUB3 = `${OPS}\n\ndef sub(a, b, c=0):\n    return a - b - c\n`;
const SUB3_TESTS = `${SUB_TESTS}\n\ndef test_sub_three():\n    from calc.ops import sub\n\n    assert sub(9, 3, 2) == 4\n`;
const MUL = `${SUB3}\n\ndef mul(a, b):\n    return a * b\n`;
// Tests stage 1's behaviour again, under another name: what a stage 2 must not pass off as its own tests.
const AGAIN_TESTS = `${SUB3_TESTS}\n\ndef test_sub_three_again():\n    from calc.ops import sub\n\n    assert sub(9, 3, 2) == 4\n`;
const MUL_TESTS = `${SUB3_TESTS}\n\nclass TestMul:\n    def test_mul(self):\n        from calc.ops import mul\n\n        assert mul(3, 4) == 12\n`;

/** A real repository: the base, and a diff between any two states of its two files. */
async function calcRepository(dir: string) {
  const run = (args: string[]) => git(args, { cwd: dir, env: IDENTITY });
  await run(["init", "--quiet", "--initial-branch=main"]);
  const write = (files: Record<string, string>) => {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
  };
  write({ "calc/__init__.py": "", "calc/ops.py": OPS, "tests/test_ops.py": TESTS });
  await run(["add", "--all"]);
  await run(["commit", "--quiet", "-m", "base"]);
  const base = (await run(["rev-parse", "HEAD"])).trim();
  const states = new Map<string, string>();
  const snapshot = async (name: string, files: Record<string, string>) => {
    write(files);
    await run(["add", "--all"]);
    await run(["commit", "--quiet", "--allow-empty", "-m", name]);
    states.set(name, (await run(["rev-parse", "HEAD"])).trim());
  };
  // Every state a diff is taken between; each commit is one state of the two files.
  await snapshot("sub", { "calc/ops.py": SUB, "tests/test_ops.py": TESTS });
  await snapshot("sub+tests", { "calc/ops.py": SUB, "tests/test_ops.py": SUB_TESTS });
  await snapshot("sub3", { "calc/ops.py": SUB3, "tests/test_ops.py": SUB_TESTS });
  await snapshot("sub3+tests", { "calc/ops.py": SUB3, "tests/test_ops.py": SUB3_TESTS });
  await snapshot("mul", { "calc/ops.py": MUL, "tests/test_ops.py": SUB3_TESTS });
  await snapshot("mul+tests", { "calc/ops.py": MUL, "tests/test_ops.py": MUL_TESTS });
  await snapshot("mul+again", { "calc/ops.py": MUL, "tests/test_ops.py": AGAIN_TESTS });
  const diff = async (from: string, to: string, path: string) =>
    run(["diff", "--full-index", from === "base" ? base : states.get(from)!, states.get(to)!, "--", path]);
  return { base, diff, states };
}

describe("reading an authored stage's test patch", () => {
  it("names the test functions it adds, in classes too, and the lines it removes", () => {
    const patch = [
      "diff --git a/tests/test_x.py b/tests/test_x.py",
      "--- a/tests/test_x.py",
      "+++ b/tests/test_x.py",
      "@@ -1,2 +1,13 @@ class TestOld:",
      "     def test_kept(self):",
      "-        assert old()",
      "+        assert new()",
      "+    def test_in_old_class(self):",
      "+        pass",
      "+",
      "+def test_top():",
      "+    def test_nested_helper():",
      "+        pass",
      "+async def test_async():",
      "+    pass",
      "+class TestNew:",
      "+    def test_method(self):",
      "+        pass",
      "",
    ].join("\n");
    const reading = readTestPatch(patch);
    expect(reading.added).toEqual([
      "tests/test_x.py::TestOld::test_in_old_class",
      "tests/test_x.py::test_top",
      "tests/test_x.py::test_async",
      "tests/test_x.py::TestNew::test_method",
    ]);
    expect(reading.removed).toEqual(["tests/test_x.py:         assert old()"]);
  });
});

describe("an extension file is checked before anything runs", () => {
  const file = (stages: unknown[], task = "acme__calc-1") => stringify({ task, author: "A. Maintainer", reason: "coverage", stages });
  const implementation = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1,2 @@\n x\n+y\n";
  const tests =
    "diff --git a/tests/test_ops.py b/tests/test_ops.py\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n@@ -1 +1,3 @@\n x\n+def test_y():\n+    pass\n";
  const check = (text: string, upstream: string[] = []) => {
    try {
      return checkExtension("ext/acme__calc-1.yaml", "acme__calc-1", parseExtension("ext/acme__calc-1.yaml", text), rules, upstream);
    } catch (error) {
      if (error instanceof ExtensionError) return `${error.field} | ${error.message}`;
      throw error;
    }
  };

  it("takes a valid file, with each stage's declared tests read from its patch", () => {
    const stages = check(file([{ request: "Also y.", implementation, tests }]));
    expect(stages).toMatchObject([{ index: 1, after: null, request: "Also y.", tests: ["tests/test_ops.py::test_y"], author: "A. Maintainer" }]);
  });

  it("names the file and field of every kind of mistake", () => {
    expect(check("task: [")).toMatch(/^\(file\) \| ext\/acme__calc-1\.yaml: not valid YAML/);
    expect(check(file([{ request: "Also y.", implementation, tests, extra: 1 }]))).toMatch(
      /^stages\.0\.extra \| ext\/acme__calc-1\.yaml: field stages\.0\.extra: unknown key/,
    );
    expect(check(file([{ request: "", implementation, tests }]))).toMatch(/field stages\.0\.request/);
    expect(check(file([{ request: "Also y.", implementation, tests }], "acme__calc-9"))).toMatch(
      /^task \| .*field task: names acme__calc-9, but the file is acme__calc-1's/,
    );
    expect(check(file([{ request: "Also y.", implementation: tests, tests }]))).toMatch(
      /^stages\.0\.implementation \| .*changes tests\/test_ops\.py, a test file; source changes go in implementation only/,
    );
    expect(check(file([{ request: "Also y.", implementation, tests: implementation }]))).toMatch(/^stages\.0\.tests \| .*changes calc\/ops\.py, a source file/);
    expect(check(file([{ request: "Also y.", implementation: "just words", tests }]))).toMatch(/^stages\.0\.implementation \| .*not a git diff/);
    const noTest = tests.replace("def test_y", "def helper_y");
    expect(check(file([{ request: "Also y.", implementation, tests: noTest }]))).toMatch(/^stages\.0\.tests \| .*adds no test function/);
    const rewrites = tests.replace("@@ -1 +1,3 @@\n x\n", "@@ -1 +1,3 @@\n-x\n+x2\n");
    expect(check(file([{ request: "Also y.", implementation, tests: rewrites }]))).toMatch(/^stages\.0\.tests \| .*removes or rewrites 1 line\(s\)/);
    expect(check(file([{ request: "Also y.", implementation, tests }]), ["tests/test_ops.py::test_y"])).toMatch(
      /adds tests\/test_ops\.py::test_y, which the upstream test patch already adds/,
    );
    expect(
      check(
        file([
          { after: 2, request: "a", implementation, tests },
          { after: 1, request: "b", implementation, tests },
        ]),
      ),
    ).toMatch(/^stages\.1\.after \| /);
  });
});

describe("qualify's stage-by-stage checks", () => {
  const sets = (f2p: string[], p2p: string[] = ["t::p"]) => ({
    designated: [...f2p, ...p2p].sort(),
    failToPass: f2p,
    passToPass: p2p,
    passToFail: [],
    failToFail: [],
    unstable: [],
  });
  const stages = [
    { index: 1, field: "stages.0", file: "e.yaml", tests: ["t::one"] },
    { index: 2, field: "stages.1", file: "e.yaml", tests: ["t::two"] },
  ];
  const run = (through: number, passing: string[], r = 0) => ({
    through,
    run: r,
    outcomes: Object.fromEntries(["t::up", "t::one", "t::two", "t::two[a]"].map((t) => [t, passing.includes(t) ? ("passed" as const) : ("failed" as const)])),
  });

  it("keeps a task whose stages fail until their own implementation and keep passing after it", () => {
    const decision = extensionDecision(stages, sets(["t::up", "t::one", "t::two"]), [
      run(0, ["t::up"]),
      run(1, ["t::up", "t::one"]),
      run(2, ["t::up", "t::one", "t::two"]),
    ]);
    expect(decision).toEqual({
      kept: true,
      stageTests: [
        { stage: 1, tests: ["t::one"] },
        { stage: 2, tests: ["t::two"] },
      ],
    });
  });

  it("takes a parametrized test's instances as the declared test", () => {
    const decision = extensionDecision(
      [stages[0]!, { index: 2, field: "stages.1", file: "e.yaml", tests: ["t::two"] }],
      sets(["t::up", "t::one", "t::two[a]"]),
      [run(0, ["t::up"]), run(1, ["t::up", "t::one"]), run(2, ["t::up", "t::one", "t::two[a]"])],
    );
    expect(decision).toMatchObject({ kept: true, stageTests: [{ stage: 1 }, { stage: 2, tests: ["t::two[a]"] }] });
  });

  it("rejects a test that passes before its stage, one not collected or not fail-to-pass, a later stage breaking an earlier one, and a task whose upstream has no F2P", () => {
    expect(extensionDecision(stages, sets(["t::up", "t::one", "t::two"]), [run(0, ["t::up"]), run(1, ["t::up", "t::one", "t::two"], 0)])).toEqual({
      kept: false,
      reason: "extension_test_passes_early",
      detail:
        "e.yaml: field stages.1.tests: t::two passes with the upstream fix and stages 1..1 (run 1), before this stage's implementation, so it does not check this stage's request",
    });
    expect(extensionDecision(stages, sets(["t::up", "t::one"], ["t::p", "t::two"]), [])).toMatchObject({
      reason: "extension_not_verified",
      detail: "e.yaml: field stages.1.tests: t::two is not fail-to-pass (it passes on the base already)",
    });
    expect(extensionDecision(stages, sets(["t::up", "t::one"]), [])).toMatchObject({
      reason: "extension_not_verified",
      detail: "e.yaml: field stages.1.tests: t::two was not collected in any run",
    });
    expect(extensionDecision(stages, sets(["t::up", "t::one", "t::two"]), [run(0, ["t::up"]), run(1, ["t::one"])])).toMatchObject({
      reason: "extension_breaks_earlier_stage",
      detail: expect.stringMatching(/^e\.yaml: field stages\.0\.implementation: t::up \(the upstream fix's\) fails with the upstream fix and stages 1\.\.1/),
    });
    // stage 2 undoes stage 1: its test passed with stage 1 and fails with the whole reference
    expect(
      extensionDecision(stages, { ...sets(["t::up", "t::two"], ["t::p", "t::one"]), passToPass: ["t::p"], failToFail: ["t::one"] }, [
        run(0, ["t::up"]),
        run(1, ["t::up", "t::one"]),
        run(2, ["t::up", "t::two"]),
      ]),
    ).toMatchObject({
      reason: "extension_breaks_earlier_stage",
      detail: expect.stringMatching(/^e\.yaml: field stages\.1\.implementation: t::one \(stage 1's\) fails with the upstream fix and stages 1\.\.2/),
    });
    expect(extensionDecision(stages, sets(["t::one", "t::two"]), [run(0, []), run(1, ["t::one"])])).toMatchObject({ reason: "no_fail_to_pass" });
  });
});

describe("authored stages among the upstream requests", () => {
  const upstream = [1, 2].map((stage) => ({
    stage,
    text: `upstream ${stage}`,
    provenance: { sources: [{ kind: "issue" as const, record_id: `i${stage}`, author: "u" }] },
  }));
  const stage = (index: number, after: number | null) => ({
    index,
    field: `stages.${index - 1}`,
    file: "ext/t.yaml",
    author: "A. Maintainer",
    reason: "coverage",
    after,
    request: `authored ${index}`,
    implementation_patch: "x",
    test_patch: "y",
    tests: [`t::s${index}`],
  });
  const stageTests = [1, 2].map((s) => ({ stage: s, tests: [`t::s${s}`] }));

  it("places each after its upstream stage (the last by default), with provenance authored and its tests", () => {
    const requests = withAuthoredStages("t", upstream, [stage(1, 1), stage(2, null)], stageTests);
    expect(requests.map((r) => [r.stage, r.text, r.tests ?? null])).toEqual([
      [1, "upstream 1", null],
      [2, "authored 1", ["t::s1"]],
      [3, "upstream 2", null],
      [4, "authored 2", ["t::s2"]],
    ]);
    expect(requests[1]!.provenance.sources).toEqual([
      { kind: "authored", record_id: "extension:ext/t.yaml#1", author: "A. Maintainer", file: "ext/t.yaml", reason: "coverage" },
    ]);
  });

  it("refuses a place past the upstream stages, naming the file and field", () => {
    expect(() => withAuthoredStages("t", upstream, [stage(1, 3)], stageTests)).toThrow(
      /ext\/t\.yaml: field stages\.0\.after: 3, but the task has 2 upstream stage\(s\)/,
    );
  });
});

describe("extensions through split, qualify and reconstruct, on a real repository with real pytest runs", () => {
  let dir: string;
  let splits: Map<string, SplitChange>;
  let qualifications: Map<string, QualificationRecord>;
  let tasks: Map<string, Task>;
  let rejects: Reject[];

  const readJsonl = <T>(path: string): T[] =>
    readFileSync(path, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as T);

  beforeAll(async () => {
    dir = fileTempDir();
    const repo = join(dir, "repo");
    mkdirSync(repo);
    const { base, diff, states } = await calcRepository(repo);
    const upstream = { patch: await diff("base", "sub", "calc/ops.py"), test_patch: await diff("sub", "sub+tests", "tests/test_ops.py") };
    const stage1 = {
      request: "sub also takes a third number and subtracts it too.",
      implementation: await diff("sub+tests", "sub3", "calc/ops.py"),
      tests: await diff("sub3", "sub3+tests", "tests/test_ops.py"),
    };
    const stage2 = {
      request: "Add mul(a, b), the product of two numbers.",
      implementation: await diff("sub3+tests", "mul", "calc/ops.py"),
      tests: await diff("mul", "mul+tests", "tests/test_ops.py"),
    };
    const record = (n: number) => ({
      instance_id: `acme__calc-${n}`,
      repo: "acme/calc",
      base_commit: base,
      ...upstream,
      problem_statement: "Add sub(a, b), the difference of two numbers.",
      FAIL_TO_PASS: JSON.stringify(["tests/test_ops.py::test_sub"]),
      PASS_TO_PASS: JSON.stringify(["tests/test_ops.py::test_add"]),
      version: "1.0",
      environment_setup_commit: base,
      created_at: "2024-01-01T00:00:00Z",
    });
    // 6 and 7: one pull request whose commits are sub (with its tests), then sub's third number (with its test).
    const wholePull = async (n: number) => ({
      ...record(n),
      patch: await diff("base", "sub3", "calc/ops.py"),
      test_patch: await diff("base", "sub3+tests", "tests/test_ops.py"),
    });
    writeFileSync(
      join(dir, "records.jsonl"),
      [...[1, 2, 3, 4, 5].map((n) => JSON.stringify(record(n))), JSON.stringify(await wholePull(6)), JSON.stringify(await wholePull(7))].join("\n") + "\n",
    );
    const extension = (n: number, stages: unknown[]) =>
      writeFileSync(
        join(dir, "extensions", `acme__calc-${n}.yaml`),
        stringify({ task: `acme__calc-${n}`, author: "A. Maintainer", reason: "the issue alone is one request", stages }),
      );
    mkdirSync(join(dir, "extensions"));
    // 1: two stages, each verified. 2: stage 2's tests already pass with stage 1 (they test stage 1 again).
    extension(1, [stage1, stage2]);
    extension(2, [stage1, { ...stage2, tests: await diff("mul", "mul+again", "tests/test_ops.py") }]);
    // 3: stage 2's implementation does not apply over stage 1's. 4: stage 2 adds no test.
    extension(3, [stage1, { ...stage2, implementation: stage2.implementation.replace("return a - b - c", "return a - b - c - 0") }]);
    extension(4, [stage1, { ...stage2, tests: stage2.tests.replaceAll("def test_mul", "def helper_mul") }]);
    // 5: stage 2 breaks stage 1's behaviour (sub ignores c again) while adding mul.
    const breaking = stage2.implementation.replace(
      " def sub(a, b, c=0):\n     return a - b - c\n",
      "-def sub(a, b, c=0):\n-    return a - b - c\n+def sub(a, b, c=0):\n+    return a - b\n",
    );
    extension(5, [stage1, { ...stage2, implementation: breaking }]);
    // 6: its pull request's second commit is a stage of its own (upstream code, a written request), then mul, authored.
    writeFileSync(
      join(dir, "extensions", "acme__calc-6.yaml"),
      stringify({
        task: "acme__calc-6",
        author: "A. Maintainer",
        reason: "the pull request's own second commit adds a behaviour and its test",
        upstream_commits: { first_stage_until: states.get("sub+tests"), stages: [{ commit: states.get("sub3+tests"), request: stage1.request }] },
        stages: [stage2],
      }),
    );
    // 7: a stage commit that comes before the first stage's end.
    writeFileSync(
      join(dir, "extensions", "acme__calc-7.yaml"),
      stringify({
        task: "acme__calc-7",
        author: "A. Maintainer",
        reason: "a cut out of order",
        upstream_commits: { first_stage_until: states.get("sub3+tests"), stages: [{ commit: states.get("sub+tests"), request: stage1.request }] },
      }),
    );
    mkdirSync(join(dir, "repos"));
    writeFileSync(
      join(dir, "repos", "acme__calc.json"),
      JSON.stringify({
        repo: "acme/calc",
        clone_url: "../repo",
        classification: { package_roots: ["calc"] },
        environment: { python: "3.11", pip_requirements: ["pytest"] },
      }),
    );
    const settings = PipelineSettings.parse({ profiles_dir: "repos", execution: { executor: "local", jobs: 2 } });
    const run: ProjectRun = {
      name: "extensions",
      seed: "1",
      workDir: join(dir, "work"),
      baseDir: dir,
      settings,
      stageConfigs: { mine: { swebench: ["records.jsonl"] }, split: { extensions_dir: "extensions" }, qualify: { runs: 2 } },
      stages: BUILT_STAGES,
      log: silentLogger,
    };
    for (const only of ["mine", "split", "qualify", "reconstruct"]) await runProjectOnce(run, { only: only as never });
    const artifacts = join(dir, "work", "artifacts");
    splits = new Map(readJsonl<SplitChange>(join(artifacts, "split", "splits.jsonl")).map((s) => [s.task_id, s]));
    qualifications = new Map(readJsonl<QualificationRecord>(join(artifacts, "qualify", "qualifications.jsonl")).map((q) => [q.task_id, q]));
    tasks = new Map(readJsonl<Task>(join(artifacts, "reconstruct", "tasks.jsonl")).map((t) => [t.id, t]));
    rejects = ["split", "qualify"].flatMap((stage) => readJsonl<Reject>(join(artifacts, stage, "rejects.jsonl")));
  }, 600_000);

  it("makes the reference the upstream change and every stage's, composed over the base", () => {
    const split = splits.get("acme__calc-1")!;
    expect(split.source_files).toEqual(["calc/ops.py"]);
    expect(split.implementation_patch).toContain("+def mul(a, b):");
    expect(split.implementation_patch).toContain("+def sub(a, b, c=0):");
    expect(split.test_patch).toContain("+class TestMul:");
    expect(split.upstream_implementation_patch).toContain("+def sub(a, b):");
    expect(split.extensions!.map((e) => e.tests)).toEqual([["tests/test_ops.py::test_sub_three"], ["tests/test_ops.py::TestMul::test_mul"]]);
  });

  it("qualifies each stage's tests as F2P, run in every state between, and places the authored stages with their tests", () => {
    const q = qualifications.get("acme__calc-1")!;
    expect(q.kept).toBe(true);
    expect(q.fail_to_pass).toEqual(["tests/test_ops.py::TestMul::test_mul", "tests/test_ops.py::test_sub", "tests/test_ops.py::test_sub_three"]);
    expect(q.runs.map((r) => `${r.state}${r.through ?? ""}`)).toEqual(["before", "before", "through0", "through0", "through1", "through1", "after", "after"]);
    expect(q.stage_tests).toEqual([
      { stage: 1, tests: ["tests/test_ops.py::test_sub_three"] },
      { stage: 2, tests: ["tests/test_ops.py::TestMul::test_mul"] },
    ]);
    const task = tasks.get("acme__calc-1")!;
    expect(task.requests.map((r) => [r.text, r.provenance.sources[0]!.kind, r.tests ?? []])).toEqual([
      ["Add sub(a, b), the difference of two numbers.", "issue", []],
      ["sub also takes a third number and subtracts it too.", "authored", ["tests/test_ops.py::test_sub_three"]],
      ["Add mul(a, b), the product of two numbers.", "authored", ["tests/test_ops.py::TestMul::test_mul"]],
    ]);
    expect(task.focus_candidate).toBe(true);
    expect(task.verifier.fail_to_pass).toEqual(q.fail_to_pass);
  });

  it("rejects each broken extension with its file and field, and loses nothing else of the run", () => {
    const why = new Map(rejects.map((r) => [r.record_id, `${r.reason}: ${r.message}`]));
    expect(why.get("acme__calc-2")).toMatch(
      /^extension_test_passes_early: acme__calc-2: extensions\/acme__calc-2\.yaml: field stages\.1\.tests: tests\/test_ops\.py::test_sub_three_again passes with the upstream fix and stages 1\.\.1/,
    );
    expect(why.get("acme__calc-3")).toMatch(
      /^patch_does_not_apply: acme__calc-3: extensions\/acme__calc-3\.yaml: field stages\.1\.implementation: does not apply/,
    );
    expect(why.get("acme__calc-4")).toMatch(/^invalid_extension: acme__calc-4: extensions\/acme__calc-4\.yaml: field stages\.1\.tests: adds no test function/);
    expect(why.get("acme__calc-5")).toMatch(
      /^extension_breaks_earlier_stage: acme__calc-5: extensions\/acme__calc-5\.yaml: field stages\.1\.implementation: tests\/test_ops\.py::test_sub_three \(stage 1's\) fails/,
    );
    expect(why.get("acme__calc-7")).toMatch(
      /^invalid_extension: acme__calc-7: extensions\/acme__calc-7\.yaml: field upstream_commits\.stages\.0\.commit: [0-9a-f]{40} does not come after the stage before it/,
    );
    expect([...tasks.keys()]).toEqual(["acme__calc-1", "acme__calc-6"]);
  });

  it("takes a stage from the pull request's own commits: upstream code and tests, a written request, provenance upstream_commit", () => {
    const split = splits.get("acme__calc-6")!;
    expect(split.extensions!.map((e) => [e.field, e.commit ?? null, e.tests])).toEqual([
      ["upstream_commits.stages.0", expect.stringMatching(/^[0-9a-f]{40}$/), ["tests/test_ops.py::test_sub_three"]],
      ["stages.0", null, ["tests/test_ops.py::TestMul::test_mul"]],
    ]);
    // The record's own request asks for the first commit's change alone; history holds the whole pull request.
    expect(split.upstream_implementation_patch).toContain("+def sub(a, b):");
    expect(split.upstream_implementation_patch).not.toContain("c=0");
    expect(split.upstream_patch).toContain("+def sub(a, b, c=0):");
    expect(split.upstream_patch).toContain("+def test_sub_three");
    expect(qualifications.get("acme__calc-6")!.kept).toBe(true);
    const task = tasks.get("acme__calc-6")!;
    expect(task.requests.map((r) => [r.provenance.sources[0]!.kind, r.tests ?? []])).toEqual([
      ["issue", []],
      ["upstream_commit", ["tests/test_ops.py::test_sub_three"]],
      ["authored", ["tests/test_ops.py::TestMul::test_mul"]],
    ]);
    expect(task.requests[1]!.provenance.sources[0]!.record_id).toBe(split.extensions![0]!.commit);
  });
});
