import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import type { ExtendCheckReport } from "../../cli/extending/check.ts";
import { git } from "../../pipeline/git.ts";
import { ClassificationRules } from "../../pipeline/schemas/repo-profile.ts";
import type { SplitChange } from "../../pipeline/schemas/split.ts";
import { extensionSkeleton, pullRequestHistory, unfilledFields } from "../../stages/split/skeleton.ts";
import { runCli } from "../helpers/cli-in-process.ts";
import { demoRunCopy, type DemoRunCopy } from "../helpers/demo-run.ts";
import { GIT_IDENTITY } from "../helpers/git-repo.ts";
import { fileTempDir } from "../helpers/tmp.ts";

const TASK = "demo-org__ledger-27";

/** Every file under `dir`, by its path there, with its content's hash: what a check must leave as it was. */
function digest(dir: string): Record<string, string> {
  if (!existsSync(dir)) return {};
  return Object.fromEntries(
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => {
        const path = join(e.parentPath, e.name);
        return [relative(dir, path), createHash("sha256").update(readFileSync(path)).digest("hex")];
      })
      .sort(([a], [b]) => (a! < b! ? -1 : 1)),
  );
}

/**
 * A clone of the demo's ledger repository at the task's base with the whole reference applied (the
 * upstream fix and the shipped stage), for diffs of one more stage over it, made with git.
 */
async function stageMaker(demo: DemoRunCopy, split: SplitChange) {
  const dir = fileTempDir();
  const run = (args: string[], input?: string) => git(args, { cwd: dir, env: GIT_IDENTITY, ...(input === undefined ? {} : { input }) });
  await git(["clone", "--quiet", join(demo.workDir, "git", "demo-org__ledger.git"), dir]);
  await run(["checkout", "--quiet", split.base_commit]);
  await run(["apply", "-"], split.implementation_patch + split.test_patch);
  await run(["commit", "--quiet", "--all", "-m", "the reference and stage 1"]);
  const edit = (path: string, change: (text: string) => string) => writeFileSync(join(dir, path), change(readFileSync(join(dir, path), "utf8")));
  /** One more stage's diffs: the source and test files as `edits` leave them. */
  return async (edits: { source: (text: string) => string; tests: (text: string) => string }) => {
    edit("ledger/rates.py", edits.source);
    edit("ledger/tests/test_rates.py", edits.tests);
    const implementation = await run(["diff", "--", "ledger/rates.py"]);
    const tests = await run(["diff", "--", "ledger/tests/test_rates.py"]);
    await run(["checkout", "--quiet", "--", "."]);
    return { implementation, tests };
  };
}

const NEGATIVE = '        raise ValueError("split_fee needs a non-negative amount")\n';
const BOUNDS_CHECK = `${NEGATIVE}    if minimum is not None and maximum is not None and maximum < minimum:\n        raise ValueError("maximum must not be below minimum")\n`;
const BOUNDS_TEST = [
  "",
  "",
  "def test_split_fee_bounds_checked():",
  '    rates = importlib.import_module("ledger.rates")',
  '    with pytest.raises(ValueError, match="maximum must not be below minimum"):',
  "        rates.split_fee(10, minimum=5, maximum=1)",
  "",
].join("\n");

