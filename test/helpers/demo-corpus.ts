import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { buildDemoCorpus, corpusStamp, type CorpusResult } from "../../demo/build.ts";

/**
 * A demo corpus in `outDir`, copied from one built once for every test file (and later test runs:
 * the directory is named by the plan and the generator, as the corpus's own stamp is). A build is
 * 10–20 s of git work and some twenty test files need a corpus; a copy takes a fraction of a second.
 * Built aside and renamed into place, so a file never sees half a corpus: when two files build at
 * once, the first rename wins and the other's build is dropped. test/demo/corpus.test.ts
 * builds its own, since the build is what it checks.
 */
export async function demoCorpus(planPath: string, outDir: string): Promise<CorpusResult> {
  const stamp = corpusStamp(readFileSync(planPath, "utf8"));
  // A corpus already there (a test's edited copy, say) is used as it is, as buildDemoCorpus would.
  const stampFile = join(outDir, "corpus.sha256");
  if (existsSync(stampFile) && readFileSync(stampFile, "utf8").trim() === stamp) return buildDemoCorpus(planPath, outDir);
  const shared = join(tmpdir(), "switch-swe-test-corpora", stamp);
  if (!existsSync(shared)) {
    mkdirSync(dirname(shared), { recursive: true });
    const building = mkdtempSync(`${shared}.building-`);
    try {
      await buildDemoCorpus(planPath, building);
      // mkdtemp's 0700 would pass to every copy's top directory; a built corpus's is 0755
      chmodSync(building, 0o755);
      renameSync(building, shared);
    } catch (error) {
      rmSync(building, { recursive: true, force: true });
      if (!existsSync(shared)) throw error;
    }
  }
  // A stale corpus's repositories and records go first, as buildDemoCorpus removes them before a build.
  for (const part of ["repos", "github"]) rmSync(join(outDir, part), { recursive: true, force: true });
  cpSync(shared, outDir, { recursive: true });
  // Finds the copied stamp equal to its own: nothing is rebuilt, and a stale copy would be.
  return buildDemoCorpus(planPath, outDir);
}
