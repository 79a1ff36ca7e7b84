import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { atifUsage, AtifTrajectory } from "../../../pipeline/harbor/atif.ts";
import { harborJobs, loadHarborReports, type HeldoutView } from "../../../pipeline/harbor/job.ts";
import { HeldoutTask } from "../../../pipeline/schemas/heldout.ts";
import { RepoProfile } from "../../../pipeline/schemas/repo-profile.ts";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { tempDir } from "../../helpers/tmp.ts";

/*
 * report --harbor on what Harbor 0.26.0 wrote: test/fixtures/harbor-jobs/ holds a real job of
 * Harbor's claude-code agent (--resume-trajectory, against switch-swe's scripted model) on the
 * demo's session-demo-org__ledger-35, control condition, run by `npm run bench:harbor` as a job
 * of one trial named claude-code/<task>; the files report reads are kept as Harbor wrote them
 * (README.md there says which and how they were made).
 */

const FIXTURES = join(import.meta.dirname, "..", "..", "fixtures", "harbor-jobs");
const SESSION = "session-demo-org__ledger-35";
const TASK = `${SESSION}.control`;
const FOCUS = "demo-org__ledger-35";

/** The fixture's jobs, benchmark sessions (its one session listed) and held-out view, in a directory of their own. */
function setUp(): { jobs: string; sessionsDir: string; view: HeldoutView; trial: string } {
  const dir = tempDir("harbor-job-");
  const jobs = join(dir, "jobs");
  for (const configuration of ["claude-code", "claude-code-router", "claude-code-rcm"])
    cpSync(join(FIXTURES, configuration), join(jobs, configuration), { recursive: true });
  const sessionsDir = join(dir, "sessions");
  mkdirSync(sessionsDir);
  const file = `${SESSION}.json`;
  cpSync(join(FIXTURES, "benchmark", "sessions", file), join(sessionsDir, file));
  const spec = SessionSpec.parse(JSON.parse(readFileSync(join(sessionsDir, file), "utf8")));
  writeFileSync(
    join(sessionsDir, "index.json"),
    JSON.stringify({ benchmark: "demo", sessions: [{ file, focus: spec.focus, locality: spec.locality, session_id: SESSION }] }),
  );
  const heldout = HeldoutTask.parse(JSON.parse(readFileSync(join(FIXTURES, "benchmark", "heldout", `${FOCUS}.json`), "utf8")));
  const profile = RepoProfile.parse(
    JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "..", "data", "demo", "repos", "demo-org__ledger.json"), "utf8")),
  );
  const view: HeldoutView = {
    heldout: (id) => (id === FOCUS ? heldout : undefined),
    rules: (repo) => (repo === spec.repo ? profile.classification : undefined),
  };
  const jobDir = join(jobs, "claude-code", TASK);
  const trial = join(
    jobDir,
    readdirSync(jobDir).find((n) => n.startsWith(SESSION))!,
  );
  return { jobs, sessionsDir, view, trial };
}

const trajectoryOf = (trial: string, step: string) =>
  AtifTrajectory.parse(JSON.parse(readFileSync(join(trial, "steps", step, "agent", "trajectory.json"), "utf8")));

describe("report --harbor on a real Harbor job of claude-code (one trial per job, named configuration/task)", () => {
  it("reads a job named claude-code/<task> as claude-code's, whether given the jobs' directory, the configuration's or the job's", () => {
    const { jobs } = setUp();
    const job = join(jobs, "claude-code", TASK);
    expect(harborJobs(jobs)).toEqual([
      { configuration: "claude-code", jobs: [job] },
      { configuration: "claude-code-rcm", jobs: [join(jobs, "claude-code-rcm", TASK)] },
      { configuration: "claude-code-router", jobs: [join(jobs, "claude-code-router", TASK)] },
    ]);
    expect(harborJobs(join(jobs, "claude-code"))).toEqual([{ configuration: "claude-code", jobs: [job] }]);
    expect(harborJobs(job)).toEqual([{ configuration: "claude-code", jobs: [job] }]);
  });

  it("grades the trial again, agrees with Harbor's reward, and counts the resumed conversation's usage once, request by request", () => {
    const { jobs, sessionsDir, view, trial } = setUp();
    const loaded = loadHarborReports(join(jobs, "claude-code"), sessionsDir, view);
    expect(loaded.problems).toEqual([]);
    expect(loaded.reports).toHaveLength(1);
    const { configuration, report } = loaded.reports[0]!;
    expect(configuration).toBe("claude-code");
    expect(report).toMatchObject({ session_id: SESSION, condition: "control", task_id: FOCUS, resolved: true });
    const steps = readdirSync(join(trial, "steps")).sort();
    expect(report.behaviour).toMatchObject({
      agent: "claude-code",
      requests: steps.length,
      cross_task_write_requests: 0,
      timed_out_requests: 0,
      failed_requests: 0,
    });
    // Claude Code writes the whole conversation again at every step: the last step's trajectory holds
    // every request's turns, so the requests' own usages must add up to it, and to the totals Harbor wrote.
    const last = trajectoryOf(trial, steps.at(-1)!);
    expect(new Set(steps.map((s) => trajectoryOf(trial, s).session_id)).size).toBe(1);
    expect(report.behaviour!.usage!.all).toEqual(atifUsage(last.steps));
    const totals = (
      JSON.parse(readFileSync(join(trial, "steps", steps.at(-1)!, "agent", "trajectory.json"), "utf8")) as { final_metrics: Record<string, number> }
    ).final_metrics;
    const all = report.behaviour!.usage!.all;
    expect(all.input_tokens + all.cached_input_tokens!).toBe(totals.total_prompt_tokens);
    expect(all.cached_input_tokens).toBe(totals.total_cached_tokens);
    expect(all.output_tokens).toBe(totals.total_completion_tokens);
    expect(all.model_calls).toBeGreaterThan(steps.length - 1);
  });

  it("lists a trial whose Harbor reward is changed as a disagreement, switch-swe's verdict counting", () => {
    const { jobs, sessionsDir, view, trial } = setUp();
    const file = join(trial, "result.json");
    const result = JSON.parse(readFileSync(file, "utf8")) as { verifier_result: { rewards: { reward: number } } };
    result.verifier_result.rewards.reward = 0;
    writeFileSync(file, JSON.stringify(result));
    const loaded = loadHarborReports(join(jobs, "claude-code"), sessionsDir, view);
    expect(loaded.problems).toEqual([expect.stringContaining("Harbor's reward is 0, switch-swe's grading says resolved (1)")]);
    expect(loaded.reports[0]!.report.resolved).toBe(true);
  });

  it("reads cross-task writes from the steps' observations of the checkouts", () => {
    const { jobs, sessionsDir, view, trial } = setUp();
    // A file of another checkout changed during the second request, as the observations after it and after every later request record it.
    // A listing is NUL-separated: `C`, a checkout's path, then each file's `sha1  ./path`; the first file of w00 (the active checkout is w03) is given another hash.
    const steps = readdirSync(join(trial, "steps")).sort();
    for (const step of steps.slice(1)) {
      const listing = join(trial, "steps", step, "artifacts", "var", "lib", "switch-swe", "checkouts.listing");
      const text = readFileSync(listing, "utf8");
      const at = text.indexOf("C\0/workspace/w00\0") + "C\0/workspace/w00\0".length;
      expect(text.slice(at, at + 40)).toMatch(/^[0-9a-f]{40}$/);
      writeFileSync(listing, text.slice(0, at) + "0".repeat(40) + text.slice(at + 40));
    }
    const behaviour = loadHarborReports(join(jobs, "claude-code"), sessionsDir, view).reports[0]!.report.behaviour!;
    expect(behaviour.cross_task_write_requests).toBe(1);
    expect(behaviour.cross_task_write_files).toBe(1);
  });
});

