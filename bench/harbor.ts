// The demo benchmark run by Harbor (docs/HARBOR.md): the demo built from its corpus, exported as a
// Harbor dataset (switch-swe export harbor), checked with Harbor's own task lint, then run with
// Harbor's local Docker environment: Harbor's oracle over every task (the reference resolves each
// focus task), Harbor's nop agent over every task (nothing resolves), and one real harness through
// the session agent (switch_swe_harbor) against the scripted `solve` model on loopback, for one
// switched session and its control, beside `session run-all` of the same harness in the focus
// task's environment on the same sessions. `report --harbor` then builds the tables from each job,
// and the verdicts and usage of the two runners are printed side by side. Harbor runs in a
// container (bench/harbor-runner.ts); every step's seconds are printed.
// Usage: npm run bench:harbor [-- --harness claude-code --session session-demo-org__geometry-20 --sessions 4|ID,ID --jobs 2 --steps lint,oracle,nop,harness --keep DIR]
// --sessions exports a sample (a count: the harness's session and the next ones of the benchmark's list; or ids, the harness's session added), default all.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { exportHarbor } from "../pipeline/export/harbor.ts";
import { buildNetworkSettings } from "../pipeline/executors/types.ts";
import { createLogger } from "../pipeline/logger.ts";
import { benchmarkKnowledge } from "../pipeline/model-endpoint/knowledge.ts";
import { ModelEndpoint } from "../pipeline/model-endpoint/server.ts";
import { OpenedBenchmark } from "../pipeline/project/benchmark.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { loadHarborReports } from "../pipeline/report/harbor-job.ts";
import { writeReport, writeResultsReport } from "../pipeline/report/results.ts";
import { SessionIndex } from "../pipeline/schemas/session.ts";
import type { VerificationReport } from "../pipeline/schemas/verification.ts";
import { installAgent } from "../pipeline/session/install.ts";
import { DEFAULT_TOOLS_DIR, loadAgent } from "../pipeline/session/agents.ts";
import { runAllSessions } from "../pipeline/session/runs.ts";
import { BUILT_STAGES } from "../stages/index.ts";
import { prepareDemoCopy, withExecution } from "../test/helpers/demo-copy.ts";
import { BenchmarkLayout } from "../pipeline/benchmark-layout.ts";
import {
  bridgeGateway,
  egressControlAvailable,
  ensureHarborImage,
  forwardFromBridge,
  harbor,
  harborTaskImages,
  HARBOR_VERSION,
  removeImagesSince,
} from "./harbor-runner.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const harness = arg("harness", "claude-code");
const steps = new Set(arg("steps", "lint,oracle,nop,harness").split(","));
const jobs = arg("jobs", "2");
const keep = process.argv.includes("--keep") ? resolve(arg("keep", "")) : undefined;
const toolsDir = resolve(DEFAULT_TOOLS_DIR);
const caBundle = buildNetworkSettings().caBundle;
if (!caBundle) throw new Error("no CA bundle on this machine");
const log = createLogger({ level: "warn", write: (line) => process.stderr.write(line + "\n") });
const dir = keep ?? mkdtempSync(join(tmpdir(), "switch-swe-bench-harbor-"));
const imagesBefore = harborTaskImages();
mkdirSync(dir, { recursive: true });
/** The sessions to export: every one (undefined), a count starting at the harness's session (in the list's order, wrapping), or ids. */
function sampleOf(all: string[], first: string, spec: string): string[] | undefined {
  if (!spec) return undefined;
  if (!/^\d+$/.test(spec)) return [...new Set([first, ...spec.split(",")])];
  const start = all.indexOf(first);
  return Array.from({ length: Math.min(Number(spec), all.length) }, (_, i) => all[(start + i) % all.length]!);
}
const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1);