describe("extend check: one extension file of the demo, stage by stage", () => {
  let demo: DemoRunCopy;
  let shipped: { task: string; author: string; reason: string; stages: Record<string, unknown>[] };
  let makeStage: Awaited<ReturnType<typeof stageMaker>>;
  let cached: () => Record<string, string>;
  let before: Record<string, string>;

  /** Checks a file holding the shipped stage and `extra` after it, written where `name` says; the CLI's exit code and its answer. */
  const check = async (name: string, extra: Record<string, unknown>[]) => {
    const dir = join(demo.dir, "drafts", name);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${TASK}.yaml`);
    writeFileSync(file, stringify({ ...shipped, stages: [...shipped.stages, ...extra] }));
    const result = await runCli(["extend", "check", file, "-c", demo.configPath, "--executor", "local", "--json"]);
    expect(result.stderr, name).not.toMatch(/internal error/);
    return { file, code: result.code, report: JSON.parse(result.stdout) as ExtendCheckReport };
  };

  beforeAll(async () => {
    demo = await demoRunCopy();
    shipped = parse(readFileSync(join(demo.dir, "demo", "extensions", `${TASK}.yaml`), "utf8"));
    const splits = readFileSync(join(demo.workDir, "artifacts", "split", "splits.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean);
    const split = splits.map((l) => JSON.parse(l) as SplitChange).find((s) => s.task_id === TASK)!;
    makeStage = await stageMaker(demo, split);
    cached = () => ({ ...digest(join(demo.workDir, "artifacts")), ...digest(join(demo.workDir, "cache")) });
    before = cached();
  });

  it("passes the shipped file: every stage holds, exit 0", async () => {
    const result = await runCli(["extend", "check", join(demo.dir, "demo", "extensions", `${TASK}.yaml`), "-c", demo.configPath, "--executor", "local"]);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^ {2}stages\.0 {2}holds {2}\(tests: ledger\/tests\/test_rates\.py::test_split_fee_maximum\)$/m);
    expect(result.stdout).toMatch(/^every stage holds \(1 of 1\)$/m);
  });

  it("rejects a stage whose patch does not apply over the stages before it, naming file, stage and cause; the stage before it still runs", async () => {
    const stage = await makeStage({ source: (t) => t.replace(NEGATIVE, BOUNDS_CHECK), tests: (t) => t + BOUNDS_TEST });
    // Written over another version of the file: its context is not what the stages before it leave.
    const implementation = stage.implementation.replace("non-negative amount", "positive amount");
    const { file, code, report } = await check("does-not-apply", [
      { request: "`split_fee` refuses a `maximum` below its `minimum` with a ValueError.", ...stage, implementation },
    ]);
    expect(code).toBe(1);
    expect(report.stages.map((s) => [s.field, s.checked, s.problems.map((p) => p.cause)])).toEqual([
      ["stages.0", "all", []],
      ["stages.1", "file", ["patch_does_not_apply"]],
    ]);
    expect(report.stages[1]!.problems[0]!.message).toContain(
      `${file}: field stages.1.implementation: does not apply over the reference change and the stages before it`,
    );
  });

  it("rejects a test that passes before its stage's implementation", async () => {
    const stage = await makeStage({
      // A stage that changes nothing its test checks: a minimum and a maximum together already work.
      source: (t) =>
        t.replace(
          "def split_fee(amount, currency=None, fee=0, minimum=None, maximum=None):\n",
          (d) => `${d}    """A fee, bounded by minimum and maximum."""\n`,
        ),
      tests: (t) =>
        `${t}\n\ndef test_split_fee_minimum_and_maximum():\n    assert importlib.import_module("ledger.rates").split_fee(0, minimum=5, maximum=50) == 5\n`,
    });
    const { file, code, report } = await check("passes-early", [
      { request: "`split_fee` takes `minimum` and `maximum` together: `split_fee(0, minimum=5, maximum=50)` returns 5.", ...stage },
    ]);
    expect(code).toBe(1);
    expect(report.stages[0]).toMatchObject({ field: "stages.0", checked: "all", problems: [] });
    expect(report.stages[1]!.problems.map((p) => p.cause)).toContain("extension_test_passes_early");
    expect(report.stages[1]!.problems.find((p) => p.cause === "extension_test_passes_early")!.message).toMatch(
      new RegExp(
        `^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: field stages\\.1\\.tests: ledger/tests/test_rates\\.py::test_split_fee_minimum_and_maximum passes with the upstream fix and stages 1\\.\\.1`,
      ),
    );
  });

  it("rejects a stage with no test of its own", async () => {
    const stage = await makeStage({
      source: (t) => t.replace(NEGATIVE, BOUNDS_CHECK),
      tests: (t) => t + BOUNDS_TEST.replace("def test_split_fee_bounds_checked", "def check_split_fee_bounds"),
    });
    const { file, code, report } = await check("no-test", [{ request: "`split_fee` refuses a `maximum` below its `minimum` with a ValueError.", ...stage }]);
    expect(code).toBe(1);
    expect(report.stages.map((s) => [s.field, s.checked, s.problems.map((p) => p.cause)])).toEqual([
      ["stages.0", "all", []],
      ["stages.1", "file", ["invalid_extension"]],
    ]);
    expect(report.stages[1]!.problems[0]!.message).toContain(`${file}: field stages.1.tests: adds no test function`);
  });

  it("rejects a test that checks a message its request never states (the audit's hard check), and passes it once the request states it", async () => {
    const stage = await makeStage({ source: (t) => t.replace(NEGATIVE, BOUNDS_CHECK), tests: (t) => t + BOUNDS_TEST });
    const unstated = "`split_fee` refuses a `maximum` below its `minimum`: `split_fee(10, minimum=5, maximum=1)` raises ValueError.";
    const { file, code, report } = await check("unstated-message", [{ request: unstated, ...stage }]);
    expect(code).toBe(1);
    expect(report.stages[0]).toMatchObject({ checked: "all", problems: [] });
    expect(report.stages[1]).toMatchObject({ checked: "all", tests: ["ledger/tests/test_rates.py::test_split_fee_bounds_checked"] });
    expect(report.stages[1]!.problems.map((p) => p.cause)).toEqual(["exact_message"]);
    expect(report.stages[1]!.problems[0]!.message).toMatch(
      /: field stages\.1\.tests: exact_message: ledger\/tests\/test_rates\.py::test_split_fee_bounds_checked: asserts the message "maximum must not be below minimum", which the reference fix writes and no request states/,
    );
    expect(report.stages[1]!.problems[0]!.message.startsWith(file)).toBe(true);
    const stated = await check("stated-message", [{ request: `${unstated} Its message is "maximum must not be below minimum".`, ...stage }]);
    expect(stated.code, JSON.stringify(stated.report.stages)).toBe(0);
  });

  it("writes nothing the pipeline cached, and loses none of it", () => {
    expect(cached()).toEqual(before);
  });
});

describe("extend new: a skeleton from the task's record", () => {
  let demo: DemoRunCopy;

  beforeAll(async () => {
    demo = await demoRunCopy();
  });

  it("writes the skeleton with what an author needs, refuses to write over it, and extend check refuses it unfilled", async () => {
    const task = "demo-org__ledger-17";
    const path = join(demo.dir, "demo", "extensions", `${task}.yaml`);
    const made = await runCli(["extend", "new", task, "-c", demo.configPath]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toContain(`wrote ${path}`);
    const text = readFileSync(path, "utf8");
    const candidate = readFileSync(join(demo.workDir, "artifacts", "mine", "candidates.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { id: string; base_commit: string })
      .find((c) => c.id === task)!;
    expect(text).toContain(`# The task's base commit: ${candidate.base_commit}`);
    // its upstream fix's source files (C_t) and tests, its requests as reconstruct made them, the pull request's own commits
    expect(text).toMatch(/^# {3}ledger\/reports\/yearly\.py$/m);
    expect(text).toMatch(/^# {3}ledger\/tests\/test_accounts\.py::test_merge_fee_basic$/m);
    expect(text).toMatch(/^# The task's upstream requests as reconstruct made them/m);
    expect(text).toMatch(/^# The pull request's own commits \(#17, from refs\/pull\/17\/head\)/m);
    expect(text).toMatch(/^# {3}[0-9a-f]{12} {2}Address review: stage 2 {2}\[source: ledger\/accounts\.py/m);
    expect(parse(text)).toEqual({ task, author: "", reason: "", stages: [{ request: "", implementation: "", tests: "" }] });

    const again = await runCli(["extend", "new", task, "-c", demo.configPath]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/exists: extend new never writes over an extension file/);
    expect(readFileSync(path, "utf8")).toBe(text);

    const checked = await runCli(["extend", "check", path, "-c", demo.configPath, "--executor", "local"]);
    expect(checked.code).toBe(1);
    for (const field of ["author", "reason", "stages.0.request", "stages.0.implementation", "stages.0.tests"])
      expect(checked.stdout).toContain(`unfilled: ${path}: field ${field}: is empty: fill it in`);
    expect(checked.stdout).toMatch(/^0 of 1 stage\(s\) hold; the file does not$/m);

    const unknown = await runCli(["extend", "new", "demo-org__ledger-999", "-c", demo.configPath]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no task demo-org__ledger-999 among the records the config mined/);
  });
});

describe("the pull request's own commits, as the skeleton lists them", () => {
  it("are found at refs/pull/N/head, else at the merge commit's second parent, each with its source files and the tests it adds", async () => {
    const dir = fileTempDir();
    const run = (args: string[]) => git(args, { cwd: dir, env: GIT_IDENTITY });
    const write = (path: string, text: string) => {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    const commit = async (message: string) => {
      await run(["add", "--all"]);
      await run(["commit", "--quiet", "-m", message]);
      return (await run(["rev-parse", "HEAD"])).trim();
    };
    await run(["init", "--quiet", "--initial-branch=main"]);
    write("calc/ops.py", "def add(a, b):\n    return a + b\n");
    write("tests/test_ops.py", "from calc.ops import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n");
    const base = await commit("base");
    await run(["checkout", "--quiet", "-b", "feature"]);
    write("calc/ops.py", "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n");
    const first = await commit("Add sub");
    write(
      "tests/test_ops.py",
      "from calc.ops import add, sub\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n",
    );
    const second = await commit("Test sub");
    await run(["checkout", "--quiet", "main"]);
    await run(["merge", "--quiet", "--no-ff", "-m", "Merge pull request #5", "feature"]);
    const merge = (await run(["rev-parse", "HEAD"])).trim();
    const rules = ClassificationRules.parse({ package_roots: ["calc"] });
    const gitDir = (args: string[]) => git(args, { cwd: dir });
    const commits = [
      { sha: first, subject: "Add sub", sourceFiles: ["calc/ops.py"], tests: [] },
      { sha: second, subject: "Test sub", sourceFiles: [], tests: ["tests/test_ops.py::test_sub"] },
    ];
    expect(await pullRequestHistory(gitDir, base, { number: 5, mergeCommit: merge }, rules)).toEqual({
      number: 5,
      head: second,
      foundAt: `the second parent of merge commit ${merge.slice(0, 12)}`,
      commits,
    });
    await run(["update-ref", "refs/pull/5/head", second]);
    expect(await pullRequestHistory(gitDir, base, { number: 5, mergeCommit: null }, rules)).toMatchObject({ foundAt: "refs/pull/5/head", commits });
    expect(await pullRequestHistory(gitDir, base, { number: 6, mergeCommit: base }, rules)).toEqual({
      unavailable: `the repository holds no refs/pull/6/head and merge commit ${base.slice(0, 12)} has no second parent there`,
    });
    // Listed in a skeleton that parses, every field to fill left empty.
    const text = extensionSkeleton({
      taskId: "acme__calc-5",
      baseCommit: base,
      requests: ["Add sub."],
      requestsFrom: "problem statement",
      sourceFiles: ["calc/ops.py"],
      upstreamTests: [],
      history: await pullRequestHistory(gitDir, base, { number: 5, mergeCommit: merge }, rules),
      checkCommand: "switch-swe extend check acme__calc-5.yaml -c c.yaml",
    });
    expect(text).toContain(`#   ${second.slice(0, 12)}  Test sub  [no source file] [adds 1 test(s): test_sub]`);
    expect(unfilledFields("acme__calc-5.yaml", text).map((u) => u.field)).toEqual([
      "author",
      "reason",
      "stages.0.request",
      "stages.0.implementation",
      "stages.0.tests",
    ]);
    // The commented upstream_commits, uncommented as it stands, is unfilled too.
    const from = text.indexOf("# upstream_commits:");
    const block = text.slice(from, text.indexOf("\n#\n", from)).replace(/^# /gm, "");
    const uncommented = `task: acme__calc-5\nauthor: ""\nreason: ""\n${block}\n`;
    expect(unfilledFields("f.yaml", uncommented).map((u) => u.field)).toEqual([
      "author",
      "reason",
      "upstream_commits.first_stage_until",
      "upstream_commits.stages.0.commit",
      "upstream_commits.stages.0.request",
    ]);
  });
});