describe("report --harbor on a real job through switch-swe's context relay (claude-code-router: a job of one trial, the relay's state in the job's context-relay/)", () => {
  it("adds the relay's routing decisions to its trial's behaviour, and its auxiliary calls (none here: routed by reference) to nothing else", () => {
    const { jobs, sessionsDir, view } = setUp();
    const loaded = loadHarborReports(jobs, sessionsDir, view);
    expect(loaded.problems).toEqual([]);
    const by = (c: string) => loaded.reports.find((r) => r.configuration === c)!.report;
    const relayLog = readFileSync(join(jobs, "claude-code-router", TASK, "context-relay", "usage.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; by?: string });
    const routed = relayLog.filter((e) => e.type === "routing");
    expect(routed.length).toBe(by("claude-code-router").behaviour!.requests);
    expect(by("claude-code-router").behaviour!.routing).toEqual({
      reference: routed.filter((e) => e.by === "reference").length,
      router: routed.filter((e) => e.by === "router").length,
      fallback: routed.filter((e) => e.by === "fallback").length,
    });
    expect(relayLog.filter((e) => e.type === "step_finish")).toEqual([]);
    expect(by("claude-code-router").behaviour!.usage).toEqual(by("claude-code").behaviour!.usage);
    expect(by("claude-code").behaviour!.routing).toBeUndefined();
  });

  it("adds +RCM's memory calls (the relay's own, in its log) to the trial's usage: the agent's trajectory and the relay's calls are what the model served", () => {
    const { jobs, sessionsDir, view } = setUp();
    const report = loadHarborReports(join(jobs, "claude-code-rcm"), sessionsDir, view).reports[0]!.report;
    const job = join(jobs, "claude-code-rcm", TASK);
    const trial = join(
      job,
      readdirSync(job).find((n) => n.startsWith(SESSION))!,
    );
    const steps = readdirSync(join(trial, "steps")).sort();
    const agent = atifUsage(trajectoryOf(trial, steps.at(-1)!).steps);
    type Aux = { type: string; part?: { tokens: { input: number; output: number; cache: { read: number } } } };
    const aux = readFileSync(join(job, "context-relay", "usage.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Aux)
      .filter((e) => e.type === "step_finish")
      .map((e) => e.part!.tokens);
    expect(aux.length).toBeGreaterThan(0);
    const sum = (f: (t: (typeof aux)[number]) => number) => aux.reduce((n, t) => n + f(t), 0);
    expect(report.behaviour!.usage!.all).toEqual({
      input_tokens: agent.input_tokens + sum((t) => t.input),
      cached_input_tokens: agent.cached_input_tokens! + sum((t) => t.cache.read),
      output_tokens: agent.output_tokens + sum((t) => t.output),
      model_calls: agent.model_calls! + aux.length,
      tool_calls: agent.tool_calls,
    });
  });

  it("refuses to count one relay's log for a job of two trials (a relay serves one conversation)", () => {
    const { jobs, sessionsDir, view } = setUp();
    const job = join(jobs, "claude-code-router", TASK);
    const trial = readdirSync(job).find((n) => n.startsWith(SESSION))!;
    cpSync(join(job, trial), join(job, `${trial}-again`), { recursive: true });
    const loaded = loadHarborReports(join(jobs, "claude-code-router"), sessionsDir, view);
    expect(loaded.problems).toHaveLength(2);
    for (const problem of loaded.problems) expect(problem).toMatch(/one relay's log for 2 trials .* a relay serves one conversation/);
    for (const { report } of loaded.reports) expect(report.behaviour!.routing).toBeUndefined();
  });
});
