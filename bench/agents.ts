// Real agent harnesses on the demo, against the scripted model endpoint: each adapter of
// data/agents/ that installs a harness (Claude Code, Codex CLI, OpenCode, aider) is installed by
// its own install (switch-swe agents install), then run through every demo session in both
// conditions with the endpoint's `solve` script, then `idle` and `wrong-checkout`. It prints, per
// harness and script, the sessions resolved in each condition, failed requests, the runner's own
// seconds per request (what the benchmark adds to the harness's time) and the harness's seconds
// per request, and how the usage the harness reported compares with the endpoint's log (model
// calls, tool calls, tokens), so a README figure that says what a harness does not report is
// measured, not assumed.
// The environment adapters (claude-code-environment, ..., aider-environment) run the same way, in
// each session's focus task environment (a Docker engine needed); aider-environment installs
// aider there by its setup.
// With a harness's three adapters run with one script (opencode, opencode-router, opencode-rcm;
// claude-code, claude-code-router, claude-code-rcm and codex's, through the context relay), it
// prints their Table 3 (native, +Router, +RCM) and each context manager's auxiliary calls and
// tokens per request; the
// `distracted` script is a scripted simulation of a model that loses a task's earlier requirements
// when other tasks' requests lie between (pipeline/model-endpoint/scripts.ts), not a measured model.
// Usage: npm run bench:agents [-- --agents claude-code,codex --scripts solve,idle --sessions 4 --jobs 2]
//        npm run bench:agents -- --agents opencode,opencode-router,opencode-rcm --scripts distracted
//        npm run bench:agents -- --agents claude-code,claude-code-router,claude-code-rcm,codex,codex-router,codex-rcm --scripts distracted
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../pipeline/logger.ts";
import { benchmarkKnowledge } from "../pipeline/model-endpoint/knowledge.ts";
import type { ModelScript } from "../pipeline/model-endpoint/scripts.ts";
import { ModelEndpoint } from "../pipeline/model-endpoint/server.ts";
import { writeResultsReport } from "../pipeline/report/results.ts";
import { installAgent } from "../pipeline/session/install.ts";
import { DEFAULT_TOOLS_DIR, loadAgent } from "../pipeline/session/agents.ts";
import { runAllSessions } from "../pipeline/session/runs.ts";
import { builtDemo, runFigures } from "./demo-runs.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const agents = arg("agents", "claude-code,codex,opencode,aider").split(",");
const scripts = arg("scripts", "solve,idle,wrong-checkout").split(",") as ModelScript[];
const sessionLimit = Number(arg("sessions", "0"));
// Runs at a time: resolution and usage are the same at any number; seconds a request grow with the load.
const jobs = Number(arg("jobs", "1"));
if (!Number.isInteger(jobs) || jobs < 1) throw new Error(`--jobs: a whole number of runs at a time, 1 or more (given: ${arg("jobs", "1")})`);
const toolsDir = join(process.cwd(), DEFAULT_TOOLS_DIR);
const dir = mkdtempSync(join(tmpdir(), "switch-swe-bench-agents-"));
const log = createLogger({ level: "warn", write: (line) => process.stderr.write(line + "\n") });
try {
  const built = await builtDemo(dir, "local", log);
  const only = sessionLimit > 0 ? built.sessions.slice(0, sessionLimit) : built.sessions;
  const opened = built.open();
  const sessionsDir = opened.layout.sessionsDir;
  const knowledge = await benchmarkKnowledge(opened).finally(() => opened.close());
  console.log(`${only.length} demo sessions × 2 conditions; verification with the local executor; ${jobs} job(s); tools in ${toolsDir}`);
  for (const name of agents) {
    const agent = loadAgent(join("data", "agents", `${name}.yaml`));
    const installStarted = Date.now();
    if (agent.install) {
      const { installed } = await installAgent(agent, toolsDir);
      console.log(
        `${name} ${agent.install.version}: ${installed ? `installed in ${((Date.now() - installStarted) / 1000).toFixed(0)} s` : "already installed"}`,
      );
      // One installed in the environment by its own setup (aider-environment) has nothing to install here.
    } else console.log(`${name}: installed by its setup in each session's environment (${agent.setup.length} commands)`);
    for (const script of scripts) {
      const endpoint = await ModelEndpoint.start({ script, knowledge });
      try {
        const started = Date.now();
        const { ran, failed } = await runAllSessions(built.open(), {
          conditions: ["control", "switched"],
          agent,
          out: join(dir, "results", name, script),
          work: join(dir, "runs", name, script),
          jobs,
          log,
          only,
          model: { url: endpoint.url, key: "bench" },
          toolsDir,
        });
        const wall = (Date.now() - started) / 1000;
        const { requests, runner, agentSeconds, resolved } = runFigures(ran, join(dir, "results", name, script));
        const reported = ran.reduce(
          (t, r) => {
            const u = r.behaviour!.usage?.all;
            return {
              calls: t.calls === null || !u || u.model_calls === null ? null : t.calls + u.model_calls,
              tools: t.tools + (u?.tool_calls ?? 0),
              tokens: t.tokens + (u ? u.input_tokens + (u.cached_input_tokens ?? 0) + u.output_tokens : 0),
            };
          },
          { calls: 0 as number | null, tools: 0, tokens: 0 },
        );
        const answered = endpoint.calls.filter((c) => c.status === 200);
        const logged = {
          calls: answered.length,
          tools: answered.filter((c) => c.answer?.kind === "tool").length,
          tokens: answered.reduce((n, c) => n + c.usage!.input + c.usage!.cachedInput + c.usage!.output, 0),
        };
        const crossTask = ran.filter((r) => r.behaviour!.cross_task_write_requests > 0).map((r) => r.condition);
        // A context manager's own calls (plugins/rcm): routing and memory, per request.
        const auxiliary = (kind: string) => answered.filter((c) => c.body.includes(`switch-swe RCM: ${kind}`));
        const aux = [...auxiliary("task history router"), ...auxiliary("task state memory")];
        const auxTokens = aux.reduce((n, c) => n + c.usage!.input + c.usage!.cachedInput + c.usage!.output, 0);
        console.log(
          `  ${script}: ${ran.length} runs (${failed.length} failed to run), resolved control ${resolved("control")}/${only.length}, switched ${resolved("switched")}/${only.length}; ` +
            `failed requests ${ran.reduce((n, r) => n + r.behaviour!.failed_requests, 0)}; runs with cross-task writes: ${crossTask.length ? crossTask.join(", ") : "none"}; ` +
            `runner ${(runner / Math.max(1, requests)).toFixed(3)} s a request, harness ${(agentSeconds / Math.max(1, requests)).toFixed(2)} s a request, wall ${wall.toFixed(0)} s; ` +
            `harness reported / endpoint logged: model calls ${reported.calls ?? "not reported"} / ${logged.calls}, tool calls ${reported.tools} / ${logged.tools}, tokens ${reported.tokens} / ${logged.tokens}` +
            (aux.length
              ? `; auxiliary calls ${aux.length} (router ${auxiliary("task history router").length}, memory ${auxiliary("task state memory").length}): ${(aux.length / Math.max(1, requests)).toFixed(2)} a request, ${(auxTokens / Math.max(1, requests)).toFixed(0)} tokens a request (${((100 * auxTokens) / Math.max(1, logged.tokens)).toFixed(1)} % of all)`
              : ""),
        );
      } finally {
        await endpoint.close();
      }
    }
  }
  // Table 3 wherever a harness's native, +Router and +RCM adapters ran with the same script.
  for (const script of scripts)
    for (const harness of agents.filter((a) => agents.includes(`${a}-router`) && agents.includes(`${a}-rcm`))) {
      const names = [harness, `${harness}-router`, `${harness}-rcm`];
      const trio = names.map((name) => join(dir, "results", name, script));
      if (!trio.every((d) => existsSync(d))) continue;
      const results = join(dir, "table3", harness, script);
      mkdirSync(results, { recursive: true });
      trio.forEach((d, i) => symlinkSync(d, join(results, names[i]!)));
      const written = await writeResultsReport(results, sessionsDir, join(dir, "table3-report", harness, script));
      const markdown = readFileSync(written.files[0]!, "utf8");
      console.log(`\nTable 3, ${harness} (${script} script):\n${markdown.slice(markdown.indexOf("## Table 3"))}`);
    }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
