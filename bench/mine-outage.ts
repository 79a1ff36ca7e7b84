// How long mine takes to stop, with its default settings (request time limit, retries, waits),
// when the GitHub API fails as it does in the world: it accepts connections and never answers
// (hang), sends headers and half a body then stalls (stall_body), or answers 502 to every request
// of a pull request (a run of 5xx across requests). Prints per fault the seconds to the stop,
// the requests sent and the message the run gave. The whole demo corpus is listed (50 pull
// requests over three repositories), so a retry ladder per request would show.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Fault } from "../demo/github-server.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { createLogger } from "../pipeline/logger.ts";
import { mineStage } from "../stages/mine/index.ts";
import { prepareDemoCopy } from "../test/helpers/demo-copy.ts";

const faults: Array<[string, Fault]> = [
  ["hang (no answer)", { kind: "hang", count: 1_000_000 }],
  ["stalled body", { kind: "stall_body", count: 1_000_000 }],
  ["502 to every pull request's requests", { kind: "server_error", status: 502, count: 1_000_000, path: /\/pulls\/\d+\// }],
];
const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-outage-"));
try {
  for (const [label, fault] of faults) {
    // the demo config's own settings but GitHub's: default waits and time limits
    const demo = await prepareDemoCopy(join(dir, label.replace(/\W+/g, "-")));
    demo.server.inject(fault);
    const lines: string[] = [];
    const log = createLogger({ level: "info", write: (line) => lines.push(line) });
    const started = performance.now();
    const summary = await runProjectOnce({ ...demo.options, stages: [mineStage], log });
    const seconds = (performance.now() - started) / 1000;
    await demo.server.stop();
    const fact =
      lines.find((l) => /accepts connections but does not answer|is failing|cannot be reached/.test(l)) ??
      lines.filter((l) => /transient_failure/.test(l))[0] ??
      "";
    console.log(
      `${label}: stopped after ${seconds.toFixed(1)} s (${summary.ok ? "finished?!" : summary.stages[0]!.status}), ${demo.server.log.length} requests; ${fact.replace(/^.*?(the GitHub API)/, "$1").slice(0, 220)}`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
