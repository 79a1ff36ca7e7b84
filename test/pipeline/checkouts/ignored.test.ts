import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { IGNORED_DIRS } from "../../../pipeline/checkouts/ignored.ts";
import { snapshot } from "../../../pipeline/checkouts/snapshot.ts";
import { git } from "../../../pipeline/git.ts";
import { collectCheckoutArtifact } from "../../../pipeline/verifier/collect.ts";
import { tempDir } from "../../helpers/tmp.ts";

const identity = { GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" };

describe("one list of ignored directories", () => {
  it("a snapshot reads none of the directories the collected artifact leaves out", async () => {
    const dir = tempDir();
    await git(["init", "--quiet", "-b", "main", dir]);
    writeFileSync(join(dir, "core.py"), "X = 1\n");
    await git(["add", "-A"], { cwd: dir });
    await git(["commit", "--quiet", "-m", "base"], { cwd: dir, env: identity });
    const base = (await git(["rev-parse", "HEAD"], { cwd: dir })).trim();
    const ignored = [...IGNORED_DIRS].filter((d) => d !== ".git");
    for (const name of ignored) {
      mkdirSync(join(dir, "pkg", name), { recursive: true });
      writeFileSync(join(dir, "pkg", name, "state.txt"), "tool state\n");
    }
    writeFileSync(join(dir, "pkg", "new.py"), "Y = 2\n");
    const seen = [...(await snapshot(dir)).keys()].sort();
    expect(seen).toEqual(["core.py", "pkg/new.py"]);
    const { excluded } = await collectCheckoutArtifact(dir, join(dir, ".git"), base, tempDir());
    expect(excluded.sort()).toEqual(ignored.map((name) => `pkg/${name}/`).sort());
  });
});
