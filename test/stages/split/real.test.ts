import { existsSync, readFileSync } from "node:fs";
import { sharedDataForTests } from "../../helpers/shared-data.ts";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { git } from "../../../pipeline/git.ts";
import { parseGitDiff } from "../../../pipeline/changes/diff.ts";
import { profileFileName } from "../../../pipeline/profiles/load.ts";
import { RepoProfile } from "../../../pipeline/schemas/repo-profile.ts";
import { splitReferenceChange } from "../../../stages/split/split.ts";
import { fileTempDir } from "../../helpers/tmp.ts";

const SHARED = fileURLToPath(new URL("../../../../shared/data/", import.meta.url));
const MIRRORS = join(SHARED, "mirrors");
const PROFILES = fileURLToPath(new URL("../../../data/repos/", import.meta.url));
/** The bundles' README: for these two, the squash commit's parent is not the record's base (SWE-bench took the PR branch's). */
const NOT_FROM_BASE = new Set(["pylint-dev__astroid-1268", "pylint-dev__astroid-1978"]);

interface SwebenchRecord {
  instance_id: string;
  repo: string;
  patch: string;
  test_patch: string;
}

/**
 * Each file's hunks (from its first `@@` on), by path. What may differ between two tools' diffs of
 * the same change does not count: how blob ids are abbreviated, and the function name a hunk
 * header quotes after its second `@@` (GitHub's and git's defaults pick it differently).
 */
const hunks = (diff: string) => new Map(parseGitDiff(diff).map((f) => [f.path, f.raw.slice(f.raw.indexOf("\n@@ ") + 1).replace(/^(@@ [^@]* @@).*$/gm, "$1")]));

// What a merged pull request looks like to the split stage when it is mined from GitHub: the whole
// base→merge diff, with whatever else the PR touched (changelog entries, AUTHORS, docs). Split with
// the shipped profile, it must give exactly SWE-bench's two patches, and the rest must go to neither.
describe.skipIf(!sharedDataForTests(MIRRORS))("split of real merged pull requests with the shipped profiles", () => {
  const cases: { id: string; record: SwebenchRecord; diff: string; profile: RepoProfile }[] = [];

  beforeAll(async () => {
    const records = readFileSync(join(SHARED, "swebench-lite-dev.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as SwebenchRecord);
    for (const bundle of ["marshmallow-code__marshmallow", "pylint-dev__astroid", "sqlfluff__sqlfluff"]) {
      const gitDir = join(fileTempDir(), `${bundle}.git`);
      await git(["clone", "--quiet", "--bare", join(MIRRORS, `${bundle}.bundle`), gitDir]);
      for (const record of records.filter((r) => r.repo === bundle.replace("__", "/") && !NOT_FROM_BASE.has(r.instance_id))) {
        const diff = await git([`--git-dir=${gitDir}`, "diff", "--binary", "--full-index", `base-${record.instance_id}`, `merged-${record.instance_id}`]);
        const profile = RepoProfile.parse(JSON.parse(readFileSync(join(PROFILES, profileFileName(record.repo)), "utf8")));
        cases.push({ id: record.instance_id, record, diff, profile });
      }
    }
  });

  it("gives every record's implementation and test patches exactly, and sends every other file of the PR to neither", () => {
    expect(cases.length).toBeGreaterThanOrEqual(5);
    const outcomes = cases.map(({ id, record, diff, profile }) => {
      const ours = splitReferenceChange(diff, profile.classification);
      const theirs = new Set([...hunks(record.patch).keys(), ...hunks(record.test_patch).keys()]);
      return {
        id,
        implementation:
          [...hunks(ours.implementationPatch)].every(([path, text]) => hunks(record.patch).get(path) === text) &&
          hunks(ours.implementationPatch).size === hunks(record.patch).size,
        tests:
          [...hunks(ours.testPatch)].every(([path, text]) => hunks(record.test_patch).get(path) === text) &&
          hunks(ours.testPatch).size === hunks(record.test_patch).size,
        // Files of the PR that SWE-bench's patches leave out, and where ours put them.
        extra: parseGitDiff(diff)
          .map((f) => f.path)
          .filter((p) => !theirs.has(p))
          .map((p) => `${p}: ${ours.excluded.some((e) => e.path === p) ? "neither" : "a patch"}`),
      };
    });
    expect(outcomes.filter((o) => !o.implementation || !o.tests || o.extra.some((e) => !e.endsWith(": neither")))).toEqual([]);
    // The PRs do carry such files (else the last check proves nothing).
    expect(outcomes.flatMap((o) => o.extra).length).toBeGreaterThan(0);
  });
});
