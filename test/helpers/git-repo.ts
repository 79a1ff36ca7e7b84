import { mkdirSync, writeFileSync, rmSync, chmodSync } from "node:fs";
import { dirname, join } from "node:path";
import { git } from "../../pipeline/git.ts";
import { tempDir } from "./tmp.ts";

/** A fixed author, committer and date: the same commits, and hashes, on every run. */
export const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: "T",
  GIT_AUTHOR_EMAIL: "t@t.invalid",
  GIT_COMMITTER_NAME: "T",
  GIT_COMMITTER_EMAIL: "t@t.invalid",
  GIT_AUTHOR_DATE: "2024-01-01T00:00:00Z",
  GIT_COMMITTER_DATE: "2024-01-01T00:00:00Z",
};

export type Change = string | Buffer | null | { rename: string } | { copyFrom: string } | { mode: "755" | "644" };

/** A real git repository with one base commit; `change` makes the reference commit and returns git's diff. */
export async function repoWithChange(
  initial: Record<string, string | Buffer>,
  changes: Record<string, Change>,
  diffArgs: string[] = ["-M", "-C", "--binary", "--full-index"],
) {
  const dir = tempDir("switch-swe-repo-");
  const run = (args: string[]) => git(args, { cwd: dir, env: GIT_IDENTITY });
  await run(["init", "--quiet", "--initial-branch=main"]);
  await run(["config", "core.autocrlf", "false"]);
  for (const [path, content] of Object.entries(initial)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  await run(["add", "--all"]);
  await run(["commit", "--quiet", "-m", "base"]);
  const base = (await run(["rev-parse", "HEAD"])).trim();
  for (const [path, change] of Object.entries(changes)) {
    const target = join(dir, path);
    if (change === null) rmSync(target);
    else if (typeof change === "string" || Buffer.isBuffer(change)) {
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, change);
    } else if ("rename" in change) {
      mkdirSync(dirname(join(dir, change.rename)), { recursive: true });
      await run(["mv", path, change.rename]);
    } else if ("copyFrom" in change) {
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, initial[change.copyFrom]!);
    } else chmodSync(target, change.mode === "755" ? 0o755 : 0o644);
  }
  await run(["add", "--all"]);
  await run(["commit", "--quiet", "-m", "change"]);
  const head = (await run(["rev-parse", "HEAD"])).trim();
  const diff = await run(["diff", ...diffArgs, base, head]);
  return { dir, base, head, diff, gitDir: join(dir, ".git") };
}
