// The demo benchmark run by Harbor (docs/HARBOR.md): the demo built from its corpus, exported as a
// Harbor dataset of multi-step tasks (switch-swe export harbor), its size measured (on disk, and
// as it would be with each task holding its own copies), checked with Harbor's own task lint, then
// run with Harbor's local Docker environment: Harbor's oracle through the steps over every task (it
// resolves each focus task), Harbor's nop agent over every task (nothing resolves), Harbor's own
// installed agents (Claude Code, Codex CLI, OpenCode) resuming their conversation from step to
// step against the scripted `solve` model on sampled sessions in both conditions (a job per trial,
// each with its own endpoint, whose log shows the trial's one conversation growing), beside
// `session run-all` of the same harness on the same sessions; and Claude Code and Codex CLI with
// switch-swe's context relay (+Router, +RCM) between them and the model, so that Table 3 comes
// from Harbor jobs. `report --harbor` builds the tables from each job. Harbor runs in a container
// (bench/harbor-runner.ts); every step's seconds are printed.
// Harbor's resume capability is read from its installed package (the agents that qualify), and an
// agent without it is shown refused (`resume` step).
// Usage: npm run bench:harbor [-- --session ID --sessions N|ID,ID --agent-sessions ID,ID --tools-dir DIR --jobs 2
//   --steps size,lint,oracle,nop,resume,agents,relays --harnesses claude-code,codex,opencode --conditions both --keep DIR]
//        npm run bench:harbor -- --config CONFIG [--mirrors DIR] --steps size,lint,oracle,nop [--sessions …] [--conditions switched]
// --config: a benchmark already built by `switch-swe run -c CONFIG` (a real one), exported instead of
// the demo; only its size, Harbor's lint, oracle and nop are run (the agents need the demo's scripted model).
// The agents run on --agent-sessions (default: --session), the relays on --session; both are exported.
// --tools-dir: where `switch-swe agents install` put the harnesses (default .switch-swe/agents here).
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BenchmarkLayout } from "../pipeline/benchmark-layout.ts";
import { buildNetworkSettings } from "../pipeline/executors/types.ts";
import { exportHarbor } from "../pipeline/harbor/export.ts";
import { loadHarborReports } from "../pipeline/harbor/job.ts";
import { taskDirName } from "../pipeline/harbor/layout.ts";
import { createLogger } from "../pipeline/logger.ts";
import { benchmarkKnowledge } from "../pipeline/model-endpoint/knowledge.ts";
import { ModelEndpoint } from "../pipeline/model-endpoint/server.ts";
import { OpenedBenchmark } from "../pipeline/project/benchmark.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { writeReport, writeResultsReport } from "../pipeline/report/results.ts";
import { Condition, SessionIndex } from "../pipeline/schemas/session.ts";
import type { VerificationReport } from "../pipeline/schemas/verification.ts";
import { DEFAULT_TOOLS_DIR, loadAgent } from "../pipeline/session/agents.ts";
import { installAgent } from "../pipeline/session/install.ts";
import { runAllSessions } from "../pipeline/session/runs.ts";
import { BUILT_STAGES } from "../stages/index.ts";
import { prepareDemoCopy, withExecution } from "../test/helpers/demo-copy.ts";
import { conversationGrowth, type Harness, HARBOR_AGENTS, harborResumeSupport, runAgentJob, type TrialJob } from "./harbor-agents.ts";
import { egressControlAvailable, ensureHarborImage, harbor, harborTaskImages, HARBOR_VERSION, removeImagesSince } from "./harbor-runner.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const steps = new Set(arg("steps", "size,lint,oracle,nop,resume,agents,relays").split(","));
const harnesses = arg("harnesses", "claude-code,codex,opencode").split(",") as Harness[];
const jobs = arg("jobs", "2");
const keep = process.argv.includes("--keep") ? resolve(arg("keep", "")) : undefined;
const toolsDir = resolve(arg("tools-dir", DEFAULT_TOOLS_DIR));
const builtConfig = process.argv.includes("--config") ? resolve(arg("config", "")) : undefined;
const mirrors = process.argv.includes("--mirrors") ? resolve(arg("mirrors", "")) : undefined;
const conditions = arg("conditions", "both") === "both" ? Condition.options : [Condition.parse(arg("conditions", ""))];
if (builtConfig && ["resume", "agents", "relays"].some((s) => steps.has(s)))
  throw new Error(
    "--config exports a built benchmark for the size, lint, oracle and nop steps; the agents' steps need the demo's scripted model (--steps size,lint,oracle,nop)",
  );
