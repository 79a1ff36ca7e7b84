import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildDemoCorpus } from "../../demo/build.ts";
import { runPipeline } from "../../pipeline/engine/engine.ts";
import type { Candidate } from "../../pipeline/schemas/candidate.ts";
import type { SplitChange } from "../../pipeline/schemas/split.ts";
import { addedLines } from "../../stages/reconstruct/clean.ts";
import { reconstructRequests } from "../../stages/reconstruct/reconstruct.ts";
import { prepareDemoCopy, type DemoCopy } from "../helpers/demo-copy.ts";
import { fileTempDir, tempDir } from "../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../data/demo/corpus.yaml", import.meta.url));
const read = <T>(c: DemoCopy, stage: string, name: string): T[] =>
  readFileSync(join(c.workDir, "artifacts", stage, `${name}.jsonl`), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);

// The demo corpus has both kinds of record for the same 50 pull requests: its SWE-bench-format
// records (records.jsonl) and its GitHub API. Imported records enriched from GitHub must give
// reconstruct the same requests as the pull requests mined from GitHub.
describe("SWE-bench-family records enriched from GitHub", () => {
  let corpusDir: string;
  let mined: DemoCopy;
  let enriched: DemoCopy;
  let offline: DemoCopy;

  /** A demo copy whose mine stage imports the corpus's SWE-bench records, with GitHub for enrichment only. */
  async function importing(extra: Record<string, unknown> = {}): Promise<DemoCopy> {
    const c = await prepareDemoCopy(tempDir(), { corpusDir, mine: { repos: [], ...extra } });
    const stages = c.options.stageConfigs as Record<string, Record<string, unknown>>;
    stages.mine = { ...stages.mine, swebench: [join(corpusDir, "records.jsonl")] };
    return c;
  }

  beforeAll(async () => {
    corpusDir = fileTempDir();
    await buildDemoCorpus(plan, corpusDir);
    mined = await prepareDemoCopy(tempDir(), { corpusDir });
    enriched = await importing();
    for (const c of [mined, enriched]) expect((await runPipeline(c.options, { only: "mine" })).ok).toBe(true);
    for (const c of [mined, enriched]) await runPipeline(c.options, { only: "split" });
  });
  afterAll(async () => {
    for (const c of [mined, enriched, offline]) await c?.server.stop();
  });

  const requestsOf = (c: DemoCopy) => {
    const splits = new Map(read<SplitChange>(c, "split", "splits").map((s) => [s.task_id, s]));
    return new Map(
      read<Candidate>(c, "mine", "candidates")
        .filter((x) => splits.has(x.id))
        .map((x) => [x.id, reconstructRequests(x, addedLines(splits.get(x.id)!.implementation_patch)).requests]),
    );
  };

  it("gives every imported record the requests of the same pull request mined from GitHub, review rounds included", () => {
    const fromGithub = requestsOf(mined);
    const fromRecords = requestsOf(enriched);
    expect([...fromRecords.keys()].sort()).toEqual([...fromGithub.keys()].sort());
    for (const [id, requests] of fromRecords) expect(requests, id).toEqual(fromGithub.get(id));
    const multi = [...fromRecords.values()].filter((r) => r.length >= 2).length;
    // most of the demo's pull requests have review rounds: without enrichment each would have one request
    expect(multi).toBeGreaterThan(fromRecords.size / 2);
    // the record's own base, patches and tests are kept
    const candidates = read<Candidate>(enriched, "mine", "candidates");
    expect(candidates.every((x) => x.source.kind === "swebench" && x.upstream_split && x.notes.some((n) => n.startsWith("enriched from GitHub")))).toBe(true);
  });

  it("without a token keeps each record's one request and says how many were not enriched and why", async () => {
    offline = await importing({ token_file: null });
    const lines: string[] = [];
    const log = { ...offline.options.log, warn: (m: string) => lines.push(m), child: () => log } as typeof offline.options.log;
    await runPipeline({ ...offline.options, log }, { only: "mine" });
    await runPipeline(offline.options, { only: "split" });
    expect(lines.some((l) => /50 SWE-bench-family record\(s\) not enriched from GitHub: no token/.test(l))).toBe(true);
    expect([...requestsOf(offline).values()].every((r) => r.length === 1)).toBe(true);
    // and no request was sent for them
    expect(offline.server.log).toEqual([]);
  });
});
