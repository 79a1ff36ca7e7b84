import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { aggregateResults, gapPoints, percent } from "../../../pipeline/report/aggregate.ts";
import { loadReports, loadSessions } from "../../../pipeline/report/results.ts";
import { renderCsv, renderMarkdown, renderSvg, renderWorkloadSvg } from "../../../pipeline/report/render.ts";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { VerificationReport } from "../../../pipeline/schemas/verification.ts";
import { runCli } from "../../helpers/cli-in-process.ts";
import { tempDir } from "../../helpers/tmp.ts";

/** A valid session specification: only id, focus and locality matter to the report. */
function session(n: number, locality: "near" | "far") {
  const focus = `demo-org__lib-${n}`;
  const request = { task_id: focus, stage: 1, finalization: false, message: { repository: "demo-org/lib", checkout: "/workspace/w00", text: "Do it." } };
  return SessionSpec.parse({
    session_id: `session-${focus}`,
    benchmark: "synthetic",
    repo: "demo-org/lib",
    focus,
    interruptions: [1, 2, 3, 4].map((i) => `demo-org__lib-${100 * n + i}`),
    locality,
    seeds: { benchmark: "1", case: "1" },
    checkouts: [{ path: "/workspace/w00", task_id: focus, base_commit: "a".repeat(40) }],
    budget: { per_request_seconds: 900, timeout_continuations: 3 },
    conditions: { control: [request], switched: [request] },
  });
}

function report(n: number, condition: "control" | "switched", resolved: boolean) {
  return VerificationReport.parse({
    session_id: `session-demo-org__lib-${n}`,
    task_id: `demo-org__lib-${n}`,
    condition,
    artifact_sha256: "0".repeat(64),
    dropped_paths: [],
    applied: true,
    tests: { "tests/test_x.py::test_x": resolved ? "passed" : "failed" },
    integrity_problems: [],
    // Agent A's resolved control run of session 2 did something an auditor should look at.
    ...(n === 2 && condition === "control"
      ? {
          suspicious: [
            { rule: "atexit", path: "src/x.py", line: 3, detail: "runs code when the interpreter exits: import atexit" },
            { rule: "runtime", path: null, line: null, detail: "src/x.py walked the heap (gc.get_objects)" },
          ],
        }
      : {}),
    timed_out: false,
    resolved,
    infrastructure_retries: 0,
  });
}

// Sessions 1-4 near, 5-8 far. Agent A: control resolves 1,2,3 (near) and 5,6 (far); switched
// resolves 1,2 (near, session 3's report is missing) and 5 (far). Agent B: control 1 and 5,
// switched 1 and 5, then nothing else: every other run is missing.
const SESSIONS = [1, 2, 3, 4].map((n) => session(n, "near")).concat([5, 6, 7, 8].map((n) => session(n, "far")));
const A_CONTROL = new Map([
  [1, true],
  [2, true],
  [3, true],
  [4, false],
  [5, true],
  [6, true],
  [7, false],
  [8, false],
]);
const A_SWITCHED = new Map([
  [1, true],
  [2, true],
  [4, false],
  [5, true],
  [6, false],
  [7, false],
  [8, false],
]);

function writeFixture(dir: string) {
  const sessions = join(dir, "sessions");
  mkdirSync(sessions, { recursive: true });
  for (const s of SESSIONS) writeFileSync(join(sessions, `${s.session_id}.json`), JSON.stringify(s));
  writeFileSync(
    join(sessions, "index.json"),
    JSON.stringify({
      benchmark: "t",
      sessions: SESSIONS.map((s) => ({ session_id: s.session_id, file: `${s.session_id}.json`, focus: s.focus, locality: s.locality })),
    }),
  );
  const results = join(dir, "results");
  mkdirSync(join(results, "agent-a", "switched"), { recursive: true });
  mkdirSync(join(results, "agent-b"), { recursive: true });
  for (const [n, ok] of A_CONTROL) writeFileSync(join(results, "agent-a", `s${n}.control.json`), JSON.stringify(report(n, "control", ok)));
  for (const [n, ok] of A_SWITCHED) writeFileSync(join(results, "agent-a", "switched", `s${n}.json`), JSON.stringify(report(n, "switched", ok)));
  for (const n of [1, 5]) {
    writeFileSync(join(results, "agent-b", `s${n}.control.json`), JSON.stringify(report(n, "control", true)));
    writeFileSync(join(results, "agent-b", `s${n}.switched.json`), JSON.stringify(report(n, "switched", true)));
  }
  return { sessions, results };
}

