// What the session-run benchmarks share: the demo built once into a directory, its benchmark's
// sessions, and the figures of a set of scored runs read from their reports and trajectories.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { OpenedBenchmark } from "../pipeline/project/benchmark.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import type { Logger } from "../pipeline/logger.ts";
import type { VerificationReport } from "../pipeline/schemas/verification.ts";
import { BUILT_STAGES } from "../stages/index.ts";
import { type DemoCopy, prepareDemoCopy, withExecution } from "../test/helpers/demo-copy.ts";

/** The demo pipeline run to its end in `dir` with `executor`; its benchmark opened anew by `open` (each run-all closes its own). */
export async function builtDemo(
  dir: string,
  executor: "docker" | "local",
  log: Logger,
): Promise<{ demo: DemoCopy; sessions: string[]; open: () => OpenedBenchmark }> {
  const demo = await prepareDemoCopy(dir);
  const built = await runProjectOnce(withExecution(demo.options, { executor })).finally(() => demo.server.stop());
  if (!built.ok) throw new Error("the demo pipeline did not finish");
  const open = () => OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor }, log });
  const sessions = open()
    .sessions()
    .map(({ spec }) => spec.session_id);
  return { demo, sessions, open };
}

/** A set of scored runs' figures: requests, the runner's seconds and the agent's own (from each trajectory), resolved runs per condition. */
export function runFigures(ran: VerificationReport[], resultsDir: string) {
  const requests = ran.reduce((n, r) => n + r.behaviour!.requests, 0);
  const runner = ran.reduce((n, r) => n + r.behaviour!.runner_seconds, 0);
  const agentSeconds = ran.reduce(
    (n, r) =>
      n +
      readFileSync(join(resultsDir, r.behaviour!.trajectory), "utf8")
        .split("\n")
        .filter(Boolean)
        .reduce((m, l) => m + (JSON.parse(l) as { seconds: number }).seconds, 0),
    0,
  );
  const resolved = (condition: string) => ran.filter((r) => r.condition === condition && r.resolved).length;
  return { requests, runner, agentSeconds, resolved };
}
