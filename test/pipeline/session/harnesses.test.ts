import { BUILT_STAGES } from "../../../stages/index.ts";
import { mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { VerificationReport } from "../../../pipeline/schemas/verification.ts";
import { runCli } from "../../helpers/cli-in-process.ts";
import { existsSync } from "node:fs";
import { basename } from "node:path";
import { SessionIndex } from "../../../pipeline/schemas/session.ts";
import { createLogger } from "../../../pipeline/logger.ts";
import { DEFAULT_TOOLS_DIR, loadAgent } from "../../../pipeline/session/agents.ts";
import { runAllSessions, runAndScoreSession } from "../../../pipeline/session/runs.ts";
import { OpenedBenchmark } from "../../../pipeline/project/benchmark.ts";
import { ModelEndpoint } from "../../../pipeline/model-endpoint/server.ts";
import { benchmarkKnowledge } from "../../../pipeline/model-endpoint/knowledge.ts";
import type { ModelScript } from "../../../pipeline/model-endpoint/scripts.ts";
import { installAgent } from "../../../pipeline/session/install.ts";
import { HeldoutTask } from "../../../pipeline/schemas/heldout.ts";
import { tempDir } from "../../helpers/tmp.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { runDemo, usageInLog, type DemoRun } from "../../helpers/demo-published.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));