describe("the results report", () => {
  it("matches hand-computed Table 1 figures, missing runs counting as unresolved over fixed denominators", () => {
    const { sessions, results } = writeFixture(tempDir());
    const loaded = loadReports(results);
    expect(loaded.problems).toEqual([]);
    const { rows, problems, suspicious } = aggregateResults(loadSessions(sessions), loaded.reports);
    expect(problems).toEqual([]);
    expect(suspicious).toEqual([
      { configuration: "agent-a", condition: "control", reports: 8, reports_flagged: 1, resolved_flagged: 1, by_rule: { atexit: 1, runtime: 1 } },
      { configuration: "agent-a", condition: "switched", reports: 7, reports_flagged: 0, resolved_flagged: 0, by_rule: {} },
      { configuration: "agent-b", condition: "control", reports: 2, reports_flagged: 0, resolved_flagged: 0, by_rule: {} },
      { configuration: "agent-b", condition: "switched", reports: 2, reports_flagged: 0, resolved_flagged: 0, by_rule: {} },
    ]);
    const figures = rows.map((r) => [
      r.configuration,
      r.group,
      r.sessions,
      percent(r.uninterrupted_resolved, r.sessions),
      percent(r.switched_resolved, r.sessions),
      gapPoints(r),
      r.uninterrupted_missing,
      r.switched_missing,
    ]);
    expect(figures).toEqual([
      // A overall: control 5/8 = 62.5, switched 3/8 = 37.5, gap 25; one switched run missing (session 3).
      ["agent-a", "overall", 8, 62.5, 37.5, 25, 0, 1],
      // A near: 3/4 = 75, 2/4 = 50; far: 2/4 = 50, 1/4 = 25.
      ["agent-a", "near", 4, 75, 50, 25, 0, 1],
      ["agent-a", "far", 4, 50, 25, 25, 0, 0],
      // B: 2 of 8 in both conditions (6 runs missing each), 1 of 4 per group: gap 0.
      ["agent-b", "overall", 8, 25, 25, 0, 6, 6],
      ["agent-b", "near", 4, 25, 25, 0, 3, 3],
      ["agent-b", "far", 4, 25, 25, 0, 3, 3],
    ]);
    const csv = renderCsv({ rows, suspicious, behaviour: [], workload: [], problems, hostRuns: [] });
    expect(csv.split("\n")[0]).toBe(
      "configuration,group,sessions,uninterrupted_resolved,switched_resolved,uninterrupted_pct,switched_pct,gap_pp,uninterrupted_missing,switched_missing",
    );
    expect(csv).toContain("agent-a,overall,8,5,3,62.5,37.5,25.0,0,1\n");
    expect(csv).toContain("agent-b,far,4,1,1,25.0,25.0,0.0,3,3\n");
    const md = renderMarkdown({ rows, suspicious, behaviour: [], workload: [], problems, hostRuns: [] });
    expect(md).toContain("| agent-a | Unint. | 8 | 1 | 1 | atexit 1, runtime 1 |");
    expect(md).toContain("| agent-a | 62.5 | 37.5 | 25.0 | 75.0 | 50.0 | 25.0 | 50.0 | 25.0 | 25.0 |");
    expect(md).toContain("Overall 8 sessions, Near 4, Far 4");
    const svg = renderSvg({ rows, suspicious, behaviour: [], workload: [], problems, hostRuns: [] });
    expect(svg.startsWith("<svg")).toBe(true);
    expect(svg).toContain("agent-a, Near, switched: 50.0%");
    expect(svg).toContain("gap 25.0 pp");
    // a title and an axis label a reader sees, not only a tooltip
    expect(svg).toContain('font-weight="bold">Table 1: resolution, uninterrupted vs switched</text>');
    expect(svg).toMatch(/transform="rotate\(-90 [\d.]+ [\d.]+\)"[^>]*>focus tasks resolved \(%\)<\/text>/);
  });

  it("marks runs whose agent ran on the host as development runs, never as results to report", () => {
    const behaviour = (runs: "host" | "environment") => ({
      agent: "a",
      agent_runs: runs,
      requests: 1,
      cross_task_write_requests: 0,
      cross_task_write_files: 0,
      focus_recovery_seconds: [],
      work_lost_files: 0,
      continuations_used: 0,
      timed_out_requests: 0,
      runner_seconds: 0,
      trajectory: "t.jsonl",
    });
    const loaded = (configuration: string, n: number, condition: "control" | "switched", runs: "host" | "environment") => ({
      configuration,
      file: `${configuration}/${n}.${condition}.json`,
      report: VerificationReport.parse({ ...report(n, condition, true), behaviour: behaviour(runs) }),
    });
    const aggregation = aggregateResults(SESSIONS.slice(0, 2), [
      loaded("dev", 1, "control", "host"),
      loaded("dev", 1, "switched", "environment"),
      loaded("study", 2, "control", "environment"),
      loaded("study", 2, "switched", "environment"),
    ]);
    expect(aggregation.hostRuns).toEqual([{ configuration: "dev", runs: 1, of: 2 }]);
    expect(renderMarkdown(aggregation)).toContain("**Development runs.** dev: 1 of 2 run(s) had the agent on the host");
    expect(renderMarkdown({ ...aggregation, hostRuns: [] })).not.toContain("Development runs");
  });

  it("shows Table 2's tokens in the unit that shows them: millions as the study, else thousands, else whole tokens", () => {
    const cell = (tokens: number) => ({
      runs: 12,
      tokens_millions: tokens / 1e6,
      model_calls: 10,
      tool_calls: 4,
      failed_requests: 0,
      infrastructure_faults: 0,
    });
    const table = (tokens: number) =>
      renderMarkdown({
        rows: [],
        suspicious: [],
        behaviour: [],
        problems: [],
        hostRuns: [],
        workload: [{ configuration: "agent", unint: cell(tokens), switch_all: cell(tokens * 2), switch_focus: cell(tokens / 2) }],
      });
    expect(table(3_400_000)).toContain("| Tokens (M): Unint. |");
    expect(table(3_400_000)).toContain("| 3.400 | 6.800 | 1.700 |");
    // a dry run against the scripted model: thousands, never 0.000
    expect(table(41_250)).toContain("| Tokens (k): Unint. |");
    expect(table(41_250)).toContain("| 41.3 | 82.5 | 20.6 |");
    expect(table(41_250)).toContain("Tokens (input, cached input and output) in thousands.");
    expect(table(300)).toContain("| 300 | 600 | 150 |");
    const svg = renderWorkloadSvg({
      rows: [],
      suspicious: [],
      behaviour: [],
      problems: [],
      hostRuns: [],
      workload: [{ configuration: "agent", unint: cell(1), switch_all: cell(1), switch_focus: cell(1) }],
    });
    expect(svg).toContain('font-weight="bold">Table 2: mean model and tool calls per run</text>');
    expect(svg).toContain(">calls per run (mean)</text>");
  });

  it("does not count reports for unknown sessions, wrong tasks or bad files, and is conservative with duplicates", () => {
    const { sessions, results } = writeFixture(tempDir());
    writeFileSync(join(results, "agent-a", "stray.json"), JSON.stringify({ ...report(2, "control", true), session_id: "session-elsewhere-1" }));
    writeFileSync(join(results, "agent-a", "wrong-task.json"), JSON.stringify({ ...report(4, "control", true), task_id: "demo-org__lib-401" }));
    writeFileSync(join(results, "agent-a", "broken.json"), "{ not json");
    writeFileSync(join(results, "agent-a", "partial.json"), JSON.stringify({ ...report(4, "control", true), resolved: "yes" }));
    // A second switched report for session 1 that did not resolve: the session counts as unresolved.
    writeFileSync(join(results, "agent-a", "s1-again.json"), JSON.stringify(report(1, "switched", false)));
    const loaded = loadReports(results);
    expect(loaded.problems).toHaveLength(2);
    expect(loaded.problems[0]).toMatch(/broken\.json: not JSON/);
    expect(loaded.problems[1]).toMatch(/partial\.json: field resolved: .*not counted/);
    const { rows, problems } = aggregateResults(loadSessions(sessions), loaded.reports);
    expect(problems.some((p) => /stray\.json: field session_id: session-elsewhere-1 is not a session/.test(p))).toBe(true);
    expect(problems.some((p) => /wrong-task\.json: field task_id: demo-org__lib-401 is not the focus task/.test(p))).toBe(true);
    expect(problems.some((p) => /2 switched reports for session-demo-org__lib-1/.test(p))).toBe(true);
    const overall = rows.find((r) => r.configuration === "agent-a" && r.group === "overall")!;
    expect([overall.uninterrupted_resolved, overall.switched_resolved]).toEqual([5, 2]);
  });

  it("takes its denominators from the benchmark's list of sessions, never from the files it finds", () => {
    const { sessions } = writeFixture(tempDir());
    // A session file an earlier run left behind is not part of this benchmark.
    writeFileSync(
      join(sessions, "session-demo-org__lib-99.json"),
      JSON.stringify({ ...SESSIONS[0], session_id: "session-demo-org__lib-99", focus: "demo-org__lib-99" }),
    );
    expect(loadSessions(sessions)).toHaveLength(SESSIONS.length);
    // A listed session whose file is gone is an error: the denominator would be wrong.
    rmSync(join(sessions, `${SESSIONS[0]!.session_id}.json`));
    expect(() => loadSessions(sessions)).toThrow(/session-demo-org__lib-1\.json: not readable \(ENOENT.*expected a session specification/);
    rmSync(join(sessions, "index.json"));
    expect(() => loadSessions(sessions)).toThrow(/index\.json: missing/);
  });

  it("writes table1.md, table1.csv and resolution.svg from the command line, byte-identical on a re-run", async () => {
    const dir = tempDir();
    const { sessions, results } = writeFixture(dir);
    const out = join(dir, "tables");
    const args = ["report", "--results", results, "--sessions", sessions, "--out", out];
    const first = await runCli(args);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("| agent-b | 25.0 | 25.0 | 0.0 |");
    const files = ["table1.md", "table1.csv", "resolution.svg"].map((f) => readFileSync(join(out, f), "utf8"));
    expect((await runCli(args)).code).toBe(0);
    expect(["table1.md", "table1.csv", "resolution.svg"].map((f) => readFileSync(join(out, f), "utf8"))).toEqual(files);
    // A report that cannot be read makes the exit status 1, and the tables still get written.
    writeFileSync(join(results, "agent-a", "broken.json"), "{");
    expect((await runCli(args)).code).toBe(1);
    expect(readFileSync(join(out, "table1.md"), "utf8")).toContain("broken.json: not JSON");
    expect(readFileSync(join(out, "table1.csv"), "utf8")).toBe(files[1]);
    expect(files[0]).not.toContain("broken.json");
  });

  it("Table 3: native, +Router and +RCM side by side, found by the shipped adapters' names or named; a missing one is a usage error naming it", async () => {
    const dir = tempDir();
    const { sessions, results } = writeFixture(dir);
    // Native resolves sessions 1 and 5 switched; +Router adds 2; +RCM adds 6. All resolve every control run of 1, 2, 5, 6.
    const methods = { opencode: [1, 5], "opencode-router": [1, 2, 5], "opencode-rcm": [1, 2, 5, 6] };
    // How each run's requests were routed, as its context manager logged them (native has none):
    // +Router's switched runs sent one request each to the router model, whose answer session 6's could not read.
    const routing = (name: string, n: number, condition: "control" | "switched") =>
      name === "opencode"
        ? undefined
        : name === "opencode-router" && condition === "switched"
          ? { reference: 3, router: n === 6 ? 0 : 1, fallback: n === 6 ? 1 : 0 }
          : { reference: 4, router: 0, fallback: 0 };
    const withBehaviour = (name: string, n: number, condition: "control" | "switched", resolved: boolean) => {
      const decisions = routing(name, n, condition);
      const behaviour = {
        agent: name,
        requests: 4,
        cross_task_write_requests: 0,
        cross_task_write_files: 0,
        focus_recovery_seconds: [],
        work_lost_files: 0,
        continuations_used: 0,
        timed_out_requests: 0,
        runner_seconds: 1,
        trajectory: "trajectory.jsonl",
        ...(decisions ? { routing: decisions } : {}),
      };
      return JSON.stringify({ ...report(n, condition, resolved), behaviour });
    };
    for (const [name, switched] of Object.entries(methods)) {
      mkdirSync(join(results, name));
      for (const n of [1, 2, 5, 6]) {
        writeFileSync(join(results, name, `s${n}.control.json`), withBehaviour(name, n, "control", true));
        writeFileSync(join(results, name, `s${n}.switched.json`), withBehaviour(name, n, "switched", switched.includes(n)));
      }
    }
    const out = join(dir, "tables");
    const ran = await runCli(["report", "--results", results, "--sessions", sessions, "--out", out]);
    expect(ran.code).toBe(0);
    const markdown = readFileSync(join(out, "table1.md"), "utf8");
    const table3 = markdown.slice(markdown.indexOf("## Table 3"));
    // 4 near and 4 far sessions: control 2 of 4 in each group, switched as above.
    expect(table3).toContain("| Native | 50.0 | 25.0 | 25.0 | 50.0 | 25.0 | 25.0 | 50.0 | 25.0 | 25.0 |");
    expect(table3).toContain("| +Router | 50.0 | 37.5 | 12.5 | 50.0 | 50.0 | 0.0 | 50.0 | 25.0 | 25.0 |");
    expect(table3).toContain("| +RCM | 50.0 | 50.0 | 0.0 | 50.0 | 50.0 | 0.0 | 50.0 | 50.0 | 0.0 |");
    // Routing, over all eight runs of each method: +Router 4 × 4 + 4 × 4 = 32 decisions, 3 by the router
    // model and 1 by fallback; +RCM 32, every one by reference, which the table says.
    expect(table3).toContain("| Native | – | – | – | – |");
    expect(table3).toContain("| +Router | 32 | 87.5 | 9.4 | 3.1 |");
    expect(table3).toContain("| +RCM | 32 | 100.0 | 0.0 | 0.0 |");
    expect(table3).toContain("No request of +RCM was routed by the router model: these figures do not measure a model-based router.");
    const csv = readFileSync(join(out, "table3.csv"), "utf8").trim().split("\n");
    expect(csv[0]).toBe(
      "method,configuration,group,sessions,uninterrupted_pct,switched_pct,gap_pp,model_calls_unint,model_calls_switch,routing_decisions,routed_by_reference_pct,routed_by_router_pct,routed_by_fallback_pct",
    );
    expect(csv).toContain("+RCM,opencode-rcm,far,4,50.0,50.0,0.0,,,32,100.0,0.0,0.0");
    expect(csv).toContain("+Router,opencode-router,overall,8,50.0,37.5,12.5,,,32,87.5,9.4,3.1");
    expect(csv).toContain("Native,opencode,near,4,50.0,25.0,25.0,,,,,,");
    expect(readFileSync(join(out, "context-managers.svg"), "utf8")).toContain("<title>+Router, Near, switched: 50.0%</title>");
    // Named by hand: any three configurations, in the order native, router, rcm.
    expect(
      (await runCli(["report", "--results", results, "--sessions", sessions, "--out", out, "--context-managers", "agent-b,agent-a,opencode-rcm"])).code,
    ).toBe(0);
    expect(readFileSync(join(out, "table3.csv"), "utf8")).toContain("Native,agent-b,overall,8,25.0,25.0,0.0");
    // A method whose runs logged no routing at all says so too.
    expect(readFileSync(join(out, "table1.md"), "utf8")).toContain(
      "The runs of +Router logged no routing decision: how their requests were routed is not known.",
    );
    const missing = await runCli(["report", "--results", results, "--sessions", sessions, "--out", out, "--context-managers", "agent-b,agent-z,opencode-rcm"]);
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining("holds no configuration agent-z")]);
    expect((await runCli(["report", "--results", results, "--sessions", sessions, "--out", out, "--context-managers", "a,b"])).code).toBe(2);
  });
});
