import { chmodSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { derivedCommit } from "../../../pipeline/checkouts/derived.ts";
import { git, GIT_ENV, GitError } from "../../../pipeline/git.ts";
import { GIT_IDENTITY, repoWithChange } from "../../helpers/git-repo.ts";
import { tempDir } from "../../helpers/tmp.ts";

/**
 * select caches a derived checkout's refusal as the pair's verdict (SPEC §2.7), so only git's own
 * verdict on the reverse may be one: a conflict, a patch it cannot read. A git killed in the
 * middle (here by a git on the PATH that kills itself for one subcommand) is thrown instead, for
 * the run to fail and try again. Real git otherwise.
 */
const REAL_GIT = "/usr/bin/git";
let faults: string;
let savedPath: string;

beforeEach(() => {
  faults = tempDir("switch-swe-git-faults-");
  const wrapper = join(faults, "git");
  writeFileSync(wrapper, `#!/bin/sh\nfor a in "$@"; do [ -e "${faults}/kill-$a" ] && kill -9 $$; done\nexec ${REAL_GIT} "$@"\n`);
  chmodSync(wrapper, 0o755);
  savedPath = GIT_ENV.PATH;
  GIT_ENV.PATH = `${faults}:${savedPath}`;
});
afterEach(() => {
  GIT_ENV.PATH = savedPath;
});
const killEvery = (subcommand: string) => writeFileSync(join(faults, `kill-${subcommand}`), "");

/** A reference changing a source line and a test, and a later base whose test file conflicts beside the reference's test. */
async function history() {
  const repo = await repoWithChange(
    { "pkg/m.py": "X = 1\n", "tests/test_a.py": "def test_one():\n    assert 1\n" },
    { "pkg/m.py": "X = 2\n", "tests/test_a.py": "def test_one():\n    assert 1\n\n\ndef test_new():\n    assert 2\n" },
  );
  writeFileSync(join(repo.dir, "tests/test_a.py"), "def test_one():\n    assert 1\n\n\ndef test_new():\n    assert 2\n\n\ndef test_later():\n    assert 3\n");
  await git(["commit", "--quiet", "-am", "later"], { cwd: repo.dir, env: GIT_IDENTITY });
  const later = (await git(["rev-parse", "HEAD"], { cwd: repo.dir })).trim();
  return { repo, later };
}

describe("a derived checkout when git fails", () => {
  it("takes the reference's test out when git answers, and throws when git apply or merge-file is killed", async () => {
    const { repo, later } = await history();
    const reversed = [{ taskId: "o__r-1", patch: repo.diff }];
    // The answer the fault must not replace: the test taken out, the source reversed.
    expect(await derivedCommit(repo.gitDir, later, reversed)).toMatchObject({ ok: true, removedTests: ["tests/test_a.py::test_new"] });

    killEvery("merge-file");
    const merge = derivedCommit(repo.gitDir, later, reversed);
    await expect(merge).rejects.toBeInstanceOf(GitError);
    await expect(merge).rejects.toMatchObject({ code: -1 });

    rmSync(join(faults, "kill-merge-file"));
    killEvery("apply");
    const apply = derivedCommit(repo.gitDir, later, reversed);
    await expect(apply).rejects.toBeInstanceOf(GitError);
    await expect(apply).rejects.toMatchObject({ args: expect.arrayContaining(["apply"]), code: -1 });
  });

  it("still refuses a reference git cannot read, naming the task", async () => {
    const { repo, later } = await history();
    const corrupt = repo.diff.replace(/@@ -1,2 \+1,(\d+) @@/, "@@ -1,9 +1,$1 @@");
    expect(corrupt).not.toBe(repo.diff);
    expect(await derivedCommit(repo.gitDir, later, [{ taskId: "o__r-1", patch: corrupt }])).toMatchObject({ ok: false, taskId: "o__r-1" });
  });
});
