// The session runner's own cost: every demo session, in both conditions, with each scripted agent
// (whose own time is ~0), so what remains is the runner (provisioning five checkouts, snapshots
// of all five after every request, bookkeeping) and the verification of the focus artifact.
// Goal (issue #19): the runner adds under 5 s per request on top of the agent's own time.
// With the Docker executor it also runs a command agent that does nothing (`true`) inside the
// focus task's environment (runs: environment): its requests' time is then the cost of one
// `docker exec`, and the runner's time includes starting and removing the container.
// Usage: npm run bench:session [-- --executor docker|local]   (default: local)
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAgent, runAllSessions } from "../pipeline/session/runs.ts";
import { OpenedBenchmark } from "../pipeline/project/benchmark.ts";
import { BUILT_STAGES } from "../stages/index.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { createLogger } from "../pipeline/logger.ts";
import { SessionIndex } from "../pipeline/schemas/session.ts";
import { prepareDemoCopy, withExecution } from "../test/helpers/demo-copy.ts";

const executorArg = process.argv.indexOf("--executor");
const executor = (executorArg >= 0 ? process.argv[executorArg + 1] : "local") as "docker" | "local";
const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-session-"));
try {
  const demo = await prepareDemoCopy(dir);
  const built = await runProjectOnce(withExecution(demo.options, { executor })).finally(() => demo.server.stop());
  if (!built.ok) throw new Error("the demo pipeline did not finish");
  const manifest = join(demo.workDir, "..", "..", "manifests", "demo");
  const sessions = SessionIndex.parse(JSON.parse(readFileSync(join(manifest, "sessions", "index.json"), "utf8"))).sessions.length;
  const log = createLogger({ level: "warn", write: (line) => process.stderr.write(line + "\n") });
  console.log(`${sessions} demo sessions × 2 conditions × 3 scripted agents, verification with the ${executor} executor, 1 job`);
  const agents = ["replay-reference", "noop", "wrong-checkout"].map((name) => join("data", "agents", `${name}.yaml`));
  if (executor === "docker") {
    const file = join(dir, "idle-in-environment.yaml");
    writeFileSync(file, 'name: idle-in-environment\nruns: environment\nnetwork: false\ncommand: ["true"]\n');
    agents.push(file);
  }
  for (const file of agents) {
    const agent = loadAgent(file);
    const name = agent.name;
    const started = Date.now();
    const { ran, failed } = await runAllSessions(OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor }, log: log }), {
      manifest,
      conditions: ["control", "switched"],
      agent,
      out: join(dir, "results", name),
      work: join(dir, "runs", name),
      jobs: 1,
      log,
    });
    const wall = (Date.now() - started) / 1000;
    const requests = ran.reduce((n, r) => n + r.behaviour!.requests, 0);
    const runner = ran.reduce((n, r) => n + r.behaviour!.runner_seconds, 0);
    // The agent's own time, as the trajectories record it (for `true` in the environment: docker exec's cost).
    const agentSeconds = ran.reduce(
      (n, r) =>
        n +
        readFileSync(join(dir, "results", name, r.behaviour!.trajectory), "utf8")
          .split("\n")
          .filter(Boolean)
          .reduce((m, l) => m + (JSON.parse(l) as { seconds: number }).seconds, 0),
      0,
    );
    const resolved = (condition: string) => ran.filter((r) => r.condition === condition && r.resolved).length;
    console.log(
      `${name}: ${ran.length} runs (${failed.length} failed), resolved control ${resolved("control")}/${sessions}, switched ${resolved("switched")}/${sessions}; wall ${wall.toFixed(1)} s = ${(wall / ran.length).toFixed(2)} s a run; runner ${runner.toFixed(1)} s over ${requests} requests = ${(runner / requests).toFixed(3)} s a request (goal < 5 s); agent ${(agentSeconds / requests).toFixed(3)} s a request; verification and the rest ${((wall - runner - agentSeconds) / ran.length).toFixed(2)} s a run`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
