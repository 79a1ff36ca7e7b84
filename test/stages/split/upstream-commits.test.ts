import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { git } from "../../../pipeline/git.ts";
import { ClassificationRules } from "../../../pipeline/schemas/repo-profile.ts";
import { ExtensionError, parseExtension } from "../../../stages/split/extensions.ts";
import { upstreamCommitStages } from "../../../stages/split/upstream-commits.ts";
import { GIT_IDENTITY } from "../../helpers/git-repo.ts";
import { tempDir } from "../../helpers/tmp.ts";

const rules = ClassificationRules.parse({ package_roots: ["calc"] });

const OPS = "def add(a, b):\n    return a + b\n";
const TESTS = "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
const SUB = `${OPS}\n\ndef sub(a, b):\n    return a - b\n`;
const SUB_TESTS = `${TESTS}\n\ndef test_sub():\n    from calc.ops import sub\n\n    assert sub(5, 3) == 2\n`;
const SUB3 = `${OPS}\n\ndef sub(a, b, c=0):\n    return a - b - c\n`;
const SUB3_TESTS = `${SUB_TESTS}\n\ndef test_sub_three():\n    from calc.ops import sub\n\n    assert sub(9, 3, 2) == 4\n`;
// Another pull request's work on the main line: a module and its test the pull request never touched.
const UNITS = "def metres(km):\n    return km * 1000\n";
const UNITS_TESTS = "from calc.units import metres\n\n\ndef test_metres():\n    assert metres(2) == 2000\n";

/**
 * A pull request cut from main at the base: sub with its test, then (after main gained another
 * pull request's module and was merged into the branch) sub's third number with its test.
 */
async function pullRequestWithMainMerged() {
  const dir = tempDir("switch-swe-upstream-");
  const run = (args: string[]) => git(args, { cwd: dir, env: GIT_IDENTITY });
  const commit = async (message: string, files: Record<string, string>) => {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    await run(["add", "--all"]);
    await run(["commit", "--quiet", "-m", message]);
    return (await run(["rev-parse", "HEAD"])).trim();
  };
  await run(["init", "--quiet", "--initial-branch=main"]);
  const base = await commit("base", { "calc/__init__.py": "", "calc/ops.py": OPS, "tests/test_ops.py": TESTS });
  await run(["checkout", "--quiet", "-b", "pr"]);
  const sub = await commit("sub", { "calc/ops.py": SUB, "tests/test_ops.py": SUB_TESTS });
  await run(["checkout", "--quiet", "main"]);
  await commit("units", { "calc/units.py": UNITS, "tests/test_units.py": UNITS_TESTS });
  await run(["checkout", "--quiet", "pr"]);
  await run(["merge", "--quiet", "--no-edit", "main"]);
  const merge = (await run(["rev-parse", "HEAD"])).trim();
  const sub3 = await commit("sub3", { "calc/ops.py": SUB3, "tests/test_ops.py": SUB3_TESTS });
  return { dir, base, sub, merge, sub3, run };
}

const file = (firstStageUntil: string, commit: string) =>
  parseExtension(
    "extensions/acme__calc-1.yaml",
    [
      "task: acme__calc-1",
      "author: A. Maintainer",
      "reason: the pull request's second commit adds a behaviour and its test",
      "upstream_commits:",
      `  first_stage_until: ${firstStageUntil}`,
      "  stages:",
      `    - commit: ${commit}`,
      "      request: sub also takes a third number and subtracts it too.",
      "stages: []",
      "",
    ].join("\n"),
  );

describe("stages from a pull request's own commits", () => {
  it("refuses a stage whose commits include a merge of the main line: its change would hold another pull request's work", async () => {
    const { base, sub, merge, sub3, run } = await pullRequestWithMainMerged();
    const cut = upstreamCommitStages(run, "extensions/acme__calc-1.yaml", base, file(sub, sub3), rules);
    await expect(cut).rejects.toThrow(ExtensionError);
    await expect(cut).rejects.toThrow(
      `extensions/acme__calc-1.yaml: field upstream_commits.stages.0.commit: the commits up to ${sub3} include merge commit ${merge.slice(0, 12)}, which brings in changes that are not the pull request's own`,
    );
  });

  it("refuses a first stage whose commits include such a merge", async () => {
    const { base, merge, sub3, run } = await pullRequestWithMainMerged();
    await expect(upstreamCommitStages(run, "extensions/acme__calc-1.yaml", base, file(merge, sub3), rules)).rejects.toThrow(
      `extensions/acme__calc-1.yaml: field upstream_commits.first_stage_until: the commits up to ${merge} include merge commit ${merge.slice(0, 12)}, which brings in changes that are not the pull request's own`,
    );
  });

  it("cuts a pull request without merges at its commits: each stage is the pull request's own change", async () => {
    const { dir, base, sub, run } = await pullRequestWithMainMerged();
    // The same pull request had main not been merged into it: sub, then sub3 straight on top.
    await run(["checkout", "--quiet", "-b", "linear", sub]);
    writeFileSync(join(dir, "calc/ops.py"), SUB3);
    writeFileSync(join(dir, "tests/test_ops.py"), SUB3_TESTS);
    await run(["commit", "--quiet", "--all", "-m", "sub3"]);
    const sub3 = (await run(["rev-parse", "HEAD"])).trim();
    const cut = (await upstreamCommitStages(run, "extensions/acme__calc-1.yaml", base, file(sub, sub3), rules))!;
    expect(cut.stages.map((s) => [s.field, s.commit, s.tests])).toEqual([["upstream_commits.stages.0", sub3, ["tests/test_ops.py::test_sub_three"]]]);
    expect(cut.stages[0]!.implementation_patch).toContain("+def sub(a, b, c=0):");
    expect(cut.firstDiff).toContain("+def sub(a, b):");
    expect(cut.historyPatch).not.toContain("units");
  });
});