const caBundle = buildNetworkSettings().caBundle;
if (!caBundle) throw new Error("no CA bundle on this machine");
const log = createLogger({ level: "warn", write: (line) => process.stderr.write(line + "\n") });
const dir = keep ?? mkdtempSync(join(tmpdir(), "switch-swe-bench-harbor-"));
const imagesBefore = harborTaskImages();
mkdirSync(dir, { recursive: true });
const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1);

/** The sessions to export: every one (undefined), a count starting at the agents' session (in the list's order, wrapping), or ids. */
function sampleOf(all: string[], first: string, spec: string): string[] | undefined {
  if (!spec) return undefined;
  if (!/^\d+$/.test(spec)) return [...new Set([first, ...spec.split(",")])];
  const start = all.indexOf(first);
  return Array.from({ length: Math.min(Number(spec), all.length) }, (_, i) => all[(start + i) % all.length]!);
}

/** Bytes under `root`: as stored (a hard-linked file once), and as it would be with every path a copy of its own. */
function sizes(root: string): { stored: number; copies: number; files: number } {
  const seen = new Set<number>();
  let stored = 0;
  let copies = 0;
  let files = 0;
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const stat = lstatSync(path);
      if (stat.isDirectory()) walk(path);
      else {
        files++;
        copies += stat.size;
        if (!seen.has(stat.ino)) (seen.add(stat.ino), (stored += stat.size));
      }
    }
  };
  walk(root);
  return { stored, copies, files };
}
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

