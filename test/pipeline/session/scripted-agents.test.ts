import { BUILT_STAGES } from "../../../stages/index.ts";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { git } from "../../../pipeline/git.ts";
import { VerificationReport } from "../../../pipeline/schemas/verification.ts";
import { runCli } from "../../helpers/cli-in-process.ts";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { basename } from "node:path";
import { SessionIndex } from "../../../pipeline/schemas/session.ts";
import { createLogger } from "../../../pipeline/logger.ts";
import { CONTINUATION_MESSAGE } from "../../../pipeline/session/types.ts";
import { loadAgent } from "../../../pipeline/session/agents.ts";
import { runAllSessions, runAndScoreSession } from "../../../pipeline/session/runs.ts";
import { OpenedBenchmark } from "../../../pipeline/project/benchmark.ts";
import { tempDir } from "../../helpers/tmp.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { runDemo, type DemoRun } from "../../helpers/demo-published.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const bin = fileURLToPath(new URL("../../../bin/switch-swe.mjs", import.meta.url));

// Scripted agents through the demo's emitted sessions: run-all, its resumption after a kill, each
// request's budget and continuations. On a copy of the test run's one demo run (test/helpers/demo-run.ts).
describe("the demo", () => {
  let a: DemoRun;
  beforeAll(async () => {
    a = await runDemo();
  });

  it("runs scripted agents through a near and a far session in both conditions, and report shows what each did", async () => {
    const demo = a;
    const dir = tempDir();
    const index = SessionIndex.parse(JSON.parse(demo.published["sessions/index.json"]!));
    const picked = (["near", "far"] as const).map((locality) => index.sessions.find((s) => s.locality === locality)!.session_id);
    const results = join(dir, "results");
    const runs = join(dir, "runs");
    const log = createLogger({ level: "warn", write: () => {} });
    // Verified as a user verifies: in the focus task's container (CI always has the engine).
    const executor = (await dockerForTests()) ? "docker" : "local";
    for (const name of ["replay-reference", "noop", "wrong-checkout"]) {
      const agent = loadAgent(join(root, "data", "agents", `${name}.yaml`));
      const { ran } = await runAllSessions(OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor }, log: log }), {
        manifest: demo.emitted,
        conditions: ["control", "switched"],
        agent,
        out: join(results, name),
        work: join(runs, name),
        jobs: 2,
        log,
        only: picked,
      });
      expect(ran).toHaveLength(4);
    }
    const report = (agent: string, session: string, condition: string) =>
      VerificationReport.parse(JSON.parse(readFileSync(join(results, agent, `${session}.${condition}.json`), "utf8")));
    for (const session of picked) {
      expect([report("replay-reference", session, "control").resolved, report("replay-reference", session, "switched").resolved]).toEqual([true, true]);
      expect([report("noop", session, "control").resolved, report("noop", session, "switched").resolved]).toEqual([false, false]);
      expect([report("wrong-checkout", session, "control").resolved, report("wrong-checkout", session, "switched").resolved]).toEqual([true, false]);
      // The wrong checkout is written in the switched run only, and the trajectory says where.
      expect(report("wrong-checkout", session, "control").behaviour).toMatchObject({ cross_task_write_requests: 0 });
      const switched = report("wrong-checkout", session, "switched");
      expect(switched.behaviour!.cross_task_write_requests).toBe(1);
      const trajectory = readFileSync(join(results, "wrong-checkout", switched.behaviour!.trajectory), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      const written = trajectory.find((t) => Object.keys(t.changes).some((p) => p !== t.checkout))!;
      expect(written.focus).toBe(true);
      expect(report("noop", session, "switched").behaviour).toMatchObject({ cross_task_write_requests: 0, continuations_used: 0, work_lost_files: 0 });
    }
    // The report over a benchmark of just these two sessions (its own index, the fixed denominators).
    const sessionsDir = join(dir, "sessions");
    mkdirSync(sessionsDir);
    const chosen = index.sessions.filter((s) => picked.includes(s.session_id));
    for (const s of chosen) writeFileSync(join(sessionsDir, s.file), demo.published[`sessions/${s.file}`]!);
    writeFileSync(join(sessionsDir, "index.json"), JSON.stringify({ ...index, sessions: chosen }));
    expect((await runCli(["report", "--results", results, "--sessions", sessionsDir, "--out", join(dir, "tables")])).code).toBe(0);
    const csv = readFileSync(join(dir, "tables", "table1.csv"), "utf8");
    expect(csv).toContain("replay-reference,overall,2,2,2,100.0,100.0,0.0,0,0\n");
    expect(csv).toContain("noop,overall,2,0,0,0.0,0.0,0.0,0,0\n");
    expect(csv).toContain("wrong-checkout,overall,2,2,0,100.0,0.0,100.0,0,0\n");
    for (const group of ["near", "far"]) {
      expect(csv).toContain(`replay-reference,${group},1,1,1,100.0,100.0,0.0,0,0\n`);
      expect(csv).toContain(`wrong-checkout,${group},1,1,0,100.0,0.0,100.0,0,0\n`);
    }
    const md = readFileSync(join(dir, "tables", "table1.md"), "utf8");
    expect(md).toContain("| wrong-checkout | Switch | Overall | 2 | 2 | ");
    expect(md).toContain("| wrong-checkout | Unint. | Overall | 2 | 0 | 0 | ");

    // The checkouts are role-neutral and hold no future: one commit each, no task id anywhere.
    const workspace = join(runs, "noop", `${picked[0]}.switched`, "workspace");
    for (const checkout of readdirSync(workspace)) {
      expect((await git(["rev-list", "--count", "HEAD"], { cwd: join(workspace, checkout) })).trim()).toBe("1");
      expect((await git(["grep", "-l", "-e", "demo-org__", "-e", "heldout"], { cwd: join(workspace, checkout) }).catch(() => "")).trim()).toBe("");
    }

    // Another agent given noop's --work folder is refused before it runs, naming the folder and
    // whose run it holds; noop's run and the trajectory its report links to stay as they were.
    const noopTrajectory = report("noop", picked[0]!, "switched").behaviour!.trajectory;
    const before = readFileSync(join(results, "noop", noopTrajectory), "utf8");
    const session = join(demo.emitted, "sessions", chosen.find((s) => s.session_id === picked[0])!.file);
    const intruder = [
      "session",
      "run",
      "-c",
      demo.configPath,
      "--session",
      session,
      "--condition",
      "switched",
      "--agent",
      join(root, "data", "agents", "replay-reference.yaml"),
    ];
    const refused = await runCli([...intruder, "--out", join(dir, "intruder"), "--work", join(runs, "noop"), "--executor", "local", "-q"]);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(
      `${join(runs, "noop", `${picked[0]}.switched`)} holds the run of agent noop reported in ${join(results, "noop", `${picked[0]}.switched.json`)}`,
    );
    expect(refused.stderr).toContain("pass --force to replace it");
    expect(readFileSync(join(results, "noop", noopTrajectory), "utf8")).toBe(before);
    // with --force it takes the folder
    const forced = await runCli([...intruder, "--out", join(dir, "intruder"), "--work", join(runs, "noop"), "--executor", "local", "-q", "--force"]);
    expect(forced.code, forced.stderr).toBe(0);
  });

  it("resumes run-all after a kill, running only the sessions not yet scored", async () => {
    const demo = a;
    const dir = tempDir();
    const out = join(dir, "noop");
    const argv = [
      "session",
      "run-all",
      "-c",
      demo.configPath,
      "--manifest",
      demo.emitted,
      "--agent",
      join(root, "data", "agents", "noop.yaml"),
      "--out",
      out,
      "--work",
      join(dir, "runs"),
      "--executor",
      "local",
      "-q",
    ];
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, [bin, ...argv], { stdio: "ignore" });
      const poll = setInterval(() => {
        if (existsSync(out) && readdirSync(out).filter((f) => f.endsWith(".json")).length >= 2) {
          clearInterval(poll);
          child.kill("SIGKILL");
        }
      }, 50);
      child.on("exit", (_code, signal) => {
        clearInterval(poll);
        signal === "SIGKILL" ? resolve() : reject(new Error("run-all finished before it could be killed"));
      });
    });
    const done = readdirSync(out).filter((f) => f.endsWith(".json")).length;
    const total = SessionIndex.parse(JSON.parse(demo.published["sessions/index.json"]!)).sessions.length * 2;
    expect(done).toBeLessThan(total);
    const { ran, skipped } = await runAllSessions(
      OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: createLogger({ level: "warn", write: () => {} }) }),
      {
        manifest: demo.emitted,
        conditions: ["control", "switched"],
        agent: loadAgent(join(root, "data", "agents", "noop.yaml")),
        out,
        work: join(dir, "runs"),
        jobs: 2,
        log: createLogger({ level: "warn", write: () => {} }),
      },
    );
    expect({ ran: ran.length, skipped }).toEqual({ ran: total - done, skipped: done });
    expect(readdirSync(out).filter((f) => f.endsWith(".json"))).toHaveLength(total);

    // Two verifications met an infrastructure fault: they are not scored, so the next run-all does them again.
    // One run directory is kept (its focus checkout is verified again, the agent not run), the other is gone (run again).
    const [kept, gone] = readdirSync(out)
      .filter((f) => f.endsWith(".json"))
      .sort();
    for (const file of [kept!, gone!]) {
      const faulted = { ...JSON.parse(readFileSync(join(out, file), "utf8")), resolved: false, infrastructure_fault: "the engine went away" };
      writeFileSync(join(out, file), JSON.stringify(faulted));
    }
    const runDirOf = (file: string) => join(dir, "runs", file.replace(/\.json$/, ""));
    const trajectoryBefore = statSync(join(runDirOf(kept!), "trajectory.jsonl")).mtimeMs;
    rmSync(runDirOf(gone!), { recursive: true });
    const again = await runAllSessions(
      OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: createLogger({ level: "warn", write: () => {} }) }),
      {
        manifest: demo.emitted,
        conditions: ["control", "switched"],
        agent: loadAgent(join(root, "data", "agents", "noop.yaml")),
        out,
        work: join(dir, "runs"),
        jobs: 2,
        log: createLogger({ level: "warn", write: () => {} }),
      },
    );
    expect({ ran: again.ran.length, skipped: again.skipped }).toEqual({ ran: 2, skipped: total - 2 });
    for (const file of [kept!, gone!]) {
      const redone = VerificationReport.parse(JSON.parse(readFileSync(join(out, file), "utf8")));
      expect(redone.infrastructure_fault, file).toBeUndefined();
      expect(redone.behaviour, file).toBeDefined();
    }
    expect(statSync(join(runDirOf(kept!), "trajectory.jsonl")).mtimeMs).toBe(trajectoryBefore);
    expect(existsSync(join(runDirOf(gone!), "trajectory.jsonl"))).toBe(true);
  });

  it("gives each request its budget, then the continuation message at most timeout_continuations times", async () => {
    const demo = a;
    const dir = tempDir();
    const index = SessionIndex.parse(JSON.parse(demo.published["sessions/index.json"]!));
    const spec = SessionSpec.parse(JSON.parse(demo.published[`sessions/${index.sessions[0]!.file}`]!));
    // A one-second budget and two continuations; the agent sleeps past every budget, and notes what it was sent.
    const short = {
      ...spec,
      budget: { per_request_seconds: 1, timeout_continuations: 2 },
      conditions: { ...spec.conditions, control: spec.conditions.control.slice(0, 2) },
    };
    const sessionFile = join(dir, "short.json");
    writeFileSync(sessionFile, JSON.stringify(short));
    const agentFile = join(dir, "sleeper.yaml");
    writeFileSync(agentFile, `name: sleeper\ncommand: [sh, -c, 'printf "%s\\n" "$1" >> sent.txt; sleep 30', sh, "{text}"]\n`);
    const report = await runAndScoreSession(
      OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: createLogger({ level: "warn", write: () => {} }) }),
      {
        session: sessionFile,
        condition: "control",
        agent: loadAgent(agentFile),
        out: join(dir, "results"),
        work: join(dir, "runs"),
        log: createLogger({ level: "warn", write: () => {} }),
      },
    );
    const trajectory = readFileSync(join(dir, "results", report.behaviour!.trajectory), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(trajectory).toHaveLength(2);
    for (const request of trajectory) {
      expect(request).toMatchObject({ timed_out: true, continuations: 2, exits: [null, null, null], budget_seconds: 1 });
      // Three attempts, each killed at its one-second budget: never less than three seconds.
      expect(request.seconds).toBeGreaterThanOrEqual(3);
    }
    expect(report.behaviour).toMatchObject({ continuations_used: 4, timed_out_requests: 2 });
    // What the agent was sent: each request's text, then the fixed continuation message twice.
    const focus = short.checkouts.find((c) => c.task_id === short.focus)!;
    const sent = readFileSync(join(dir, "runs", `${short.session_id}.control`, "workspace", basename(focus.path), "sent.txt"), "utf8")
      .trim()
      .split("\n");
    const texts = short.conditions.control.map((r) => r.message.text.split("\n")[0]);
    expect(sent.filter((l) => l === CONTINUATION_MESSAGE)).toHaveLength(4);
    expect(sent[0]).toBe(texts[0]);
  });
});
