import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { git } from "../../pipeline/git.ts";
import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import { ClassificationRules, EnvironmentRecipe } from "../../pipeline/schemas/repo-profile.ts";
import { SplitChange } from "../../pipeline/schemas/split.ts";
import { splitReferenceChange } from "../../stages/split/split.ts";
import { GIT_IDENTITY } from "./git-repo.ts";

export const REPO = "o/r";
export const FOCUS = "o__r-7";
/** The environment every task of the history is qualified in: pytest, nothing of the repository installed (a root conftest.py puts it on the path). */
export const RECIPE = EnvironmentRecipe.parse({ python: "3.11", pip_requirements: ["pytest"] });

const MODULE = "def area(r):\n    return 3 * r * r\n";
const TESTS = "from pkg.shapes import area\n\n\ndef test_area():\n    assert area(1) == 3\n\n\ndef test_area_zero():\n    assert area(0) == 0\n";
const TRIM = "\n\ndef trim_span(a, b):\n    return (min(a, b), max(a, b))\n";
/** The focus's fix: a negative radius has no area, and a new function. */
const FIXED = "def area(r):\n    if r < 0:\n        return 0\n    return 3 * r * r\n" + TRIM;
const TRIM_TEST = "\n\ndef test_trim_span_basic():\n    from pkg.shapes import trim_span\n\n    assert trim_span(3, 1) == (1, 3)\n";
/** A test written after the focus's fix that relies on it without naming anything only the fix defines: it passes on a later base, not once the fix is reversed out. */
const NEGATIVE_TEST = "def test_area_negative():\n    assert area(-1) == 0\n\n\n";
/** A test written after the focus's fix right after the focus's own: the test file's reverse conflicts, and the focus's test is taken out instead. */
const ADJACENT_TEST = "\n\ndef test_area_one():\n    assert area(1) == 3\n";
const DOUBLE = "\n\ndef double(x):\n    return 2 * x\n";
const DOUBLE_TEST = "def test_double():\n    from pkg.other import double\n\n    assert double(2) == 4\n\n\n";

export interface HistoryTask {
  id: string;
  base: string;
  /** The task's whole change, as history holds it (a full-index diff). */
  diff: string;
  split: ReturnType<typeof splitReferenceChange>;
}

/**
 * A small repository whose history holds the answer rule's cases (SPEC §2.7): the focus `o__r-7`
 * (pull request #7: `area` of a negative radius is 0, a new `trim_span` and its test, merged by a
 * merge commit), and candidate
 * interruptions whose bases all come after that merge, so each holds the focus's answer:
 * - `o__r-11` adds `double` and its test; nothing of it needs the focus's fix;
 * - `o__r-12` adds `span`, which calls `trim_span`: without the fix its test cannot pass;
 * - `o__r-13`'s base has a module of its own that calls `trim_span`: reversing the fix leaves the name;
 * - `o__r-14`'s base rewrote `trim_span`'s lines: the fix does not reverse out;
 * - `o__r-15` is `o__r-11`'s change on a base with a later test of `area(-1)`, which needs the fix;
 * - `o__r-16` is `o__r-11`'s change on a base with a later test right after the focus's: its test
 *   file does not reverse, and the focus's test is taken out of it instead.
 * Fixed identities and dates: the same commit ids on every run.
 */