try {
  let t = Date.now();
  const built = ensureHarborImage(caBundle);
  console.log(`Harbor ${HARBOR_VERSION} in switch-swe-harbor: ${built ? `image built in ${built.toFixed(0)} s` : "image present"}`);
  t = Date.now();
  let configPath: string;
  let executor: "local" | "docker";
  if (builtConfig) {
    // A benchmark already built (`switch-swe run -c CONFIG`): exported as it stands, its mirrors where the run had them.
    configPath = builtConfig;
    executor = "docker";
  } else {
    const demo = await prepareDemoCopy(join(dir, "demo-copy"));
    const run = await runProjectOnce(withExecution(demo.options, { executor: "local" })).finally(() => demo.server.stop());
    if (!run.ok) throw new Error("the demo pipeline did not finish");
    configPath = demo.configPath;
    executor = "local";
  }
  const bench = () => OpenedBenchmark.open(configPath, { stages: BUILT_STAGES, overrides: { executor, ...(mirrors ? { mirrors } : {}) }, log });
  const first = bench();
  const sessionsDir = first.sessionsDir;
  const manifest = first.layout.outDir;
  await first.close();
  const sessions = SessionIndex.parse(JSON.parse(readFileSync(BenchmarkLayout.sessionIndexIn(sessionsDir), "utf8"))).sessions;
  const session = arg("session", (sessions.find((s) => s.locality === "near") ?? sessions[0]!).session_id);
  const agentSessions = arg("agent-sessions", session).split(",");
  const sampled = sampleOf(
    sessions.map((s) => s.session_id),
    session,
    arg("sessions", ""),
  );
  const sample = sampled && [...new Set([...sampled, ...agentSessions])];
  console.log(
    `${builtConfig ? `benchmark of ${builtConfig}` : "demo built"} (${sessions.length} sessions) in ${seconds(t)} s; exporting ${sample ? `${sample.length}: ${sample.join(", ")}` : "all"}, conditions ${conditions.join(", ")}`,
  );

  // Harbor's Docker environment refuses a no-network verifier it cannot enforce (its egress-control images come from Docker Hub).
  const verifierNetwork = egressControlAvailable() ? "no-network" : "public";
  console.log(`verifier network: ${verifierNetwork}${verifierNetwork === "public" ? " (Harbor's egress-control images cannot be pulled here)" : ""}`);
  t = Date.now();
  const dataset = join(dir, "dataset");
  const opened = bench();
  const exported = await exportHarbor(opened, {
    out: dataset,
    sessions: sample,
    conditions,
    messages: loadAgent("data/agents/claude-code.yaml"),
    images: { caBundle: readFileSync(caBundle, "utf8") },
    agentUser: { name: "agent", uid: 1000 },
    verifierNetwork,
    log,
  }).finally(() => opened.close());
  const exportedSessions = exported.tasks.length / conditions.length;
  console.log(`export: ${exported.tasks.length} tasks (${exportedSessions} sessions) in ${seconds(t)} s`);
  if (steps.has("size")) {
    const all = sizes(dataset);
    const shared = sizes(join(dataset, "shared"));
    const verifier = sizes(join(dataset, "shared", "verifier"));
    console.log(
      `size: ${mb(all.stored)} on disk (${all.files} paths), ${mb(all.copies)} with every task holding its own copies; per session ${mb(all.stored / exportedSessions)} stored, ` +
        `${mb((all.stored - verifier.stored) / exportedSessions)} without the verifier's Node and program (${mb(verifier.stored)}, stored once); shared/ ${mb(shared.stored)}`,
    );
  }

  const tasks = join(dataset, "tasks");
  const mounts = [dir, toolsDir];
  const jobsDir = join(dir, "jobs");
  mkdirSync(jobsDir, { recursive: true });
  if (steps.has("lint")) {
    const lint = await harbor(["harbor", "lint", ...exported.tasks.map((n) => join(tasks, n))], { mounts, cwd: dir });
    const all = await harbor(["harbor", "lint", "--select", "ALL", ...exported.tasks.map((n) => join(tasks, n))], { mounts, cwd: dir });
    const rules = (out: string) => [...new Set([...out.matchAll(/\[([a-z-]+)\]/g)].map((m) => m[1]))].join(", ") || "none";
    console.log(
      `harbor lint (default rules), ${exported.tasks.length} tasks: exit ${lint.code}, findings: ${rules(lint.output)} (${lint.seconds.toFixed(1)} s)`,
    );
    console.log(`harbor lint --select ALL: exit ${all.code}, findings: ${rules(all.output)}`);
  }

  const report = async (job: string) => {
    const b = bench();
    try {
      const loaded = loadHarborReports(join(jobsDir, job), sessionsDir, {
        heldout: (id) => b.heldout(id),
        rules: (repo) => b.profiles.profiles.get(repo)?.profile.classification,
      });
      const written = await writeReport(job, loaded, sessionsDir, join(dir, "reports", job));
      return { ...loaded, table: readFileSync(written.files[0]!, "utf8") };
    } finally {
      await b.close();
    }
  };
  /** Mean seconds a trial: the whole trial, its environment's setup, and its steps' agent and verifier phases summed. */
  const trialTimes = (job: string) => {
    type Phase = { started_at?: string; finished_at?: string } | null | undefined;
    const secondsOf = (p: Phase) => (p?.started_at && p.finished_at ? (Date.parse(p.finished_at) - Date.parse(p.started_at)) / 1000 : 0);
    const phases = { trial: [] as number[], environment: [] as number[], agent: [] as number[], verifier: [] as number[] };
    const walk = (d: string) => {
      for (const trial of readdirSync(d)) {
        const file = join(d, trial, "result.json");
        if (!existsSync(file)) {
          if (lstatSync(join(d, trial)).isDirectory() && existsSync(join(d, trial, "config.json"))) walk(join(d, trial));
          continue;
        }
        const result = JSON.parse(readFileSync(file, "utf8")) as {
          started_at?: string;
          finished_at?: string;
          environment_setup?: Phase;
          step_results?: { agent_execution?: Phase; verifier?: Phase }[] | null;
        };
        const steps = result.step_results ?? [];
        phases.trial.push(secondsOf(result));
        phases.environment.push(secondsOf(result.environment_setup));
        phases.agent.push(steps.reduce((n, s) => n + secondsOf(s.agent_execution), 0));
        phases.verifier.push(steps.reduce((n, s) => n + secondsOf(s.verifier), 0));
      }
    };
    walk(join(jobsDir, job));
    const mean = (xs: number[]) => (xs.length ? (xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(1) : "-");
    return `mean s a trial: ${mean(phases.trial)} (environment ${mean(phases.environment)}, the steps' agents ${mean(phases.agent)}, the steps' verifiers ${mean(phases.verifier)})`;
  };
  const resolvedOf = (reports: { report: VerificationReport }[], condition: string) =>
    reports.filter((r) => r.report.condition === condition && r.report.resolved).length;

  for (const agent of ["oracle", "nop"].filter((a) => steps.has(a))) {
    rmSync(join(jobsDir, agent), { recursive: true, force: true });
    t = Date.now();
    const ran = await harbor(["harbor", "run", "-p", tasks, "-a", agent, "-n", jobs, "--jobs-dir", jobsDir, "--job-name", agent, "-y", "--no-delete"], {
      mounts,
      cwd: dir,
      log: join(dir, `${agent}.log`),
    });
    const r = await report(agent);
    console.log(
      `harbor run -a ${agent}, ${exported.tasks.length} tasks, -n ${jobs}: exit ${ran.code} in ${seconds(t)} s; resolved ${conditions.map((c) => `${c} ${resolvedOf(r.reports, c)}/${exportedSessions}`).join(", ")}; ${r.problems.length} problem(s)${r.problems.length ? `: ${r.problems.slice(0, 3).join(" | ")}` : ""}; ${trialTimes(agent)}`,
    );
  }

  const opened2 = bench();
  const knowledge = await benchmarkKnowledge(opened2).finally(() => opened2.close());
  const tasksOf = (ids: string[]) => ids.flatMap((id) => [taskDirName(id, "control"), taskDirName(id, "switched")].map((n) => `*${n}`));
  const sessionTasks = tasksOf([session]);
  if (steps.has("resume")) await resumeCapability(exported.tasks[0]!);
  const agentContext = { dataset, jobsDir, toolsDir, mounts, cwd: dir, knowledge, log };
  const agentTasks = tasksOf(agentSessions);
  /** Each trial's conversation as its own endpoint saw it: the requests its calls carry, stretch by stretch (one stretch: one growing conversation). */
  const growthLines = (trials: TrialJob[]) =>
    trials.map((trial) => {
      const growth = conversationGrowth(trial.endpoint, knowledge);
      return `    ${trial.jobName}: exit ${trial.code}, ${trial.endpoint.calls.length} model calls, ${growth.stretches.length} stretch(es): ${growth.stretches.map((s) => s.join(" ")).join(" | ")}`;
    });
  // Harness by harness: natively (and beside run-all), then through each relay, so that a configuration's Table 3 is complete as early as it can be.
  for (const harness of harnesses) {
    if (steps.has("agents")) {
      rmSync(join(jobsDir, harness), { recursive: true, force: true });
      const ran = await runAgentJob({ harness, configuration: harness, tasks: agentTasks }, agentContext);
      const viaHarbor = await report(harness);
      console.log(
        `Harbor's ${harness} (--resume-trajectory), sessions ${agentSessions.join(", ")}: ${ran.trials.length} trials in ${ran.seconds.toFixed(1)} s, each its own endpoint:\n${growthLines(ran.trials).join("\n")}`,
      );
      for (const problem of viaHarbor.problems) console.log(`  report problem: ${problem}`);
      await compareWithRunAll(harness, viaHarbor.reports);
      console.log(`\nreport --harbor (${harness}):\n${viaHarbor.table}`);
    }
    if (steps.has("relays") && harness !== "opencode")
      for (const relay of ["router", "rcm"] as const) {
        const configuration = `${harness}-${relay}`;
        rmSync(join(jobsDir, configuration), { recursive: true, force: true });
        const ran = await runAgentJob({ harness, configuration, relay, tasks: sessionTasks }, agentContext);
        const viaHarbor = await report(configuration);
        console.log(
          `Harbor's ${harness} through switch-swe's relay (${relay}), session ${session}: ${ran.trials.length} trials in ${ran.seconds.toFixed(1)} s; resolved control ${resolvedOf(viaHarbor.reports, "control")}/1, switched ${resolvedOf(viaHarbor.reports, "switched")}/1; ${viaHarbor.problems.length} problem(s)\n${growthLines(ran.trials).join("\n")}`,
        );
        for (const problem of viaHarbor.problems) console.log(`  report problem: ${problem}`);
      }
  }
  if (steps.has("relays") || steps.has("agents")) {
    const all = await report(".");
    console.log(`\nreport --harbor over every job:\n${all.table}`);
  }

  /** Which agents Harbor 0.26 lets resume (its package's own declaration), and one without it refused on a multi-step task before any environment starts. */
  async function resumeCapability(task: string) {
    const support = await harborResumeSupport({ mounts, cwd: dir });
    console.log(`Harbor ${HARBOR_VERSION}'s agents declaring resume (${support.resume.length}): ${support.resume.join(", ")}`);
    console.log(`without (${support.without.length}): ${support.without.join(", ")}`);
    rmSync(join(jobsDir, "refused"), { recursive: true, force: true });
    const refused = await harbor(
      [
        "harbor",
        "run",
        "-p",
        tasks,
        "-i",
        task,
        "-a",
        "terminus-2",
        "-m",
        "openai/scripted",
        "--resume-trajectory",
        "--jobs-dir",
        jobsDir,
        "--job-name",
        "refused",
        "-y",
      ],
      { mounts, cwd: dir, env: { OPENAI_API_KEY: "unused" }, log: join(dir, "refused.log") },
    );
    // Harbor's console draws its traceback in a box: the frame is taken out and the lines joined.
    const text = refused.output.replace(/[│╭╮╰╯─]/g, " ").replace(/\s+/g, " ");
    const message = /Agent '[^']+' does not support resume; cannot honor agent\.resume_trajectory/.exec(text)?.[0];
    // A refused trial has a directory but no result: it never started an environment.
    const refusedDir = join(jobsDir, "refused");
    const trials = readdirSync(refusedDir).filter((n) => statSync(join(refusedDir, n)).isDirectory());
    const results = trials.filter((n) => existsSync(join(refusedDir, n, "result.json"))).length;
    console.log(
      `harbor run -a terminus-2 --resume-trajectory on ${task}: exit ${refused.code}, ${message ?? "no refusal in its output (see refused.log)"}; ${trials.length} trial directory, ${results} with a result`,
    );
  }

  /** The same session run by `session run-all` with the same harness in the focus task's environment, its own endpoint; verdicts and usage side by side. */
  async function compareWithRunAll(harness: Harness, viaHarbor: { report: VerificationReport }[]) {
    const agent = loadAgent(join("data", "agents", HARBOR_AGENTS[harness].adapter));
    await installAgent(agent, toolsDir);
    const endpoint = await ModelEndpoint.start({ script: "solve", knowledge });
    try {
      for (const old of [`run-all-${harness}`, `run-all-work-${harness}`]) rmSync(join(dir, old), { recursive: true, force: true });
      t = Date.now();
      const direct = await runAllSessions(bench(), {
        manifest,
        conditions,
        agent,
        out: join(dir, `run-all-${harness}`, harness),
        work: join(dir, `run-all-work-${harness}`),
        jobs: 1,
        log,
        only: agentSessions,
        model: { url: endpoint.url, key: "switch-swe-loopback" },
        toolsDir,
      });
      console.log(`  session run-all (${agent.name}) in ${seconds(t)} s, ${endpoint.calls.length} model calls`);
      for (const id of agentSessions)
        for (const condition of ["control", "switched"] as const) {
          const h = viaHarbor.find((r) => r.report.session_id === id && r.report.condition === condition)?.report;
          const d = direct.ran.find((r) => r.session_id === id && r.condition === condition);
          const usage = (r?: VerificationReport) => JSON.stringify(r?.behaviour?.usage?.all ?? null);
          console.log(`  ${id} ${condition}: harbor ${h?.resolved ? "resolved" : "not resolved"}, run-all ${d?.resolved ? "resolved" : "not resolved"}`);
          console.log(`    usage harbor  ${usage(h)}\n    usage run-all ${usage(d)}`);
          console.log(
            `    cross-task writes harbor ${h?.behaviour?.cross_task_write_requests ?? "-"}, run-all ${d?.behaviour?.cross_task_write_requests ?? "-"}; requests ${h?.behaviour?.requests ?? "-"} / ${d?.behaviour?.requests ?? "-"}`,
          );
        }
      const runAllReport = await writeResultsReport(join(dir, `run-all-${harness}`), sessionsDir, join(dir, "reports", `run-all-${harness}`));
      console.log(`  report --results (run-all):\n${readFileSync(runAllReport.files[0]!, "utf8")}`);
    } finally {
      await endpoint.close();
    }
  }
} finally {
  // The tasks' images are kept between runs (--no-delete: Harbor would remove each and build it again); removed at the end.
  removeImagesSince(imagesBefore);
  if (!keep) rmSync(dir, { recursive: true, force: true });
}
