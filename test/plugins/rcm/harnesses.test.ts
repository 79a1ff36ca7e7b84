import { BUILT_STAGES } from "../../../stages/index.ts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { VerificationReport } from "../../../pipeline/schemas/verification.ts";
import { spawn } from "node:child_process";
import { SessionIndex } from "../../../pipeline/schemas/session.ts";
import { createLogger } from "../../../pipeline/logger.ts";
import { DEFAULT_TOOLS_DIR, loadAgent } from "../../../pipeline/session/agents.ts";
import { runAllSessions } from "../../../pipeline/session/runs.ts";
import { OpenedBenchmark } from "../../../pipeline/project/benchmark.ts";
import { ModelEndpoint, type EndpointCall } from "../../../pipeline/model-endpoint/server.ts";
import { benchmarkKnowledge } from "../../../pipeline/model-endpoint/knowledge.ts";
import { installAgent } from "../../../pipeline/session/install.ts";
import { tempDir } from "../../helpers/tmp.ts";
import { runDemo, usageInLog, type DemoRun } from "../../helpers/demo-published.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));

// The Resumption Context Manager with real harnesses (OpenCode with the plugin; Claude Code and
// Codex CLI through the relay) through a demo session against the model endpoint. On a copy of the
// test run's one demo run (test/helpers/demo-run.ts).
describe("the demo", () => {
  let a: DemoRun;
  beforeAll(async () => {
    a = await runDemo();
  });

  describe("the Resumption Context Manager (OpenCode with switch-swe's plugin; Claude Code and Codex CLI through its relay; installed by their adapters) against the model endpoint", () => {
    const quiet = createLogger({ level: "warn", write: () => {} });
    const toolsDir = join(root, DEFAULT_TOOLS_DIR);
    const bench = () => OpenedBenchmark.open(a.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: quiet });
    let session: string;
    let s: SessionSpec;
    beforeAll(async () => {
      for (const adapter of ["opencode-rcm", "claude-code-rcm", "codex-rcm"])
        await installAgent(loadAgent(join(root, "data", "agents", `${adapter}.yaml`)), toolsDir);
      const index = SessionIndex.parse(JSON.parse(a.published["sessions/index.json"]!));
      // The shortest switched schedule: every run goes through all of its requests with the real harness.
      const length = (file: string) => SessionSpec.parse(JSON.parse(a.published[`sessions/${file}`]!)).conditions.switched.length;
      const entry = [...index.sessions].sort((x, y) => length(x.file) - length(y.file) || x.session_id.localeCompare(y.session_id))[0]!;
      session = entry.session_id;
      s = SessionSpec.parse(JSON.parse(a.published[`sessions/${entry.file}`]!));
    }, 900_000);

    /** One switched run of the session with the `distracted` script (a scripted simulation: it drops a task's earlier requirements when other tasks' requests lie between). */
    async function runSwitched(adapter: string, dir: string, after?: (endpoint: ModelEndpoint, report: VerificationReport) => Promise<void>) {
      const b = bench();
      const knowledge = await benchmarkKnowledge(b).finally(() => b.close());
      const endpoint = await ModelEndpoint.start({ script: "distracted", knowledge });
      try {
        const { ran, failed } = await runAllSessions(bench(), {
          manifest: a.emitted,
          conditions: ["switched"],
          agent: loadAgent(join(root, "data", "agents", `${adapter}.yaml`)),
          out: join(dir, "results"),
          work: join(dir, "runs"),
          jobs: 1,
          log: quiet,
          only: [session],
          model: { url: endpoint.url, key: "test-key" },
          toolsDir,
        });
        expect(failed).toEqual([]);
        const calls = [...endpoint.calls];
        await after?.(endpoint, ran[0]!);
        return { report: ran[0]!, calls };
      } finally {
        await endpoint.close();
      }
    }
    const isAuxiliary = (c: EndpointCall) => /switch-swe RCM: (task history router|task state memory)/.test(c.body);
    /** The coding calls of every request that resumes the focus after other tasks' requests. */
    const focusReturns = (calls: EndpointCall[]) => {
      const schedule = s.conditions.switched;
      // A recognised request is named by task and stage (its index counts only what the context holds).
      const at = (c: EndpointCall) =>
        schedule.findIndex((r) => r.task_id === c.request!.task && r.stage === c.request!.stage && r.finalization === c.request!.finalization);
      return calls.filter((c) => {
        if (isAuxiliary(c) || !c.request || c.request.task !== s.focus) return false;
        const i = at(c);
        return i > 0 && schedule[i - 1]!.task_id !== s.focus;
      });
    };
    const otherTexts = () => s.conditions.switched.filter((r) => r.task_id !== s.focus).map((r) => JSON.stringify(r.message.text).slice(1, -1));
    /** The run resolved, and every focus return's context (in `protocol`, where given) held no other task's request, and the focus task's record or none. */
    const expectRouted = (report: VerificationReport, calls: EndpointCall[], expected: { record: boolean; protocol?: string }) => {
      expect(report.resolved).toBe(true);
      const returns = focusReturns(calls);
      expect(returns.length).toBeGreaterThan(0);
      for (const c of returns) {
        if (expected.protocol) expect(c.protocol).toBe(expected.protocol);
        for (const text of otherTexts()) expect(c.body).not.toContain(text);
        if (expected.record) expect(c.body).toContain("<task_state_record");
        else expect(c.body).not.toContain("<task_state_record");
      }
    };

    it("+RCM: every focus return's context holds the focus task's history and state record and no other task's interactions; the run resolves; its usage, auxiliary calls included, is the endpoint's", async () => {
      const dir = tempDir();
      const { report, calls } = await runSwitched("opencode-rcm", dir);
      expectRouted(report, calls, { record: true });
      // The memory was kept by auxiliary calls to the same endpoint, and they count in the run's usage.
      expect(calls.filter((c) => c.body.includes("switch-swe RCM: task state memory")).length).toBeGreaterThan(0);
      expect(report.behaviour!.usage!.all).toEqual(usageInLog(calls));
    }, 900_000);

    it("+Router: focus returns get the focus task's interactions only, without a record; a request naming nothing is routed with low confidence and gets the full history; the stored conversation keeps everything", async () => {
      const dir = tempDir();
      const { report, calls } = await runSwitched("opencode-router", dir, async (endpoint, done) => {
        // The same conversation, continued by hand with a request that names no checkout, file or symbol.
        const runDir = join(dir, "runs", `${session}.switched`);
        const home = join(runDir, "home");
        const agent = loadAgent(join(root, "data", "agents", "opencode-router.yaml"));
        const before = endpoint.calls.length;
        const opencode = join(toolsDir, "npm-opencode-ai-1.18.33", "node_modules", ".bin", "opencode");
        const env = {
          PATH: process.env.PATH ?? "",
          HOME: home,
          XDG_CONFIG_HOME: join(home, ".config"),
          XDG_DATA_HOME: join(home, ".local", "share"),
          XDG_CACHE_HOME: join(home, ".cache"),
          XDG_STATE_HOME: join(home, ".local", "state"),
          ...agent.constant_env,
          SWITCH_SWE_MODEL_KEY: "test-key",
          SWITCH_SWE_RCM_URL: `${endpoint.url}/v1`,
          SWITCH_SWE_RCM_MODEL: "scripted",
        };
        const child = spawn(opencode, ["run", "--format", "json", "--auto", "--session", done.behaviour!.conversation!], {
          cwd: join(runDir, "workspace"),
          env,
        });
        child.stdin.end("What do you think of all this?");
        child.stdout.resume();
        child.stderr.resume();
        expect(await new Promise((r) => child.on("close", r))).toBe(0);
        const later = endpoint.calls.slice(before);
        const routing = later.filter((c) => c.body.includes("switch-swe RCM: task history router"));
        expect(routing.map((c) => JSON.parse((c.answer as { text: string }).text).confidence)).toEqual([0.5]);
        // Below 0.8 the whole history goes: every task's requests are in the next coding call.
        const coding = later.filter((c) => !isAuxiliary(c));
        expect(coding.length).toBeGreaterThan(0);
        for (const text of otherTexts()) expect(coding[0]!.body).toContain(text);
        expect(coding[0]!.body).toContain("What do you think of all this?");
      });
      expectRouted(report, calls, { record: false });
      // Every request named its checkout: the router needed no model call of its own in the run.
      expect(calls.filter(isAuxiliary)).toEqual([]);
      expect(report.behaviour!.usage!.all).toEqual(usageInLog(calls));
    }, 900_000);

    it("Claude Code through the relay (+RCM, Anthropic Messages): every focus return's context holds the focus task's record and no other task's interactions; the run resolves; its usage, the relay's auxiliary calls included, is the endpoint's", async () => {
      const dir = tempDir();
      const { report, calls } = await runSwitched("claude-code-rcm", dir);
      expectRouted(report, calls, { record: true, protocol: "anthropic" });
      // The memory calls went to the same endpoint in Claude Code's own protocol, with its key.
      const memory = calls.filter((c) => c.body.includes("switch-swe RCM: task state memory"));
      expect(memory.length).toBeGreaterThan(0);
      expect(new Set(memory.map((c) => c.protocol))).toEqual(new Set(["anthropic"]));
      expect(report.behaviour!.usage!.all).toEqual(usageInLog(calls));
    }, 900_000);

    it("Codex CLI through the relay (+Router, OpenAI Responses): focus returns get the focus task's interactions only, without a record; the run resolves; its tokens and tool calls are the endpoint's (Codex says nothing of its model calls)", async () => {
      const dir = tempDir();
      const { report, calls } = await runSwitched("codex-router", dir);
      expectRouted(report, calls, { record: false, protocol: "responses" });
      expect(report.behaviour!.usage!.all).toEqual({ ...usageInLog(calls), model_calls: null });
    }, 900_000);

    it("Claude Code in the focus task's environment through the relay (+Router): the container reaches the relay on this machine as it would the endpoint; focus returns get the focus task's interactions only; usage is the endpoint's", async () => {
      const dir = tempDir();
      const { report, calls } = await runSwitched("claude-code-router-environment", dir);
      expectRouted(report, calls, { record: false });
      // Every working call was routed by the checkout its request names, with no call of the router's own.
      const decisions = readFileSync(join(dir, "runs", `${session}.switched`, "context-relay", "decisions.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { assignment: { by: string } });
      expect(decisions.length).toBeGreaterThan(0);
      expect(new Set(decisions.map((d) => d.assignment.by))).toEqual(new Set(["reference"]));
      expect(calls.filter(isAuxiliary)).toEqual([]);
      expect(report.behaviour!.usage!.all).toEqual(usageInLog(calls));
    }, 900_000);
  });
});
