import { stringify } from "csv-stringify/sync";
import { isAbsolute, relative } from "node:path";
import type { TaskResources } from "../../pipeline/profiles/resources.ts";
import { z } from "zod";
import { BenchmarkLayout, BenchmarkLocations, RELEASED } from "../../pipeline/benchmark-layout.ts";
import { canonicalJson } from "../../pipeline/canonical.ts";
import { renderSchemaFiles } from "../../pipeline/json-schemas.ts";
import { AuditRecord } from "../../pipeline/schemas/audit.ts";
import { Candidate } from "../../pipeline/schemas/candidate.ts";
import { LocalityPair } from "../../pipeline/schemas/locality.ts";
import { ManifestEntry } from "../../pipeline/schemas/manifest.ts";
import { Condition, SessionSpec } from "../../pipeline/schemas/session.ts";
import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { defineStage, input } from "../../pipeline/engine/stage.ts";
import { ValidationReport } from "../../pipeline/schemas/validation.ts";
import { benchmarkProfile, profileBesideStudy, switchedFigures } from "./profile.ts";

export { benchmarkProfile } from "./profile.ts";

/** Where the benchmark goes: what verify and the session runner read it from (BenchmarkLocations). */
export const EmitConfig = BenchmarkLocations;

/** Which sessions each task is used in, and in which roles. */
function taskUses(specs: SessionSpec[]) {
  const roles = new Map<string, Set<"focus" | "interruption">>();
  const sessionsOf = new Map<string, string[]>();
  for (const s of specs) {
    for (const [id, role] of [[s.focus, "focus"], ...s.interruptions.map((i) => [i, "interruption"])] as [string, "focus" | "interruption"][]) {
      roles.set(id, (roles.get(id) ?? new Set()).add(role));
      sessionsOf.set(id, [...(sessionsOf.get(id) ?? []), s.session_id]);
    }
  }
  return { roles, sessionsOf, used: [...roles.keys()].sort() };
}

/** One manifest line: a task the benchmark uses, with its sources, tests, links and validation (SPEC §2.10). */
function manifestEntry(
  id: string,
  task: Task,
  candidate: Candidate | undefined,
  audit: AuditRecord | undefined,
  checks: ValidationReport["checks"],
  roles: Set<"focus" | "interruption">,
  cloneUrl: string,
): ManifestEntry {
  const source =
    candidate?.source.kind === "github"
      ? {
          kind: "github" as const,
          ids: [id, ...candidate.issues.map((i) => `${i.repo}#${i.number}`)],
          urls: [candidate.source.api_url, ...candidate.issues.map((i) => i.url)],
        }
      : { kind: "swebench" as const, ids: [id], urls: [] };
  return ManifestEntry.parse({
    task_id: id,
    repo: task.snapshot.repo,
    clone_url: cloneUrl,
    source,
    base_commit: task.snapshot.base_commit,
    requests: task.requests,
    environment: task.snapshot.environment,
    tests: { fail_to_pass: task.verifier.fail_to_pass, pass_to_pass: task.verifier.pass_to_pass },
    source_files: task.source_files,
    source_dirs: task.source_dirs,
    requirement_tests: (audit?.links ?? []).map((l) => ({ test: l.test, stages: l.stages })),
    validation: {
      passed: checks.every((c) => c.passed),
      checks: [...new Map(checks.map((c) => [c.check, c])).values()].map(({ check, passed }) => ({ check, passed })),
    },
    roles: [...roles].sort(),
  });
}

const json = (value: unknown) => canonicalJson(value, 2) + "\n";

/**
 * Where a file in `fromDir` says to clone a repository: its profile's clone URL as it is, or a
 * local clone or bundle as a path relative to that directory (never absolute: the same inputs give
 * the same bytes on any machine, and the benchmark can travel with its data).
 */
export function cloneUrlFor(repo: string, resources: TaskResources, fromDir: string): string {
  const source = resources.cloneSource(repo);
  return isAbsolute(source) ? relative(fromDir, source) || "." : source;
}

/** The CSV tables of the released benchmark. */
function tables(specs: SessionSpec[], manifest: ManifestEntry[], pairs: LocalityPair[]): [string, string][] {
  const used = new Set(manifest.map((m) => m.task_id));
  const sessionRows = specs.map((s) => ({
    session_id: s.session_id,
    repo: s.repo,
    focus: s.focus,
    locality: s.locality,
    interruptions: s.interruptions.join(" "),
    focus_checkout: s.checkouts.find((c) => c.task_id === s.focus)!.path,
    control_requests: s.conditions.control.length,
    ...switchedFigures(s),
  }));
  const taskRows = manifest.map((m) => ({
    task_id: m.task_id,
    repo: m.repo,
    roles: m.roles.join(" "),
    stages: m.requests.length,
    fail_to_pass: m.tests.fail_to_pass.length,
    pass_to_pass: m.tests.pass_to_pass.length,
    source_files: m.source_files.join(" "),
  }));
  const pairRows = pairs
    .filter((p) => used.has(p.task_a) && used.has(p.task_b))
    .map((p) => ({
      repo: p.repo,
      task_a: p.task_a,
      task_b: p.task_b,
      class: p.eligible ? p.class : "ineligible",
      shared_dirs: p.shared_dirs.join(" "),
      shared_files: p.shared_files.join(" "),
    }));
  const requestRows = specs.flatMap((s) =>
    Condition.options.flatMap((condition) =>
      s.conditions[condition].map((r, i) => ({
        session_id: s.session_id,
        condition,
        position: i + 1,
        task_id: r.task_id,
        stage: r.stage ?? "",
        finalization: r.finalization,
        checkout: r.message.checkout,
      })),
    ),
  );
  return [
    [RELEASED.table("sessions"), stringify(sessionRows, { header: true })],
    [RELEASED.table("tasks"), stringify(taskRows, { header: true })],
    [RELEASED.table("locality_pairs"), stringify(pairRows, { header: true, columns: ["repo", "task_a", "task_b", "class", "shared_dirs", "shared_files"] })],
    [RELEASED.table("requests"), stringify(requestRows, { header: true })],
  ];
}

