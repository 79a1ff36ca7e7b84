// The first real benchmark, built end to end from real records (data/benchmarks/sympy-lite.yaml):
// thirteen SWE-bench Lite sympy tasks with their benchmark-authored extensions, qualified in
// Docker, audited, proved by the oracle, emitted as sessions. Runs the shipped config in a
// directory of its own (the config and its extension files copied there, its paths pointed at the
// records and profiles where they are), times it, and checks what the benchmark promises.
//
//   npm run bench:sympy-lite -- [--mirrors DIR] [--records FILE] [--keep DIR]
//   npm run bench:sympy-lite -- --check WORK_DIR     # only the checks, on a run already made
//
// --mirrors: local copies of repositories (default $SWITCH_SWE_MIRRORS; without either sympy is
// cloned from GitHub). --records: SWE-bench Lite's test split (default: the config's own path).
// --keep: build in DIR and leave it there (a second run reuses what is built).
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { formatSummary, Project } from "../pipeline/project/project.ts";
import { createLogger } from "../pipeline/logger.ts";
import type { AuditRecord } from "../pipeline/schemas/audit.ts";
import type { OracleRecord } from "../pipeline/schemas/oracle.ts";
import type { QualificationRecord } from "../pipeline/schemas/qualification.ts";
import type { SessionSpec } from "../pipeline/schemas/session.ts";
import type { Task } from "../pipeline/schemas/task.ts";
import type { ValidationReport } from "../pipeline/schemas/validation.ts";
import { BUILT_STAGES } from "../stages/index.ts";
import { benchmarkProfile, profileBesideStudy } from "../stages/emit/profile.ts";
import { WorkLayout } from "../pipeline/work-layout.ts";

const root = fileURLToPath(new URL("../", import.meta.url));
const { values } = parseArgs({ options: { mirrors: { type: "string" }, records: { type: "string" }, keep: { type: "string" }, check: { type: "string" } } });
if (values.check) {
  // A run made with the shipped config (switch-swe run -c data/benchmarks/sympy-lite.yaml): its work directory.
  process.exit(checkBenchmark(new WorkLayout(resolve(values.check)).artifacts) ? 0 : 1);
}
const shipped = join(root, "data", "benchmarks", "sympy-lite.yaml");
const records = resolve(values.records ?? join(dirname(shipped), "../../../shared/data/swebench-lite-test-half.jsonl"));
if (!existsSync(records)) throw new Error(`no SWE-bench Lite test split at ${records}: give --records FILE`);

const dir = values.keep ? resolve(values.keep) : mkdtempSync(join(tmpdir(), "switch-swe-sympy-lite-"));
mkdirSync(join(dir, "benchmarks"), { recursive: true });
cpSync(join(root, "data", "benchmarks", "sympy-lite"), join(dir, "benchmarks", "sympy-lite"), { recursive: true });
const config = readFileSync(shipped, "utf8")
  .replace(/^work_dir: .*$/m, "work_dir: ../work")
  .replace(/^profiles_dir: .*$/m, `profiles_dir: ${join(root, "data", "repos")}`)
  .replace(/- file: \S+swebench-lite-test-half\.jsonl/, `- file: ${records}`)
  .replaceAll("../../manifests/", "../manifests/")
  .replaceAll("../../audits/", "../audits/");
const configPath = join(dir, "benchmarks", "sympy-lite.yaml");
writeFileSync(configPath, config);

const mirrors = values.mirrors ?? process.env.SWITCH_SWE_MIRRORS;
const project = Project.open(configPath, { stages: BUILT_STAGES, log: createLogger(), overrides: mirrors ? { mirrors } : {} });
const started = performance.now();
let ok = false;
try {
  const summary = await project.run({});
  const seconds = (performance.now() - started) / 1000;
  console.log(formatSummary(summary));
  console.log(`\nwall time: ${(seconds / 60).toFixed(1)} min (${dir})`);
  ok = summary.ok && checkBenchmark(new WorkLayout(join(dir, "work")).artifacts);
} finally {
  await project.close();
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
}
process.exitCode = ok ? 0 : 1;