export async function answerHistory(dir: string) {
  const run = (args: string[]) => git(args, { cwd: dir, env: GIT_IDENTITY });
  const write = (changes: Record<string, string>) => {
    for (const [path, text] of Object.entries(changes)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
  };
  const commit = async (message: string) => {
    await run(["add", "--all"]);
    await run(["commit", "--quiet", "-m", message]);
    return (await run(["rev-parse", "HEAD"])).trim();
  };
  const diff = (from: string, to: string) => run(["diff", "--full-index", "--binary", from, to]);
  const task = async (id: string, base: string, change: (at: Record<string, string>) => Record<string, string>): Promise<HistoryTask> => {
    await run(["checkout", "--quiet", "-b", `task-${id}`, base]);
    const at = Object.fromEntries(
      await Promise.all(["pkg/shapes.py", "pkg/other.py", "tests/test_shapes.py"].map(async (p) => [p, await run(["show", `${base}:${p}`])])),
    );
    write(change(at));
    const head = await commit(`Change of ${id}`);
    const text = await diff(base, head);
    return { id, base, diff: text, split: splitReferenceChange(text, ClassificationRules.parse({})) };
  };

  await run(["init", "--quiet", "--initial-branch=main"]);
  write({ "conftest.py": "", "pkg/__init__.py": "", "pkg/shapes.py": MODULE, "pkg/other.py": "X = 1\n", "tests/test_shapes.py": TESTS });
  const base = await commit("base");
  await run(["checkout", "--quiet", "-b", "feature"]);
  write({ "pkg/shapes.py": FIXED });
  await commit("Add trim_span");
  write({ "tests/test_shapes.py": TESTS + TRIM_TEST });
  const head = await commit("Test trim_span");
  await run(["checkout", "--quiet", "main"]);
  write({ "pkg/other.py": "X = 2\n" });
  await commit("Unrelated change");
  await run(["merge", "--quiet", "--no-ff", "-m", "Merge pull request #7 from someone/feature", "feature"]);
  const merge = (await run(["rev-parse", "HEAD"])).trim();
  write({ "pkg/other.py": "X = 3\n" });
  const later = await commit("Later work");
  const focusDiff = await diff(base, head);
  const focus: HistoryTask = { id: FOCUS, base, diff: focusDiff, split: splitReferenceChange(focusDiff, ClassificationRules.parse({})) };

  const addDouble = (at: Record<string, string>) => ({
    "pkg/other.py": at["pkg/other.py"]! + DOUBLE,
    "tests/test_shapes.py": at["tests/test_shapes.py"]!.replace("\n\n\ndef test_area", `\n\n\n${DOUBLE_TEST}def test_area`),
  });
  const independent = await task("o__r-11", later, addDouble);
  const dependent = await task("o__r-12", later, (at) => ({
    "pkg/other.py": `from pkg.shapes import trim_span\n\n${at["pkg/other.py"]!}\n\ndef span(a, b):\n    return trim_span(a, b)\n`,
    "tests/test_other.py": "def test_span():\n    from pkg.other import span\n\n    assert span(3, 1) == (1, 3)\n",
  }));
  await run(["checkout", "--quiet", "main"]);
  write({ "pkg/util.py": "from pkg.shapes import trim_span\n\nSPAN = trim_span(2, 1)\n" });
  const withUser = await commit("A module that uses trim_span");
  const nameLeft = await task("o__r-13", withUser, addDouble);
  await run(["checkout", "--quiet", "--detach", later]);
  write({ "pkg/shapes.py": FIXED.replace("(min(a, b), max(a, b))", "tuple(sorted((a, b)))") });
  const rewrittenBase = await commit("Rewrite trim_span");
  const rewritten = await task("o__r-14", rewrittenBase, addDouble);
  await run(["checkout", "--quiet", "--detach", later]);
  write({ "tests/test_shapes.py": (TESTS + TRIM_TEST).replace("\n\n\ndef test_area", `\n\n\n${NEGATIVE_TEST}def test_area`) });
  const laterTestBase = await commit("A later test of a negative radius");
  const laterTest = await task("o__r-15", laterTestBase, addDouble);
  await run(["checkout", "--quiet", "--detach", later]);
  write({ "tests/test_shapes.py": TESTS + TRIM_TEST + ADJACENT_TEST });
  const adjacentTestBase = await commit("A later test right after trim_span's");
  const adjacentTest = await task("o__r-16", adjacentTestBase, addDouble);
  return {
    dir,
    gitDir: join(dir, ".git"),
    commits: { base, head, merge, later },
    focus,
    candidates: { independent, dependent, nameLeft, rewritten, laterTest, adjacentTest },
  };
}

export type AnswerHistory = Awaited<ReturnType<typeof answerHistory>>;

/** A task's held-out assets as the oracle writes them; the focus names its pull request and merge commit. */
export function heldoutOf(task: HistoryTask, sets: { fail_to_pass: string[]; pass_to_pass: string[] }, merged?: { pull: number; commit: string }): HeldoutTask {
  return HeldoutTask.parse({
    task_id: task.id,
    repo: REPO,
    base_commit: task.base,
    implementation_patch: task.split.implementationPatch,
    test_patch: task.split.testPatch,
    ...sets,
    test_command: "python -m pytest",
    environment: RECIPE,
    environment_as_of: null,
    upstream: { patch: task.diff, pull_number: merged?.pull ?? null, merge_commit: merged?.commit ?? null },
  });
}

/** A task's split record, as split writes it. */
export function splitOf(task: HistoryTask): SplitChange {
  return SplitChange.parse({
    task_id: task.id,
    repo: REPO,
    base_commit: task.base,
    implementation_patch: task.split.implementationPatch,
    test_patch: task.split.testPatch,
    files: task.split.files,
    source_files: task.split.sourceFiles,
    source_dirs: task.split.sourceDirs,
    excluded_files: task.split.excluded,
    classification: { profile: "o__r.json", profile_sha256: "0".repeat(64) },
    upstream_patch: task.diff,
    created_at: "2024-01-01T00:00:00Z",
  });
}
