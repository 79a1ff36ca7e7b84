// How long mine takes to stop, with its default settings (request time limit, retries, waits),
// when the GitHub API fails as it does in the world: it accepts connections and never answers
// (hang), sends headers and half a body then stalls (stall_body), or answers 502 to every request
// of a pull request (a run of 5xx across requests), at the default concurrency and at 1. Prints per
// fault the seconds to the stop, the requests the server saw against the REST requests the run's
// summary line counts, the seconds nothing was sent between the last request and the stop (a
// retry waiting out its backoff on an outage already declared shows here), and the message the run
// gave. The whole demo corpus is listed (50 pull requests over three repositories), so a retry
// ladder per request would show.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Fault } from "../demo/github-server.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { createLogger } from "../pipeline/logger.ts";
import { mineStage } from "../stages/mine/index.ts";
import { prepareDemoCopy } from "../test/helpers/demo-copy.ts";

const every502: Fault = { kind: "server_error", status: 502, count: 1_000_000, path: /\/pulls\/\d+\// };
const faults: Array<[string, Fault, Record<string, unknown>?]> = [
  ["hang (no answer)", { kind: "hang", count: 1_000_000 }],
  ["stalled body", { kind: "stall_body", count: 1_000_000 }],
  ["502 to every pull request's requests", every502],
  ["502 to every pull request's requests, concurrency 1", every502, { concurrency: 1 }],
];
const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-outage-"));
try {
  for (const [label, fault, mine] of faults) {
    // the demo config's own settings but GitHub's: default waits and time limits
    const demo = await prepareDemoCopy(join(dir, label.replace(/\W+/g, "-")), mine ? { mine } : {});
    demo.server.inject(fault);
    const lines: string[] = [];
    const log = createLogger({ level: "info", write: (line) => lines.push(line) });
    const started = performance.now();
    const summary = await runProjectOnce({ ...demo.options, stages: [mineStage], log });
    const ended = performance.now();
    await demo.server.stop();
    const fact =
      lines.find((l) => /accepts connections but does not answer|is failing|cannot be reached/.test(l)) ??
      lines.filter((l) => /transient_failure/.test(l))[0] ??
      "";
    const seen = demo.server.log;
    const rest = seen.filter((e) => e.path !== "/graphql").length;
    const counted = /GitHub requests sent \(each attempt of a retried one counted\): REST (\d+)/.exec(lines.join("\n"));
    const idle = seen.length ? (ended - Math.max(...seen.map((e) => e.received_ms))) / 1000 : (ended - started) / 1000;
    // the answer that made ten 5xx in a row (in the order the server saw them): the outage's declaration
    let run = 0;
    const tenth = seen.find((e) => (run = e.status >= 500 ? run + 1 : 0) >= 10);
    const afterFact = tenth ? `${((ended - tenth.received_ms) / 1000).toFixed(1)} s from the tenth 5xx in a row to the stop, ` : "";
    console.log(
      `${label}: stopped after ${((ended - started) / 1000).toFixed(1)} s (${summary.ok ? "finished?!" : summary.stages[0]!.status}), ` +
        `${seen.length} requests seen by the server (REST ${rest}), REST counted by the run ${counted ? counted[1] : "(no line)"}, ` +
        `${afterFact}${idle.toFixed(1)} s with nothing sent before the stop; ${fact.replace(/^.*?(the GitHub API)/, "$1").slice(0, 200)}`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
