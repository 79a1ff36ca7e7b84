// What a benchmark from real records promises, each a line with its figure (bench/real-benchmark.ts).
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { promisify } from "node:util";
import { join } from "node:path";
import type { AuditRecord } from "../pipeline/schemas/audit.ts";
import type { OracleRecord } from "../pipeline/schemas/oracle.ts";
import type { QualificationRecord } from "../pipeline/schemas/qualification.ts";
import type { RuleExclusionRecord, RevertRecord } from "../pipeline/schemas/selection.ts";
import type { SessionSpec } from "../pipeline/schemas/session.ts";
import type { Task } from "../pipeline/schemas/task.ts";
import type { ValidationReport } from "../pipeline/schemas/validation.ts";
import { benchmarkProfile, profileBesideStudy } from "../stages/emit/profile.ts";

const execFileAsync = promisify(execFile);

export function readJsonl<T>(path: string): T[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);
}

/** Where a request came from: the task's upstream record, a commit of its pull request, or an authored extension. */
function origin(request: Task["requests"][number]): "upstream" | "upstream-commit" | "authored" {
  const kinds = request.provenance.sources.map((s) => s.kind);
  return kinds.includes("authored") ? "authored" : kinds.includes("upstream_commit" as never) ? "upstream-commit" : "upstream";
}

/** The checks, printed; false if any does not hold. `select` is the config's select section. */
export function checkBuiltBenchmark(
  artifacts: string,
  select: { near: number; far: number; min_focus_stages?: number; min_interruption_stages?: number },
): boolean {
  const sessions = readJsonl<SessionSpec>(join(artifacts, "validate", "sessions.jsonl"));
  const reports = readJsonl<ValidationReport>(join(artifacts, "validate", "reports.jsonl"));
  const tasks = new Map(readJsonl<Task>(join(artifacts, "oracle", "tasks.jsonl")).map((t) => [t.id, t]));
  const audits = new Map(readJsonl<AuditRecord>(join(artifacts, "audit", "records.jsonl")).map((a) => [a.task_id, a]));
  const qualifications = new Map(readJsonl<QualificationRecord>(join(artifacts, "qualify", "qualifications.jsonl")).map((q) => [q.task_id, q]));
  const oracle = new Map(readJsonl<OracleRecord>(join(artifacts, "oracle", "results.jsonl")).map((o) => [o.task_id, o]));
  const exclusions = readJsonl<RuleExclusionRecord>(join(artifacts, "select", "exclusions.jsonl"));
  const reverts = readJsonl<RevertRecord>(join(artifacts, "select", "reverts.jsonl"));
  const focus = [...new Set(sessions.map((s) => s.focus))];
  const checks: [string, boolean][] = [];
  const near = sessions.filter((s) => s.locality === "near").length;
  const far = sessions.length - near;
  checks.push([
    `sessions emitted: ${sessions.length} (${near} near of ${select.near} configured, ${far} far of ${select.far}) from ${new Set(sessions.map((s) => s.repo)).size} repositor(ies)`,
    near > 0 && far > 0,
  ]);
  checks.push([
    `every session pair validates (the answer rule re-checked from the repositories): ${reports.filter((r) => r.passed).length} of ${reports.length}`,
    reports.length === sessions.length && reports.every((r) => r.passed),
  ]);
  checks.push([`focus ids unique: ${focus.length} of ${sessions.length}`, focus.length === sessions.length]);
  const minFocus = select.min_focus_stages ?? 2;
  const stages = focus.map((id) => tasks.get(id)?.requests.length ?? 0);
  checks.push([
    `focus tasks of ${minFocus} substantive stages or more: ${stages.filter((n) => n >= minFocus).length} of ${focus.length}`,
    stages.every((n) => n >= minFocus),
  ]);
  const minInterruption = select.min_interruption_stages ?? 1;
  const interruptions = [...new Set(sessions.flatMap((s) => s.interruptions))];
  checks.push([
    `interruption tasks of ${minInterruption} stage(s) or more: ${interruptions.filter((id) => (tasks.get(id)?.requests.length ?? 0) >= minInterruption).length} of ${interruptions.length} (${sessions.reduce((n, s) => n + s.interruptions.length, 0) - interruptions.length} reuses across sessions)`,
    interruptions.every((id) => (tasks.get(id)?.requests.length ?? 0) >= minInterruption),
  ]);
  let authored = 0;
  let linked = 0;
  let fail2pass = 0;
  for (const task of tasks.values()) {
    const links = new Map((audits.get(task.id)?.links ?? []).map((l) => [l.test, l.stages]));
    const f2p = new Set(qualifications.get(task.id)?.fail_to_pass ?? []);
    for (const request of task.requests.filter((r) => origin(r) === "authored")) {
      authored++;
      if (request.tests?.length && request.tests.every((t) => f2p.has(t))) fail2pass++;
      if (request.tests?.length && request.tests.every((t) => links.get(t)?.includes(request.stage))) linked++;
    }
  }
  checks.push([
    `authored stages whose tests are all F2P: ${fail2pass} of ${authored}; linked to their stage by the audit: ${linked} of ${authored}`,
    fail2pass === authored && linked === authored,
  ]);
  const proved = focus.filter((id) => {
    const o = oracle.get(id);
    return (
      o?.passed && o.runs.filter((r) => r.patch === "reference").every((r) => r.resolved) && o.runs.filter((r) => r.patch === "empty").every((r) => !r.resolved)
    );
  });
  checks.push([`focus tasks the oracle resolves in every run, the empty patch in none: ${proved.length} of ${focus.length}`, proved.length === focus.length]);
  for (const [line, passed] of checks) console.log(`${passed ? "ok  " : "FAIL"}  ${line}`);
  const byReason = new Map<string, number>();
  for (const e of exclusions) byReason.set(e.reason, (byReason.get(e.reason) ?? 0) + 1);
  console.log(
    `\nanswer rule: ${exclusions.length} candidate interruption(s) kept out over ${new Set(exclusions.map((e) => e.focus)).size} focus candidate(s) (${[...byReason].map(([r, n]) => `${r} ${n}`).join(", ") || "none"}); reverts tried ${reverts.length}, viable ${reverts.filter((r) => r.viable).length}; derived checkouts in sessions ${sessions.reduce((n, s) => n + s.checkouts.filter((c) => c.derived).length, 0)}; interruption answers reported ${reports.reduce((n, r) => n + r.interruption_answers.length, 0)} in ${reports.filter((r) => r.interruption_answers.length).length} session(s)`,
  );
  console.log("\ncomposition (stages of the tasks in sessions, by where their request comes from):");
  const repos = [...new Set(sessions.map((s) => s.repo))].sort();
  for (const repo of repos) {
    const used = [...new Set(sessions.filter((s) => s.repo === repo).flatMap((s) => [s.focus, ...s.interruptions]))];
    const count = { upstream: 0, "upstream-commit": 0, authored: 0 };
    for (const id of used) for (const r of tasks.get(id)?.requests ?? []) count[origin(r)]++;
    console.log(
      `  ${repo}: ${sessions.filter((s) => s.repo === repo).length} session(s), ${used.length} task(s); stages upstream ${count.upstream}, upstream-commit ${count["upstream-commit"]}, authored ${count.authored}`,
    );
  }
  console.log("");
  for (const line of profileBesideStudy(benchmarkProfile(sessions))) console.log(line);
  return checks.every(([, passed]) => passed);
}

