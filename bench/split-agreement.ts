// Agreement with SWE-bench's own split: re-split each record's patch + test_patch combined and
// compare with the record's two patches (file sets and hunks). Usage:
//   npm run bench:split -- FILE.jsonl [--profiles data/repos]
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { loadProfiles } from "../pipeline/profiles/load.ts";
import { ClassificationRules } from "../pipeline/schemas/repo-profile.ts";
import { importSwebench } from "../stages/mine/swebench.ts";
import { parseGitDiff } from "../pipeline/changes/diff.ts";
import { splitReferenceChange } from "../stages/split/split.ts";

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith("--"));
const profilesDir = args.includes("--profiles") ? args[args.indexOf("--profiles") + 1]! : "data/repos";
if (!file) {
  console.error("usage: npm run bench:split -- FILE.jsonl [--profiles DIR]");
  process.exit(2);
}
const profileFiles = existsSync(profilesDir)
  ? readdirSync(profilesDir)
      .filter((f) => f.endsWith(".json"))
      .map((f) => ({ path: join(profilesDir, f), text: readFileSync(join(profilesDir, f), "utf8") }))
  : [];
const { profiles } = loadProfiles(profileFiles);
const { candidates, rejects } = importSwebench(file, readFileSync(file, "utf8"));
for (const r of rejects) console.log(`not imported: ${r.message}`);

/** Each file's section text by path, so hunks are compared byte for byte. */
const sections = (diff: string) => new Map(parseGitDiff(diff).map((f) => [f.path, f.raw]));
const same = (a: Map<string, string>, b: Map<string, string>) => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);

let strict = 0;
let byDesign = 0;
const disagreements: string[] = [];
for (const c of candidates) {
  const rules = profiles.get(c.repo)?.profile.classification ?? ClassificationRules.parse({});
  const ours = splitReferenceChange(c.reference_diff, rules);
  const theirsImpl = sections(c.upstream_split!.patch);
  const theirsTest = sections(c.upstream_split!.test_patch);
  const oursImpl = sections(ours.implementationPatch);
  const oursTest = sections(ours.testPatch);
  const testSame = same(oursTest, theirsTest);
  if (testSame && same(oursImpl, theirsImpl)) {
    strict++;
    continue;
  }
  // SWE-bench keeps docs and packaging files in `patch`; SPEC keeps them out of both patches.
  const all = sections(c.reference_diff);
  const excluded = new Map(ours.excluded.map((e) => [e.path, all.get(e.path)!]));
  const implPlusExcluded = new Map([...oursImpl, ...excluded]);
  if (testSame && same(implPlusExcluded, theirsImpl)) {
    byDesign++;
    disagreements.push(
      `${c.id}: by design: ${ours.excluded.map((e) => `${e.path} [${e.class}]`).join(", ")} kept out of the implementation patch (SWE-bench keeps it in 'patch')`,
    );
    continue;
  }
  const moved = ours.files
    .filter((f) => (theirsTest.has(f.path) ? f.class !== "test" : f.class === "test"))
    .map((f) => `${f.path}: ours ${f.class} (rule ${f.rule}), SWE-bench ${theirsTest.has(f.path) ? "test_patch" : "patch"}`);
  disagreements.push(`${c.id}: ${moved.join("; ") || "same files, different hunks"}`);
}
const n = candidates.length;
const pct = (x: number) => `${((100 * x) / n).toFixed(1)}%`;
console.log(
  `records: ${n} (${file}); profiles used: ${[...profiles.keys()].filter((r) => candidates.some((c) => c.repo === r)).join(", ") || "none (default rules)"}`,
);
console.log(`identical split (file sets and hunks): ${strict}/${n} = ${pct(strict)}`);
console.log(`identical once docs/other files, which SPEC keeps out of both patches, are added back: ${strict + byDesign}/${n} = ${pct(strict + byDesign)}`);
for (const d of disagreements) console.log(`  ${d}`);