try {
  let t = Date.now();
  const built = ensureHarborImage(caBundle);
  console.log(`Harbor ${HARBOR_VERSION} in ${"switch-swe-harbor"}: ${built ? `image built in ${built.toFixed(0)} s` : "image present"}`);
  t = Date.now();
  const demo = await prepareDemoCopy(join(dir, "demo-copy"));
  const run = await runProjectOnce(withExecution(demo.options, { executor: "local" })).finally(() => demo.server.stop());
  if (!run.ok) throw new Error("the demo pipeline did not finish");
  const manifest = join(demo.workDir, "..", "..", "manifests", "demo");
  const sessionsDir = new BenchmarkLayout(manifest, join(manifest, "heldout")).sessionsDir;
  const sessions = SessionIndex.parse(JSON.parse(readFileSync(BenchmarkLayout.sessionIndexIn(sessionsDir), "utf8"))).sessions;
  const session = arg("session", sessions.find((s) => s.locality === "near")!.session_id);
  const sample = sampleOf(
    sessions.map((s) => s.session_id),
    session,
    arg("sessions", ""),
  );
  console.log(`demo built (${sessions.length} sessions) in ${seconds(t)} s; exporting ${sample ? `${sample.length}: ${sample.join(", ")}` : "all"}`);
  const bench = () => OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log });

  // Harbor's Docker environment refuses a no-network verifier it cannot enforce (its egress-control images come from Docker Hub).
  const verifierNetwork = egressControlAvailable() ? "no-network" : "public";
  console.log(`verifier network: ${verifierNetwork}${verifierNetwork === "public" ? " (Harbor's egress-control images cannot be pulled here)" : ""}`);
  t = Date.now();
  const dataset = join(dir, "dataset");
  const opened = bench();
  const exported = await exportHarbor(opened, {
    out: dataset,
    sessions: sample,
    conditions: ["control", "switched"],
    adapters: [resolve("data/agents", `${harness}-environment.yaml`)],
    images: { caBundle: readFileSync(caBundle, "utf8") },
    agentUser: { name: "agent", uid: 1000 },
    pollSeconds: 1,
    verifierNetwork,
    log,
  }).finally(() => opened.close());
  console.log(`export: ${exported.tasks.length} tasks in ${seconds(t)} s`);

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
  const trialTimes = (job: string) => {
    const phases = { environment_setup: [] as number[], agent_execution: [] as number[], verifier: [] as number[] };
    for (const trial of readdirSync(join(jobsDir, job))) {
      const file = join(jobsDir, job, trial, "result.json");
      if (!existsSync(file)) continue;
      const result = JSON.parse(readFileSync(file, "utf8")) as Record<string, { started_at?: string; finished_at?: string } | undefined>;
      for (const phase of Object.keys(phases) as (keyof typeof phases)[]) {
        const p = result[phase];
        if (p?.started_at && p.finished_at) phases[phase].push((Date.parse(p.finished_at) - Date.parse(p.started_at)) / 1000);
      }
    }
    const mean = (xs: number[]) => (xs.length ? (xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(1) : "-");
    return `mean s a trial: environment ${mean(phases.environment_setup)}, agent ${mean(phases.agent_execution)}, verifier ${mean(phases.verifier)}`;
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
      `harbor run -a ${agent}, ${exported.tasks.length} tasks, -n ${jobs}: exit ${ran.code} in ${seconds(t)} s; resolved control ${resolvedOf(r.reports, "control")}/${exported.tasks.length / 2}, switched ${resolvedOf(r.reports, "switched")}/${exported.tasks.length / 2}; ${r.problems.length} problem(s)${r.problems.length ? `: ${r.problems[0]}` : ""}; ${trialTimes(agent)}`,
    );
  }

  if (steps.has("harness")) await compareHarness();

  async function compareHarness() {
    const agent = loadAgent(join("data", "agents", `${harness}-environment.yaml`));
    await installAgent(agent, toolsDir);
    const b = bench();
    const knowledge = await benchmarkKnowledge(b).finally(() => b.close());
    // One endpoint for each runner: its prompt cache lives as long as it does, so a shared one would
    // serve the second runner's first requests from the first runner's calls (the same tokens, split
    // otherwise between input and cached input). One trial at a time, as run-all's one job.
    const endpoint = await ModelEndpoint.start({ script: "solve", knowledge });
    const forward = await forwardFromBridge(bridgeGateway(), Number(new URL(endpoint.url).port));
    const runAllEndpoint = await ModelEndpoint.start({ script: "solve", knowledge });
    try {
      rmSync(join(jobsDir, harness), { recursive: true, force: true });
      for (const old of ["run-all", "run-all-work"]) rmSync(join(dir, old), { recursive: true, force: true });
      t = Date.now();
      const ran = await harbor(
        [
          "harbor",
          "run",
          "-p",
          tasks,
          "-i",
          `*${session}.*`,
          "-n",
          "1",
          "--jobs-dir",
          jobsDir,
          "--job-name",
          harness,
          "-y",
          "--no-delete",
          "--agent",
          "switch_swe_harbor.agent:SwitchSweSession",
          "--agent-kwarg",
          `harness=${harness}`,
          "--agent-kwarg",
          `tools_dir=${toolsDir}`,
          "--agent-kwarg",
          `model_url=${forward.url}`,
          "--agent-kwarg",
          "model_key_env=SWITCH_SWE_BENCH_KEY",
        ],
        { mounts, cwd: dir, env: { PYTHONPATH: dataset, SWITCH_SWE_BENCH_KEY: "switch-swe-loopback" }, log: join(dir, `${harness}.log`) },
      );
      const harborSeconds = seconds(t);
      const harborCalls = endpoint.calls.length;
      const viaHarbor = await report(harness);
      t = Date.now();
      const direct = await runAllSessions(bench(), {
        manifest,
        conditions: ["control", "switched"],
        agent,
        out: join(dir, "run-all", harness),
        work: join(dir, "run-all-work"),
        jobs: 1,
        log,
        only: [session],
        model: { url: runAllEndpoint.url, key: "switch-swe-loopback" },
        toolsDir,
      });
      console.log(
        `${harness} ${agent.install!.version}, session ${session}, solve script: harbor run exit ${ran.code} in ${harborSeconds} s (${harborCalls} model calls); run-all in ${seconds(t)} s (${runAllEndpoint.calls.length} model calls); ${trialTimes(harness)}`,
      );
      for (const problem of viaHarbor.problems) console.log(`  report problem: ${problem}`);
      for (const condition of ["control", "switched"] as const) {
        const h = viaHarbor.reports.find((r) => r.report.condition === condition)?.report;
        const d = direct.ran.find((r) => r.condition === condition);
        const usage = (r?: VerificationReport) => JSON.stringify(r?.behaviour?.usage?.all ?? null);
        console.log(`  ${condition}: harbor ${h?.resolved ? "resolved" : "not resolved"}, run-all ${d?.resolved ? "resolved" : "not resolved"}`);
        console.log(
          `    usage harbor  ${usage(h)}\n    usage run-all ${usage(d)}\n    same usage: ${usage(h) === usage(d)}; Switch-Focus same: ${JSON.stringify(h?.behaviour?.usage?.focus_resumed) === JSON.stringify(d?.behaviour?.usage?.focus_resumed)}`,
        );
      }
      console.log(`\nreport --harbor (${harness}):\n${viaHarbor.table}`);
      const runAllReport = await writeResultsReport(join(dir, "run-all"), sessionsDir, join(dir, "reports", "run-all"));
      console.log(`report --results (run-all):\n${readFileSync(runAllReport.files[0]!, "utf8")}`);
    } finally {
      await forward.close();
      await endpoint.close();
      await runAllEndpoint.close();
    }
  }
} finally {
  // The tasks' images are kept between runs (--no-delete: Harbor would remove each and build it again); removed at the end.
  removeImagesSince(imagesBefore);
  if (!keep) rmSync(dir, { recursive: true, force: true });
}