/**
 * SPEC §2.7, what else could reveal an answer: the environment images of the benchmark's tasks must
 * not hold the repository at another revision. In every revision image of these repositories,
 * each package root of the profile imports from the checkout at its base (/work), and no other
 * copy of it is anywhere in the image (a release a dependency pulled in, a cache).
 */
export async function checkEnvironmentImages(packages: ReadonlyMap<string, string[]>, used: ReadonlySet<string>): Promise<boolean> {
  const run = (args: string[]) => execFileAsync("docker", args, { maxBuffer: 1 << 26 }).then((r) => r.stdout.trim());
  const images = (await run(["images", "--filter", "label=org.switch-swe.repo", "--format", "{{.Repository}}:{{.Tag}}"]))
    .split("\n")
    .filter((i) => i.startsWith("switch-swe-rev:"));
  let checked = 0;
  let unused = 0;
  const problems: string[] = [];
  for (const image of images) {
    const [repo, commit] = (
      await run(["inspect", image, "--format", '{{index .Config.Labels "org.switch-swe.repo"}} {{index .Config.Labels "org.switch-swe.base-commit"}}'])
    ).split(" ");
    const roots = packages.get(repo!);
    if (!roots) continue;
    // An image of a checkout no task or session uses (a revert select tried and refused: its package may not even import) is no part of the benchmark.
    if (!used.has(commit!)) {
      unused++;
      continue;
    }
    checked++;
    // Package directories only: a root that is one module (pytest's src/py.py shim) shares its name with a dependency.
    for (const pkg of roots.filter((r) => !r.endsWith(".py"))) {
      const name = pkg.split("/").pop()!;
      const script = `find / -xdev \\( -path '*/${name}/__init__.py' -o -name '${name}.py' -o -iname '${name}-*.whl' \\) -not -path '/work/*' -not -path '/proc/*' 2>/dev/null | grep -v '/env/lib/python[0-9.]*/site-packages/__editable__' | head -3; /env/bin/python -c 'import ${name}; print(${name}.__file__)' 2>/dev/null`;
      const out = (await run(["run", "--rm", "--network", "none", "--entrypoint", "sh", image, "-c", script]).catch((e: Error) => `failed: ${e.message}`))
        .split("\n")
        .filter(Boolean);
      const imported = out.at(-1) ?? "";
      const copies = out.slice(0, -1);
      if (!imported.startsWith("/work/") || copies.length)
        problems.push(`${image} (${repo}): ${name} imports from ${imported || "nowhere"}${copies.length ? `; other copies: ${copies.join(", ")}` : ""}`);
    }
  }
  console.log(
    `${problems.length ? "FAIL" : "ok  "}  environment images hold their repository at the task's base only: ${checked - new Set(problems.map((p) => p.split(" ")[0])).size} of ${checked} revision image(s) of the benchmark's tasks and checkouts${unused ? ` (${unused} of checkouts no session uses not checked)` : ""}`,
  );
  for (const p of problems) console.log(`      ${p}`);
  return !problems.length && checked > 0;
}
