// GitHub API requests (REST and GraphQL together) per mined pull request over the demo corpus,
// cold and on re-runs. Targets (issues #5, #20): at most 8 requests per PR cold for a PR whose
// lists fit one page, and zero non-conditional requests on a re-run. Mining runs with concurrency
// 1 so each request can be attributed to the pull request being mined.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { requireFinished } from "../pipeline/engine/engine.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { FakeGithub } from "../demo/github-server.ts";
import { createGithubClient } from "../pipeline/github-client.ts";
import { silentLogger } from "../pipeline/logger.ts";
import { mineStage } from "../stages/mine/index.ts";
import { listMergedPulls } from "../stages/mine/listing.ts";
import { emptyRecords } from "../demo/records.ts";
import { prepareDemoCopy } from "../test/helpers/demo-copy.ts";

const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-mine-"));
try {
  const demo = await prepareDemoCopy(dir, { mine: { concurrency: 1 } });
  const options = { ...demo.options, stages: [mineStage] };
  const log = demo.server.log;

  const cold = await runProjectOnce(options);
  const prs = cold.stages[0]!.out;
  const coldLog = log.slice();
  // Attribute each request to the PR whose own endpoints were asked for most recently; a GraphQL
  // query names its PR in its variables.
  const perPr = new Map<string, { rest: number; graphql: number; entries: typeof coldLog }>();
  let current = "(listing)";
  for (const entry of coldLog) {
    const own = /^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)\//.exec(entry.path);
    if (own) current = `${own[1]}#${own[2]}`;
    const counts = perPr.get(current) ?? { rest: 0, graphql: 0, entries: [] };
    counts.entries.push(entry);
    if (entry.graphql) counts.graphql++;
    else counts.rest++;
    perPr.set(current, counts);
  }
  const listing = perPr.get("(listing)")?.rest ?? 0;
  perPr.delete("(listing)");
  const totals = [...perPr.entries()].map(([pr, c]) => ({ pr, total: c.rest + c.graphql, ...c })).sort((a, b) => a.total - b.total);
  const graphqlTotal = totals.reduce((n, t) => n + t.graphql, 0);
  const over = totals.filter((t) => t.total > 8);

  const before = log.length;
  const rerun = await runProjectOnce(options);
  const plain = log.slice(before);
  const beforeForced = log.length;
  requireFinished(await runProjectOnce(options, { force: true }), "bench/mine-requests.ts");
  const forced = log.slice(beforeForced);
  await demo.server.stop();

  const median = totals[Math.floor(totals.length / 2)]!.total;
  console.log(`pull requests mined: ${prs} (3 repositories)`);
  console.log(
    `cold: ${coldLog.length} requests = ${(coldLog.length / prs).toFixed(2)} per PR (REST ${coldLog.length - graphqlTotal}, of which listing ${listing}; GraphQL ${graphqlTotal}); per PR min ${totals[0]!.total}, median ${median}, max ${totals.at(-1)!.total} (target <= 8 where every list fits one page and every link is live)`,
  );
  for (const t of over) {
    const why = {
      "pages after the first": t.entries.filter((e) => /[?&]page=[2-9]/.test(e.path)).length,
      "301 (then the redirect)": t.entries.filter((e) => e.status === 301).length,
      "410": t.entries.filter((e) => e.status === 410).length,
    };
    console.log(
      `  over 8: ${t.pr} with ${t.total} (REST ${t.rest}, GraphQL ${t.graphql}); ${Object.entries(why)
        .filter(([, n]) => n)
        .map(([k, n]) => `${k}: ${n}`)
        .join(", ")}`,
    );
  }
  console.log(`re-run, unchanged: ${plain.length} requests (stage ${rerun.stages[0]!.status.replaceAll("_", " ")})`);
  console.log(
    `re-run, --force: ${forced.length} requests (${forced.filter((e) => e.graphql).length} GraphQL), ${forced.filter((e) => !e.conditional && !e.graphql).length} non-conditional REST (target 0), ${forced.filter((e) => e.status === 304).length} answered 304`,
  );
  await windowCost(dir);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * A creation-date window over a repository with a long history (5,000 closed pull requests, one
 * a day): pages of the pull-request list read for windows of several sizes and places, against
 * the pages of the whole list that reading it all (and filtering afterwards) costs.
 */
async function windowCost(dir: string): Promise<void> {
  const total = 5000;
  const start = Date.parse("2012-01-01T00:00:00Z");
  const at = (i: number) => new Date(start + i * 86_400_000).toISOString().replace(/\.\d{3}Z$/, "Z");
  const pulls = Object.fromEntries(
    Array.from({ length: total }, (_, i) => [
      String(i + 1),
      { number: i + 1, state: "closed", created_at: at(i), updated_at: at(i), merged_at: at(i), title: `pr ${i + 1}` },
    ]),
  );
  const recordsDir = join(dir, "long-history");
  rmSync(recordsDir, { recursive: true, force: true });
  await import("node:fs/promises").then((fs) => fs.mkdir(recordsDir, { recursive: true }));
  writeFileSync(join(recordsDir, "o__long.json"), JSON.stringify(emptyRecords({ id: 9, full_name: "o/long", name: "long" }, pulls)));
  const server = new FakeGithub({ recordsDir });
  const url = await server.start();
  const all = Math.ceil(total / 100);
  console.log(`date windows over ${total} closed pull requests (${all} pages of 100; listing them all costs ${all} pages):`);
  for (const [label, from, to] of [
    ["the last 30 days", total - 30, undefined],
    ["one year, in the middle", 2000, 2365],
    ["two years, in the middle", 1500, 2230],
    ["the first 90 days", 0, 90],
  ] as const) {
    const { octokit } = createGithubClient({ baseUrl: url, cacheDir: join(dir, `cache-${from}`), log: silentLogger, waitUnitMs: 1 });
    const before = server.log.length;
    const listed = await listMergedPulls(octokit, { repo: "o/long", since: at(from), ...(to !== undefined ? { until: at(to) } : {}) });
    console.log(
      `  ${label}: ${listed.pulls.length} pull requests, ${server.log.length - before} pages read (${((server.log.length - before) / all).toFixed(3)} of the whole list)`,
    );
  }
  await server.stop();
}
