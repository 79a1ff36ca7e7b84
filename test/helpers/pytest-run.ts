import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { git } from "../../pipeline/git.ts";
import { parseJunitXml } from "../../pipeline/test-results/junit.ts";

const run = promisify(execFile);

/** Runs the whole suite of `repoDir` at `commit` with the patches applied in order; returns status by node id. */
export async function pytestAt(repoDir: string, commit: string, patches: string[]): Promise<Map<string, string>> {
  const scratch = mkdtempSync(join(tmpdir(), "switch-swe-pytest-"));
  const work = join(scratch, "w");
  try {
    await git(["worktree", "add", "--detach", "--quiet", work, commit], { cwd: repoDir });
    for (const patch of patches) if (patch) await git(["apply", "--whitespace=nowarn", "-"], { cwd: work, input: patch });
    const junit = join(scratch, "report.xml");
    await run("python3", ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "-o", "xfail_strict=true", `--junitxml=${junit}`], {
      cwd: work,
    }).catch(() => undefined);
    return new Map(parseJunitXml(readFileSync(junit, "utf8")).map((r) => [r.nodeId, r.status]));
  } finally {
    await git(["worktree", "remove", "--force", work], { cwd: repoDir }).catch(() => undefined);
    rmSync(scratch, { recursive: true, force: true });
  }
}
