// GitHub API requests per mined pull request over the demo corpus, cold and on re-runs.
// Targets (issue #5): at most 8 requests per PR cold for a PR with under 100 comments, and zero
// non-conditional requests on a re-run. Mining runs with concurrency 1 so each request can be
// attributed to the pull request being mined.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runPipeline } from "../pipeline/engine.ts";
import { mineStage } from "../stages/mine/index.ts";
import { prepareDemoCopy } from "../test/helpers/demo-copy.ts";

const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-mine-"));
try {
  const demo = await prepareDemoCopy(dir, { mine: { concurrency: 1 } });
  const options = { ...demo.options, stages: [mineStage] };
  const log = demo.server.log;

  const cold = await runPipeline(options);
  const prs = cold.stages[0]!.out;
  const coldLog = log.slice();
  // Attribute each request to the PR whose own endpoints were asked for most recently.
  const perPr = new Map<string, number>();
  let current = "(listing)";
  for (const entry of coldLog) {
    const own = /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)\//.exec(entry.path);
    if (own) current = `${own[1]}#${own[2]}`;
    perPr.set(current, (perPr.get(current) ?? 0) + 1);
  }
  const listing = perPr.get("(listing)") ?? 0;
  perPr.delete("(listing)");
  const counts = [...perPr.values()].sort((a, b) => a - b);

  const before = log.length;
  const rerun = await runPipeline(options);
  const plain = log.slice(before);
  const beforeForced = log.length;
  await runPipeline(options, { force: true });
  const forced = log.slice(beforeForced);
  await demo.server.stop();

  console.log(`pull requests mined: ${prs} (3 repositories)`);
  console.log(`cold: ${coldLog.length} requests = ${(coldLog.length / prs).toFixed(2)} per PR (listing ${listing}); per PR min ${counts[0]}, median ${counts[Math.floor(counts.length / 2)]}, max ${counts.at(-1)} (target max <= 8)`);
  console.log(`re-run, unchanged: ${plain.length} requests (stage ${rerun.stages[0]!.status.replaceAll("_", " ")})`);
  console.log(`re-run, --force: ${forced.length} requests, ${forced.filter((e) => !e.conditional).length} non-conditional (target 0), ${forced.filter((e) => e.status === 304).length} answered 304`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