function readJsonl<T>(path: string): T[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);
}

/** What the benchmark promises, each a line with its figure; false if any does not hold. */
function checkBenchmark(artifacts: string): boolean {
  const sessions = readJsonl<SessionSpec>(join(artifacts, "validate", "sessions.jsonl"));
  const reports = readJsonl<ValidationReport>(join(artifacts, "validate", "reports.jsonl"));
  const tasks = new Map(readJsonl<Task>(join(artifacts, "audit", "tasks.jsonl")).map((t) => [t.id, t]));
  const audits = new Map(readJsonl<AuditRecord>(join(artifacts, "audit", "records.jsonl")).map((a) => [a.task_id, a]));
  const qualifications = new Map(readJsonl<QualificationRecord>(join(artifacts, "qualify", "qualifications.jsonl")).map((q) => [q.task_id, q]));
  const oracle = new Map(readJsonl<OracleRecord>(join(artifacts, "oracle", "results.jsonl")).map((o) => [o.task_id, o]));
  const focus = [...new Set(sessions.map((s) => s.focus))];
  const checks: [string, boolean][] = [];
  const near = sessions.filter((s) => s.locality === "near").length;
  checks.push([
    `sessions emitted: ${sessions.length} (${near} near, ${sessions.length - near} far); at least 4 focus tasks, near and far`,
    focus.length >= 4 && near > 0 && near < sessions.length,
  ]);
  checks.push([
    `every session pair validates: ${reports.filter((r) => r.passed).length} of ${reports.length}`,
    reports.length === sessions.length && reports.every((r) => r.passed),
  ]);
  checks.push([
    `every session interleaves four distinct same-repository tasks: ${sessions.filter((s) => new Set(s.interruptions).size === 4).length} of ${sessions.length}`,
    sessions.every((s) => new Set(s.interruptions).size === 4 && !s.interruptions.includes(s.focus)),
  ]);
  const stages = focus.map((id) => tasks.get(id)?.requests.length ?? 0);
  checks.push([
    `focus tasks with 3 substantive stages or more: ${stages.filter((n) => n >= 3).length} of ${focus.length} (stages: ${stages.join(", ")})`,
    stages.every((n) => n >= 3),
  ]);
  let authored = 0;
  let linked = 0;
  let fail2pass = 0;
  for (const task of tasks.values()) {
    const links = new Map((audits.get(task.id)?.links ?? []).map((l) => [l.test, l.stages]));
    const f2p = new Set(qualifications.get(task.id)?.fail_to_pass ?? []);
    for (const request of task.requests.filter((r) => r.provenance.sources.some((s) => s.kind === "authored"))) {
      authored++;
      if (request.tests?.length && request.tests.every((t) => f2p.has(t))) fail2pass++;
      if (request.tests?.length && request.tests.every((t) => links.get(t)?.includes(request.stage))) linked++;
    }
  }
  checks.push([
    `authored stages whose tests are all F2P: ${fail2pass} of ${authored}; linked to their stage by the audit: ${linked} of ${authored}`,
    authored > 0 && fail2pass === authored && linked === authored,
  ]);
  const proved = focus.filter((id) => {
    const o = oracle.get(id);
    return (
      o?.passed && o.runs.filter((r) => r.patch === "reference").every((r) => r.resolved) && o.runs.filter((r) => r.patch === "empty").every((r) => !r.resolved)
    );
  });
  checks.push([`focus tasks the oracle resolves in every run, the empty patch in none: ${proved.length} of ${focus.length}`, proved.length === focus.length]);
  for (const [line, passed] of checks) console.log(`${passed ? "ok  " : "FAIL"}  ${line}`);
  console.log("");
  for (const line of profileBesideStudy(benchmarkProfile(sessions))) console.log(line);
  return checks.every(([, passed]) => passed);
}
