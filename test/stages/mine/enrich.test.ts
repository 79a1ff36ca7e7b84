import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoCorpus } from "../../helpers/demo-corpus.ts";
import { runProjectOnce } from "../../../pipeline/project/project.ts";
import type { Candidate } from "../../../pipeline/schemas/candidate.ts";
import type { SplitChange } from "../../../pipeline/schemas/split.ts";
import { referenceLines } from "../../../pipeline/changes/reference-quotes.ts";
import { reconstructRequests } from "../../../stages/reconstruct/reconstruct.ts";
import { prepareDemoCopy, type DemoCopy } from "../../helpers/demo-copy.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../../data/demo/corpus.yaml", import.meta.url));
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
  async function importing(extra: Record<string, unknown> = {}, dir = tempDir()): Promise<DemoCopy> {
    const c = await prepareDemoCopy(dir, { corpusDir, mine: { repos: [], ...extra } });
    const stages = c.options.stageConfigs as Record<string, Record<string, unknown>>;
    stages.mine = { ...stages.mine, swebench: [join(corpusDir, "records.jsonl")] };
    return c;
  }

  beforeAll(async () => {
    corpusDir = fileTempDir();
    await demoCorpus(plan, corpusDir);
    // both kept for every test of the file
    mined = await prepareDemoCopy(fileTempDir(), { corpusDir });
    enriched = await importing({}, fileTempDir());
    for (const c of [mined, enriched]) expect((await runProjectOnce(c.options, { only: "mine" })).ok).toBe(true);
    for (const c of [mined, enriched]) await runProjectOnce(c.options, { only: "split" });
  });
  afterAll(async () => {
    for (const c of [mined, enriched, offline]) await c?.server.stop();
  });

  const requestsOf = (c: DemoCopy) => {
    const splits = new Map(read<SplitChange>(c, "split", "splits").map((s) => [s.task_id, s]));
    return new Map(
      read<Candidate>(c, "mine", "candidates")
        .filter((x) => splits.has(x.id))
        .map((x) => [x.id, reconstructRequests(x, referenceLines(splits.get(x.id)!.implementation_patch)).requests]),
    );
  };

  it("gives every imported record the requests of the same pull request mined from GitHub, review rounds included", () => {
    const fromGithub = requestsOf(mined);
    const fromRecords = requestsOf(enriched);
    expect([...fromRecords.keys()].sort()).toEqual([...fromGithub.keys()].sort());
    for (const [id, requests] of fromRecords) {
      const github = fromGithub.get(id)!;
      // the same texts, review rounds included: the demo's records state the issue (or the PR) word for word
      expect(
        requests.map((r) => [r.stage, r.text]),
        id,
      ).toEqual(github.map((r) => [r.stage, r.text]));
      expect(requests.slice(1), id).toEqual(github.slice(1));
      // stage 1 is the record's own statement; where GitHub's text came from is provenance beside it
      expect(requests[0]!.provenance.sources[0], id).toEqual({ kind: "issue", record_id: `${id}:problem_statement`, author: "unknown" });
      expect(
        requests[0]!.provenance.sources.slice(1).map((s) => s.record_id),
        id,
      ).toEqual(github[0]!.provenance.sources.map((s) => s.record_id));
    }
    const multi = [...fromRecords.values()].filter((r) => r.length >= 2).length;
    // most of the demo's pull requests have review rounds: without enrichment each would have one request
    expect(multi).toBeGreaterThan(fromRecords.size / 2);
    // the record's own base, patches and tests are kept
    const candidates = read<Candidate>(enriched, "mine", "candidates");
    expect(candidates.every((x) => x.source.kind === "swebench" && x.upstream_split && x.notes.some((n) => n.startsWith("enriched from GitHub")))).toBe(true);
  });

  it("keeps the record's own problem statement as stage 1 when its linked issue says something else now, and notes what enrichment added", async () => {
    const records = readFileSync(join(corpusDir, "records.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const withIssue = read<Candidate>(mined, "mine", "candidates").find((x) => x.issues.length && (x.pull_request?.discussion.length ?? 0) > 0)!;
    const edited = records.map((r) =>
      r.instance_id === withIssue.id ? { ...r, problem_statement: "The statement this record was qualified against, in words of its own." } : r,
    );
    const file = join(tempDir(), "edited.jsonl");
    writeFileSync(file, edited.map((r) => JSON.stringify(r)).join("\n") + "\n");
    const c = await prepareDemoCopy(tempDir(), { corpusDir, mine: { repos: [] } });
    try {
      const stages = c.options.stageConfigs as Record<string, Record<string, unknown>>;
      stages.mine = { ...stages.mine, swebench: [file] };
      expect((await runProjectOnce(c.options, { only: "mine" })).ok).toBe(true);
      await runProjectOnce(c.options, { only: "split" });
      const candidate = read<Candidate>(c, "mine", "candidates").find((x) => x.id === withIssue.id)!;
      expect(candidate.problem_statement).toBe("The statement this record was qualified against, in words of its own.");
      expect(candidate.notes.find((n) => n.startsWith("enriched from GitHub"))).toMatch(
        new RegExp(
          `linked issue\\(s\\) \\(${candidate.issues[0]!.repo}#${candidate.issues[0]!.number}.*: provenance of stage 1 only\\); stage 1 stays the record's own problem statement`,
        ),
      );
      const requests = requestsOf(c).get(withIssue.id)!;
      expect(requests[0]!.text).toBe("The statement this record was qualified against, in words of its own.");
      expect(requests[0]!.provenance.sources.map((s) => s.record_id)).toContain(`${candidate.issues[0]!.repo}#${candidate.issues[0]!.number}`);
      // its review rounds follow it, as GitHub has them
      expect(requests.length).toBe(requestsOf(mined).get(withIssue.id)!.length);
    } finally {
      await c.server.stop();
    }
  });

  it("without a token keeps each record's one request and says how many were not enriched and why", async () => {
    offline = await importing({ token_file: null });
    const lines: string[] = [];
    const log = { ...offline.options.log, warn: (m: string) => lines.push(m), child: () => log } as typeof offline.options.log;
    await runProjectOnce({ ...offline.options, log }, { only: "mine" });
    await runProjectOnce(offline.options, { only: "split" });
    expect(lines.some((l) => /62 SWE-bench-family record\(s\) not enriched from GitHub: no token/.test(l))).toBe(true);
    expect([...requestsOf(offline).values()].every((r) => r.length === 1)).toBe(true);
    // and no request was sent for them
    expect(offline.server.log).toEqual([]);
  });
});