// A real harness (Claude Code, installed by its adapter) through the demo's emitted sessions against
// the model endpoint. On a copy of the test run's one demo run (test/helpers/demo-run.ts).
describe("the demo", () => {
  let a: DemoRun;
  beforeAll(async () => {
    a = await runDemo();
  });

  describe("a real harness (Claude Code, installed by its adapter) against the model endpoint", () => {
    const quiet = createLogger({ level: "warn", write: () => {} });
    const adapter = join(root, "data", "agents", "claude-code.yaml");
    // Installed once per machine (CI's .ci/run installs it first); the install is whole or absent.
    const toolsDir = join(root, DEFAULT_TOOLS_DIR);
    const bench = () => OpenedBenchmark.open(a.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: quiet });
    let picked: string[];
    beforeAll(async () => {
      await installAgent(loadAgent(adapter), toolsDir);
      const index = SessionIndex.parse(JSON.parse(a.published["sessions/index.json"]!));
      picked = (["near", "far"] as const).map((locality) => index.sessions.find((s) => s.locality === locality)!.session_id);
    }, 900_000);

    async function withEndpoint<T>(script: ModelScript, run: (endpoint: ModelEndpoint) => Promise<T>): Promise<T> {
      const b = bench();
      const knowledge = await benchmarkKnowledge(b).finally(() => b.close());
      const endpoint = await ModelEndpoint.start({ script, knowledge });
      try {
        return await run(endpoint);
      } finally {
        await endpoint.close();
      }
    }
    const runAll = (endpoint: ModelEndpoint, dir: string, sessions: string[], conditions: ("control" | "switched")[] = ["control", "switched"]) =>
      runAllSessions(bench(), {
        manifest: a.emitted,
        conditions,
        agent: loadAgent(adapter),
        out: join(dir, "results"),
        work: join(dir, "runs"),
        jobs: 1,
        log: quiet,
        only: sessions,
        model: { url: endpoint.url, key: "test-key" },
        toolsDir,
      });
    const spec = (sessionId: string) => {
      const index = SessionIndex.parse(JSON.parse(a.published["sessions/index.json"]!));
      return SessionSpec.parse(JSON.parse(a.published[`sessions/${index.sessions.find((s) => s.session_id === sessionId)!.file}`]!));
    };
    const trajectoryOf = (dir: string, report: VerificationReport) =>
      readFileSync(join(dir, "results", report.behaviour!.trajectory), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));

    it("solves a near and a far session in both conditions in one conversation per run, its own usage equal to the endpoint's log, nothing held out in any prompt", async () => {
      const dir = tempDir();
      await withEndpoint("solve", async (endpoint) => {
        const { ran, failed } = await runAll(endpoint, dir, picked);
        expect(failed).toEqual([]);
        expect(ran.map((r) => [r.session_id, r.condition, r.resolved]).sort()).toEqual(
          picked
            .flatMap((s) => [
              [s, "control", true],
              [s, "switched", true],
            ])
            .sort(),
        );
        const b = bench();
        const heldout = (id: string) => HeldoutTask.parse(b.heldout(id));
        for (const report of ran) {
          const behaviour = report.behaviour!;
          const s = spec(report.session_id);
          const schedule = s.conditions[report.condition as "control" | "switched"];
          const calls = endpoint.calls.filter((c) => c.conversation_header === behaviour.conversation);
          // Table 2's figures from the harness's own output are the endpoint's, exactly.
          expect(behaviour.usage!.all).toEqual(usageInLog(calls));
          expect(behaviour).toMatchObject({ failed_requests: 0, requests: schedule.length });
          // One conversation: every request arrives with the history of the ones before it, its checkout named.
          expect(calls.map((c) => c.request?.index)).toEqual([...calls.map((c) => c.request!.index)].sort((x, y) => x - y));
          expect(new Set(calls.map((c) => c.request!.index))).toEqual(new Set(schedule.map((_, i) => i)));
          const runDir = join(dir, "runs", `${report.session_id}.${report.condition}`);
          for (const c of calls) {
            const active = schedule[c.request!.index]!.message.checkout;
            expect(c.request!.checkout).toBe(join(runDir, "workspace", basename(active)));
            // Nothing held out: no reference or test patch, no test id to pass, no locality, no verifier output.
            expect(c.body).not.toMatch(/diff --git|FAIL_TO_PASS|PASS_TO_PASS|fail_to_pass|locality|"near"|"far"|RESOLVED|required tests/);
            for (const task of s.checkouts) for (const test of heldout(task.task_id).fail_to_pass) expect(c.body).not.toContain(test);
          }
          // No file of the harness's in any checkout: the focus checkout changed in the reference's files only.
          const focusFiles = new Set(
            heldout(s.focus)
              .implementation_patch.match(/^diff --git a\/(\S+)/gm)!
              .map((l) => l.slice("diff --git a/".length)),
          );
          const trajectory = trajectoryOf(dir, report);
          for (const t of trajectory)
            for (const [path, c] of Object.entries(t.changes as Record<string, { added: string[]; modified: string[]; deleted: string[] }>))
              if (path === s.checkouts.find((x) => x.task_id === s.focus)!.path)
                for (const f of [...c.added, ...c.modified, ...c.deleted]) expect(focusFiles).toContain(f);
          // The model edits the focus on every return, so recovery is measured at every one of them.
          if (report.condition === "switched") expect(behaviour.focus_recovery_seconds.every((v) => v !== null)).toBe(true);
          expect(behaviour.usage!.focus_resumed.model_calls).toBeGreaterThan(report.condition === "switched" ? 0 : -1);
        }
        b.close();
        // Table 2, from the reports.
        const sessionsDir = join(dir, "sessions");
        mkdirSync(sessionsDir);
        const index = SessionIndex.parse(JSON.parse(a.published["sessions/index.json"]!));
        const chosen = index.sessions.filter((s) => picked.includes(s.session_id));
        for (const s of chosen) writeFileSync(join(sessionsDir, s.file), a.published[`sessions/${s.file}`]!);
        writeFileSync(join(sessionsDir, "index.json"), JSON.stringify({ ...index, sessions: chosen }));
        expect((await runCli(["report", "--results", join(dir, "results"), "--sessions", sessionsDir, "--out", join(dir, "tables")])).code).toBe(0);
        const csv = readFileSync(join(dir, "tables", "table2.csv"), "utf8")
          .trim()
          .split("\n");
        const runsOf = (condition: string) => ran.filter((r) => r.condition === condition).map((r) => r.behaviour!.usage!);
        const meanCalls = (condition: string, part: "all" | "focus_resumed") =>
          (runsOf(condition).reduce((n, u) => n + u[part].model_calls!, 0) / 2).toFixed(2);
        expect(csv[0]).toBe("configuration,column,runs,tokens_millions,model_calls,tool_calls,failed_requests,infrastructure_faults");
        expect(
          csv.slice(1).map((l) =>
            l
              .split(",")
              .slice(0, 5)
              .filter((_, i) => i !== 3),
          ),
        ).toEqual([
          ["results", "Unint.", "2", meanCalls("control", "all")],
          ["results", "Switch-All", "2", meanCalls("switched", "all")],
          ["results", "Switch-Focus", "2", meanCalls("switched", "focus_resumed")],
        ]);
        expect(readFileSync(join(dir, "tables", "table1.md"), "utf8")).toContain("## Table 2: execution workload");
      });
    }, 900_000);

    it("runs in the focus task's environment with no network (claude-code-environment): the harness installed here, mounted; one conversation resumed in every checkout; its usage the endpoint's", async (context) => {
      if (!(await dockerForTests())) return context.skip();
      const dir = tempDir();
      // The shipped environment adapter, without a network: the loopback endpoint is reached through the relay.
      const agentFile = join(dir, "claude-code-offline.yaml");
      writeFileSync(agentFile, `extends: ${join(root, "data", "agents", "claude-code-environment.yaml")}\nname: claude-code-offline\nnetwork: false\n`);
      const session = picked[0]!;
      const s = spec(session);
      await withEndpoint("solve", async (endpoint) => {
        const { ran, failed } = await runAllSessions(bench(), {
          manifest: a.emitted,
          conditions: ["switched"],
          agent: loadAgent(agentFile),
          out: join(dir, "results"),
          work: join(dir, "runs"),
          jobs: 1,
          log: quiet,
          only: [session],
          model: { url: endpoint.url, key: "test-key" },
          toolsDir,
        });
        expect(failed).toEqual([]);
        const [report] = ran;
        expect(report!.resolved).toBe(true);
        const behaviour = report!.behaviour!;
        expect(behaviour).toMatchObject({ failed_requests: 0, requests: s.conditions.switched.length });
        const calls = endpoint.calls.filter((c) => c.conversation_header === behaviour.conversation);
        expect(behaviour.usage!.all).toEqual(usageInLog(calls));
        // Every request, in whichever checkout, continued the one conversation, and named the checkout at its session path.
        expect(new Set(calls.map((c) => c.request!.index))).toEqual(new Set(s.conditions.switched.map((_, i) => i)));
        for (const c of calls) expect(c.request!.checkout).toBe(s.conditions.switched[c.request!.index]!.message.checkout);
        // It ran in the container: from the workspace of the session's paths, its state in the agent's directory.
        const runDir = join(dir, "runs", `${session}.switched`);
        const init = JSON.parse(readFileSync(join(runDir, "logs", "request-00-attempt-0.log"), "utf8").split("\n")[0]!);
        expect(init).toMatchObject({ type: "system", subtype: "init", cwd: dirname(s.checkouts[0]!.path) });
        expect(existsSync(join(runDir, "agent", ".claude"))).toBe(true);
      });
    }, 900_000);

    it("starts a new conversation when a run is run again, and a request whose text starts with '-' reaches the model whole", async () => {
      const dir = tempDir();
      await withEndpoint("idle", async (endpoint) => {
        const session = picked[0]!;
        const first = await runAll(endpoint, join(dir, "1"), [session], ["control"]);
        const second = await runAll(endpoint, join(dir, "2"), [session], ["control"]);
        const [one, two] = [first.ran[0]!.behaviour!, second.ran[0]!.behaviour!];
        expect(one.conversation).not.toBe(two.conversation);
        expect([one.failed_requests, two.failed_requests]).toEqual([0, 0]);
        // The second run's first call carries its first request only: nothing of the first run's conversation.
        const opening = endpoint.calls.find((c) => c.conversation_header === two.conversation)!;
        expect(opening.request!.index).toBe(0);
        expect((JSON.parse(opening.body).messages as { role: string }[]).filter((m) => m.role === "assistant")).toEqual([]);
        expect([first.ran[0]!.resolved, second.ran[0]!.resolved]).toEqual([false, false]);
      });
      // A text that starts with "-" (real review comments do) is the message, never an option.
      const s = spec(picked[0]!);
      const dashed = {
        ...s,
        conditions: {
          ...s.conditions,
          control: s.conditions.control.slice(0, 1).map((r) => ({ ...r, message: { ...r.message, text: `- ${r.message.text}` } })),
        },
      };
      const file = join(dir, "dashed.json");
      writeFileSync(file, JSON.stringify(dashed));
      await withEndpoint("idle", async (endpoint) => {
        const report = await runAndScoreSession(bench(), {
          session: file,
          condition: "control",
          agent: loadAgent(adapter),
          out: join(dir, "dashed-results"),
          work: join(dir, "dashed-runs"),
          log: quiet,
          model: { url: endpoint.url, key: "k" },
          toolsDir,
        });
        expect(report.behaviour!.failed_requests).toBe(0);
        expect(endpoint.calls.some((c) => c.body.includes(`- ${s.conditions.control[0]!.message.text.slice(0, 40)}`.replace(/\n/g, "\\n")))).toBe(true);
      });
    }, 900_000);

    it("edits the checkout of the other task when the model does: the control resolves, the switched run does not, and its trajectory shows the cross-task writes; undoing the focus work shows as work lost", async () => {
      const dir = tempDir();
      await withEndpoint("wrong-checkout", async (endpoint) => {
        const { ran } = await runAll(endpoint, join(dir, "wrong"), [picked[0]!]);
        expect(ran.map((r) => [r.condition, r.resolved])).toEqual([
          ["control", true],
          ["switched", false],
        ]);
        expect(ran[0]!.behaviour!.cross_task_write_requests).toBe(0);
        expect(ran[1]!.behaviour!.cross_task_write_requests).toBeGreaterThan(0);
      });
      await withEndpoint("undo", async (endpoint) => {
        const { ran } = await runAll(endpoint, join(dir, "undo"), [picked[0]!], ["switched"]);
        expect(ran[0]!.resolved).toBe(false);
        expect(ran[0]!.behaviour!.work_lost_files).toBeGreaterThan(0);
      });
    }, 900_000);

    it("retries an overloaded provider at most twice and reports an infrastructure fault; scores a model error without retrying it; stops a hanging request at its budget with its process group gone", async () => {
      const dir = tempDir();
      const s = spec(picked[0]!);
      const short = {
        ...s,
        budget: { per_request_seconds: 20, timeout_continuations: 0 },
        conditions: { ...s.conditions, control: s.conditions.control.slice(0, 2) },
      };
      const file = join(dir, "short.json");
      writeFileSync(file, JSON.stringify(short));
      const runShort = (endpoint: ModelEndpoint, name: string) =>
        runAndScoreSession(bench(), {
          session: file,
          condition: "control",
          agent: loadAgent(adapter),
          out: join(dir, name, "results"),
          work: join(dir, name, "runs"),
          log: quiet,
          model: { url: endpoint.url, key: "k" },
          toolsDir,
        });
      await withEndpoint("overloaded", async (endpoint) => {
        const report = await runShort(endpoint, "overloaded");
        const trajectory = trajectoryOf(join(dir, "overloaded"), report);
        // The first request, tried three times (two retries), then the run ends: the second is never delivered.
        expect(trajectory).toHaveLength(1);
        expect(trajectory[0]).toMatchObject({ infrastructure_retries: 2, failure: { kind: "infrastructure" } });
        expect(trajectory[0].exits).toHaveLength(3);
        expect(report.behaviour!.infrastructure_fault).toMatch(/^request 0: .*529 Overloaded/);
        // Each attempt is one harness run (its own few retries within it, CLAUDE_CODE_MAX_RETRIES).
        expect(endpoint.calls.length).toBe(3 * 3);
      });
      await withEndpoint("model-error", async (endpoint) => {
        const report = await runShort(endpoint, "model-error");
        const trajectory = trajectoryOf(join(dir, "model-error"), report);
        expect(trajectory).toHaveLength(2);
        expect(trajectory.map((t) => t.failure?.kind)).toEqual(["model", "model"]);
        expect(trajectory.map((t) => t.exits.length)).toEqual([1, 1]);
        expect(report.behaviour).toMatchObject({ failed_requests: 2 });
        expect(report.behaviour!.infrastructure_fault).toBeUndefined();
        expect(report.resolved).toBe(false);
      });
      const hanging = {
        ...short,
        budget: { per_request_seconds: 5, timeout_continuations: 0 },
        conditions: { ...s.conditions, control: s.conditions.control.slice(0, 1) },
      };
      writeFileSync(file, JSON.stringify(hanging));
      await withEndpoint("hang", async (endpoint) => {
        const report = await runShort(endpoint, "hang");
        expect(report.behaviour).toMatchObject({ timed_out_requests: 1, requests: 1 });
        expect(endpoint.calls.length).toBeGreaterThan(0);
        // Nothing of the harness is left running once the request was stopped.
        const left = readdirSync("/proc")
          .filter((p) => /^\d+$/.test(p))
          .filter((p) => {
            try {
              return readFileSync(`/proc/${p}/cmdline`, "utf8").includes(join(dir, "hang")) || readlinkSync(`/proc/${p}/cwd`).startsWith(join(dir, "hang"));
            } catch {
              return false;
            }
          });
        expect(left).toEqual([]);
      });
    }, 900_000);
  });
});
