// A benchmark from real records, built end to end (data/benchmarks/<name>.yaml: sympy-lite, or the
// multi-repository switch-swe-lite): every task qualified in Docker with its benchmark-authored
// stages, audited, proved by the oracle, its sessions selected under the answer rule and emitted.
// Runs the shipped config in a directory of its own (the config and data/benchmarks copied there,
// paths pointed at the records and profiles where they are), times each stage, runs it again
// unchanged, then again after one extension file changes, and checks what the benchmark promises.
//
//   npm run bench:real -- [--config NAME] [--mirrors DIR] [--records-dir DIR] [--keep DIR] [--no-reruns]
//   npm run bench:real -- --config NAME --check WORK_DIR     # only the checks, on a run already made
//
// --config: a config of data/benchmarks (default sympy-lite). --mirrors: local copies of the
// repositories (default $SWITCH_SWE_MIRRORS; without either they are cloned from GitHub).
// --records-dir: where the SWE-bench Lite files are (default ../shared/data beside the clone).
// --keep: build in DIR and leave it there (a second run reuses what is built).
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { parse } from "yaml";
import { formatSummary, Project } from "../pipeline/project/project.ts";
import type { RunSummary } from "../pipeline/engine/engine.ts";
import { createLogger } from "../pipeline/logger.ts";
import { WorkLayout } from "../pipeline/work-layout.ts";
import { BUILT_STAGES } from "../stages/index.ts";
import { checkBuiltBenchmark, checkEnvironmentImages, readJsonl } from "./real-benchmark-checks.ts";
import { loadProfilesDir } from "../pipeline/profiles/load.ts";

const root = fileURLToPath(new URL("../", import.meta.url));
const { values } = parseArgs({
  options: {
    config: { type: "string", default: "sympy-lite" },
    mirrors: { type: "string" },
    "records-dir": { type: "string" },
    keep: { type: "string" },
    check: { type: "string" },
    "no-reruns": { type: "boolean", default: false },
  },
});
const shipped = join(root, "data", "benchmarks", `${values.config}.yaml`);
if (!existsSync(shipped))
  throw new Error(
    `no benchmark config ${shipped}: --config names one of ${readdirSync(join(root, "data", "benchmarks"))
      .filter((f) => f.endsWith(".yaml"))
      .join(", ")}`,
  );
const configured = parse(readFileSync(shipped, "utf8")) as {
  stages: { select: { near: number; far: number; min_focus_stages?: number; min_interruption_stages?: number } };
};
/** Each repository the benchmark's sessions use, with its profile's package roots. */
const packagesOf = (artifacts: string) => {
  const repos = new Set(readJsonl<{ repo: string }>(join(artifacts, "validate", "sessions.jsonl")).map((s) => s.repo));
  const { profiles } = loadProfilesDir(join(root, "data", "repos"), root);
  return new Map([...repos].map((repo) => [repo, profiles.get(repo)?.profile.classification.package_roots ?? [repo.split("/")[1]!]]));
};
/** Every commit the built benchmark checks out: each task's base (the oracle's tasks) and each session checkout's base and derived commit. */
const commitsOf = (artifacts: string) =>
  new Set([
    ...readJsonl<{ snapshot: { base_commit: string } }>(join(artifacts, "oracle", "tasks.jsonl")).map((t) => t.snapshot.base_commit),
    ...readJsonl<{ checkouts: { base_commit: string; derived?: { commit: string } }[] }>(join(artifacts, "validate", "sessions.jsonl")).flatMap((s) =>
      s.checkouts.flatMap((c) => [c.base_commit, ...(c.derived ? [c.derived.commit] : [])]),
    ),
  ]);
if (values.check) {
  const artifacts = new WorkLayout(resolve(values.check)).artifacts;
  const held = checkBuiltBenchmark(artifacts, configured.stages.select);
  process.exit(held && (await checkEnvironmentImages(packagesOf(artifacts), commitsOf(artifacts))) ? 0 : 1);
}

const recordsDir = resolve(values["records-dir"] ?? join(root, "..", "shared", "data"));
if (!existsSync(recordsDir)) throw new Error(`no SWE-bench Lite files at ${recordsDir}: give --records-dir DIR`);
const dir = values.keep ? resolve(values.keep) : mkdtempSync(join(tmpdir(), `switch-swe-${values.config}-`));
mkdirSync(dir, { recursive: true });
cpSync(join(root, "data", "benchmarks"), join(dir, "benchmarks"), { recursive: true });
const config = readFileSync(shipped, "utf8")
  .replace(/^work_dir: .*$/m, "work_dir: ../work")
  .replace(/^profiles_dir: .*$/m, `profiles_dir: ${join(root, "data", "repos")}`)
  .replace(/- file: \S+\/(swebench-lite-[a-z-]+\.jsonl)/g, (_, name: string) => `- file: ${join(recordsDir, name)}`)
  .replaceAll("../../manifests/", "../manifests/")
  .replaceAll("../../audits/", "../audits/");
const configPath = join(dir, "benchmarks", `${values.config}.yaml`);
writeFileSync(configPath, config);

const mirrors = values.mirrors ?? process.env.SWITCH_SWE_MIRRORS;
const timed = async (label: string): Promise<{ summary: RunSummary; seconds: number }> => {
  const project = Project.open(configPath, { stages: BUILT_STAGES, log: createLogger(), overrides: mirrors ? { mirrors } : {} });
  const started = performance.now();
  try {
    const summary = await project.run({});
    const seconds = (performance.now() - started) / 1000;
    console.log(`\n${label}: ${seconds.toFixed(1)} s\n${formatSummary(summary)}`);
    return { summary, seconds };
  } finally {
    await project.close();
  }
};
let ok = false;
try {
  const first = await timed("build");
  const artifacts = new WorkLayout(join(dir, "work")).artifacts;
  ok =
    first.summary.ok && checkBuiltBenchmark(artifacts, configured.stages.select) && (await checkEnvironmentImages(packagesOf(artifacts), commitsOf(artifacts)));
  if (!values["no-reruns"]) {
    const again = await timed("re-run, nothing changed");
    console.log(`re-run unchanged: ${again.seconds.toFixed(1)} s, ${((100 * again.seconds) / first.seconds).toFixed(1)} % of the build`);
    // One extension file changes (a comment, so its stages stay the same): only its task is split and qualified again.
    const extensions = join(dir, "benchmarks", "switch-swe-lite", "extensions");
    const built = new Set(
      readJsonl<{ task_id: string }>(join(new WorkLayout(join(dir, "work")).artifacts, "qualify", "qualifications.jsonl")).map((q) => q.task_id),
    );
    const touched = readdirSync(extensions)
      .filter((f) => f.endsWith(".yaml") && built.has(f.slice(0, -".yaml".length)))
      .sort()[0];
    if (!touched) throw new Error(`no extension file in ${extensions} belongs to a task of ${values.config}`);
    appendFileSync(join(extensions, touched), "# touched by bench:real\n");
    const changed = await timed(`re-run after ${touched} changed`);
    const qualify = changed.summary.stages.find((s) => s.stage === "qualify");
    console.log(`one extension changed: ${changed.seconds.toFixed(1)} s; qualify worked on ${(qualify?.in ?? 0) - (qualify?.reused ?? 0)} task(s)`);
  }
} finally {
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
  else console.log(`\nkept in ${dir}`);
}
process.exitCode = ok ? 0 : 1;
