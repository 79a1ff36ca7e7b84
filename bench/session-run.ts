// The session runner's own cost: every demo session, in both conditions, with each scripted agent
// (whose own time is ~0), so what remains is the runner (provisioning five checkouts, snapshots
// of all five after every request, bookkeeping) and the verification of the focus artifact.
// Goal (issue #19): the runner adds under 5 s per request on top of the agent's own time.
// With the Docker executor it also runs a command agent that does nothing (`true`) inside the
// focus task's environment (runs: environment): its requests' time is then the cost of one
// `docker exec`, and the runner's time includes starting and removing the container.
// Usage: npm run bench:session [-- --executor docker|local]   (default: local)
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAgent } from "../pipeline/session/agents.ts";
import { runAllSessions } from "../pipeline/session/runs.ts";
import { createLogger } from "../pipeline/logger.ts";
import { builtDemo, runFigures } from "./demo-runs.ts";

const executorArg = process.argv.indexOf("--executor");
const executor = (executorArg >= 0 ? process.argv[executorArg + 1] : "local") as "docker" | "local";
const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-session-"));
try {
  const log = createLogger({ level: "warn", write: (line) => process.stderr.write(line + "\n") });
  const built = await builtDemo(dir, executor, log);
  const sessions = built.sessions.length;
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
    const { ran, failed } = await runAllSessions(built.open(), {
      conditions: ["control", "switched"],
      agent,
      out: join(dir, "results", name),
      work: join(dir, "runs", name),
      jobs: 1,
      log,
    });
    const wall = (Date.now() - started) / 1000;
    const { requests, runner, agentSeconds, resolved } = runFigures(ran, join(dir, "results", name));
    console.log(
      `${name}: ${ran.length} runs (${failed.length} failed), resolved control ${resolved("control")}/${sessions}, switched ${resolved("switched")}/${sessions}; wall ${wall.toFixed(1)} s = ${(wall / ran.length).toFixed(2)} s a run; runner ${runner.toFixed(1)} s over ${requests} requests = ${(runner / requests).toFixed(3)} s a request (goal < 5 s); agent ${(agentSeconds / requests).toFixed(3)} s a request; verification and the rest ${((wall - runner - agentSeconds) / ran.length).toFixed(2)} s a run`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