/** Every file of the released benchmark's directory, by path inside it. */
function benchmarkFiles(
  benchmark: string,
  specs: SessionSpec[],
  manifest: ManifestEntry[],
  pairs: LocalityPair[],
  profile: ReturnType<typeof benchmarkProfile>,
): Map<string, string> {
  const files = new Map<string, string>();
  files.set(RELEASED.manifest, manifest.map((m) => canonicalJson(m) + "\n").join(""));
  for (const spec of specs) files.set(RELEASED.session(spec.session_id), json(spec));
  // The sessions of this benchmark, which `report` takes as its fixed denominators.
  files.set(
    RELEASED.sessionIndex,
    json({
      benchmark,
      sessions: specs.map((s) => ({ session_id: s.session_id, file: RELEASED.sessionFileName(s.session_id), focus: s.focus, locality: s.locality })),
    }),
  );
  for (const [name, text] of renderSchemaFiles()) files.set(RELEASED.schema(name), text);
  for (const [name, text] of tables(specs, manifest, pairs)) files.set(name, text);
  files.set(RELEASED.profileJson, json(profile));
  const { sessions: counts, ...flat } = profile;
  files.set(RELEASED.profileCsv, stringify([{ ...flat, near_sessions: counts.near, far_sessions: counts.far }], { header: true }));
  return files;
}

export const emitStage = defineStage({
  name: "emit",
  summary: "write the manifest, session specifications, CSV tables, profile and JSON Schemas; held-out assets apart",
  example: "switch-swe emit --config data/demo/pipeline.yaml",
  version: "2",
  module: import.meta.url,
  configSchema: EmitConfig,
  settings: ["profiles"],
  inputs: {
    specs: input("validate", "sessions", SessionSpec),
    reportList: input("validate", "reports", ValidationReport),
    taskList: input("oracle", "tasks", Task),
    auditList: input("audit", "records", AuditRecord),
    heldoutList: input("oracle", "heldout", HeldoutTask),
    candidateList: input("mine", "candidates", Candidate),
    pairs: input("locality", "pairs", LocalityPair),
  },
  outputs: [{ name: "manifest", schema: ManifestEntry, key: (m: ManifestEntry) => m.task_id }],
  async run(ctx, { specs, reportList, taskList, auditList, heldoutList, candidateList, pairs }) {
    const reports = new Map(reportList.map((r) => [r.session_id, r]));
    const tasks = new Map(taskList.map((t) => [t.id, t]));
    const audits = new Map(auditList.map((a) => [a.task_id, a]));
    const heldout = new Map(heldoutList.map((h) => [h.task_id, h]));
    const candidates = new Map(candidateList.map((c) => [c.id, c]));
    const { roles, sessionsOf, used } = taskUses(specs);
    // The released benchmark is one directory, replaced whole: nothing of an earlier run survives.
    const out = ctx.config.out_dir;
    const layout = new BenchmarkLayout(ctx.resolvePath(out), ctx.resolvePath(ctx.config.heldout_dir));
    const cloneUrl = (repo: string, dir: string) => cloneUrlFor(repo, ctx.resources, dir);
    const manifest = await ctx.mapRecords(used, {
      id: (id) => id,
      cache: false,
      work: (id) =>
        manifestEntry(
          id,
          tasks.get(id)!,
          candidates.get(id),
          audits.get(id),
          (sessionsOf.get(id) ?? []).flatMap((sid) => reports.get(sid)?.checks ?? []),
          roles.get(id)!,
          cloneUrl(tasks.get(id)!.snapshot.repo, layout.outDir),
        ),
    });
    const profile = benchmarkProfile(specs);
    const files = benchmarkFiles(
      ctx.benchmark,
      specs.map((s) => ({ ...s, clone_url: cloneUrl(s.repo, layout.sessionsDir) })),
      manifest,
      pairs,
      profile,
    );
    // Held-out assets: only the verifier reads these. Every one passed the oracle. Inside out_dir
    // they are part of its one swap; elsewhere they are a directory of their own.
    const heldoutFiles = new Map(used.map((id) => [BenchmarkLayout.heldoutFileName(id), json(heldout.get(id)!)]));
    const inside = layout.heldoutInsideRelease;
    if (inside !== undefined) {
      for (const [name, text] of heldoutFiles) files.set(inside ? `${inside}/${name}` : name, text);
      await ctx.publishDirectory(out, files);
    } else {
      await ctx.publishDirectory(out, files);
      await ctx.publishDirectory(ctx.config.heldout_dir, heldoutFiles);
    }
    ctx.log.info(`emitted ${specs.length} sessions (${profile.sessions.near} near, ${profile.sessions.far} far) over ${manifest.length} tasks to ${out}`);
    for (const line of profileBesideStudy(profile)) ctx.log.info(line);
    return { manifest };
  },
});
