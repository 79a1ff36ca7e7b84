import { stringify } from "csv-stringify/sync";
import { isAbsolute, relative } from "node:path";
import { z } from "zod";
import { canonicalJson } from "../../pipeline/canonical.ts";
import { renderSchemaFiles } from "../../pipeline/schema-export.ts";
import type { AuditRecord } from "../../pipeline/schemas/audit.ts";
import type { Candidate } from "../../pipeline/schemas/candidate.ts";
import type { LocalityPair } from "../../pipeline/schemas/locality.ts";
import { ManifestEntry } from "../../pipeline/schemas/manifest.ts";
import type { SessionSpec } from "../../pipeline/schemas/session.ts";
import type { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import type { Task } from "../../pipeline/schemas/task.ts";
import { defineStage } from "../../pipeline/stage.ts";
import type { ValidationReport } from "../validate/index.ts";
import { benchmarkProfile, switchedFigures } from "./profile.ts";

export { benchmarkProfile } from "./profile.ts";

export const EmitConfig = z.strictObject({
  /** The released benchmark: manifest, sessions, tables, profile, schemas. */
  out_dir: z.string().default("manifests/benchmark"),
  /** Reference patches, test patches, test lists and commands: what an agent must never see. */
  heldout_dir: z.string().default("manifests/benchmark/heldout"),
});

export const emitStage = defineStage({
  name: "emit",
  summary: "write the manifest, session specifications, CSV tables, profile and JSON Schemas; held-out assets apart",
  example: "switch-swe emit --config data/demo/pipeline.yaml",
  version: "1",
  module: import.meta.url,
  configSchema: EmitConfig,
  inputs: [
    { stage: "validate", name: "sessions" },
    { stage: "validate", name: "reports" },
    { stage: "oracle", name: "tasks" },
    { stage: "audit", name: "records" },
    { stage: "oracle", name: "heldout" },
    { stage: "mine", name: "candidates" },
    { stage: "locality", name: "pairs" },
  ],
  outputs: [{ name: "manifest", schema: ManifestEntry, key: (m: ManifestEntry) => m.task_id }],
  async run(ctx) {
    const specs = ctx.input<SessionSpec>({ stage: "validate", name: "sessions" });
    const reports = new Map(ctx.input<ValidationReport>({ stage: "validate", name: "reports" }).map((r) => [r.session_id, r]));
    const tasks = new Map(ctx.input<Task>({ stage: "oracle", name: "tasks" }).map((t) => [t.id, t]));
    const audits = new Map(ctx.input<AuditRecord>({ stage: "audit", name: "records" }).map((a) => [a.task_id, a]));
    const heldout = new Map(ctx.input<HeldoutTask>({ stage: "oracle", name: "heldout" }).map((h) => [h.task_id, h]));
    const candidates = new Map(ctx.input<Candidate>({ stage: "mine", name: "candidates" }).map((c) => [c.id, c]));
    const out = ctx.config.out_dir;

    const roles = new Map<string, Set<"focus" | "interruption">>();
    const sessionsOf = new Map<string, string[]>();
    for (const s of specs) {
      for (const [id, role] of [[s.focus, "focus"], ...s.interruptions.map((i) => [i, "interruption"])] as [string, "focus" | "interruption"][]) {
        roles.set(id, (roles.get(id) ?? new Set()).add(role));
        sessionsOf.set(id, [...(sessionsOf.get(id) ?? []), s.session_id]);
      }
    }
    const used = [...roles.keys()].sort();
    const manifest = await ctx.mapRecords(used, {
      id: (id) => id,
      cache: false,
      work: (id) => {
        const task = tasks.get(id)!;
        const candidate = candidates.get(id);
        const checks = (sessionsOf.get(id) ?? []).flatMap((sid) => reports.get(sid)?.checks ?? []);
        const source = candidate?.source.kind === "github"
          ? { kind: "github" as const, ids: [id, ...candidate.issues.map((i) => `${i.repo}#${i.number}`)], urls: [candidate.source.api_url, ...candidate.issues.map((i) => i.url)] }
          : { kind: "swebench" as const, ids: [id], urls: [] };
        return ManifestEntry.parse({
          task_id: id,
          repo: task.snapshot.repo,
          source,
          base_commit: task.snapshot.base_commit,
          requests: task.requests,
          environment: task.snapshot.environment,
          tests: { fail_to_pass: task.verifier.fail_to_pass, pass_to_pass: task.verifier.pass_to_pass },
          source_files: task.source_files,
          source_dirs: task.source_dirs,
          requirement_tests: (audits.get(id)?.links ?? []).map((l) => ({ test: l.test, stages: l.stages })),
          validation: { passed: checks.every((c) => c.passed), checks: [...new Map(checks.map((c) => [c.check, c])).values()].map(({ check, passed }) => ({ check, passed })) },
          roles: [...roles.get(id)!].sort(),
        });
      },
    });

    const json = (value: unknown) => canonicalJson(value, 2) + "\n";
    // The released benchmark is one directory, replaced whole: nothing of an earlier run survives.
    const files = new Map<string, string>();
    files.set("manifest.jsonl", manifest.map((m) => canonicalJson(m) + "\n").join(""));
    for (const spec of specs) files.set(`sessions/${spec.session_id}.json`, json(spec));
    // The sessions of this benchmark, which `report` takes as its fixed denominators.
    files.set("sessions/index.json", json({ benchmark: ctx.benchmark, sessions: specs.map((s) => ({ session_id: s.session_id, file: `${s.session_id}.json`, focus: s.focus, locality: s.locality })) }));
    for (const [name, text] of renderSchemaFiles()) files.set(`schema/${name}`, text);

    const sessionRows = specs.map((s) => ({ session_id: s.session_id, repo: s.repo, focus: s.focus, locality: s.locality, interruptions: s.interruptions.join(" "), focus_checkout: s.checkouts.find((c) => c.task_id === s.focus)!.path, control_requests: s.conditions.control.length, ...switchedFigures(s) }));
    files.set("tables/sessions.csv", stringify(sessionRows, { header: true }));
    const taskRows = manifest.map((m) => ({ task_id: m.task_id, repo: m.repo, roles: m.roles.join(" "), stages: m.requests.length, fail_to_pass: m.tests.fail_to_pass.length, pass_to_pass: m.tests.pass_to_pass.length, source_files: m.source_files.join(" ") }));
    files.set("tables/tasks.csv", stringify(taskRows, { header: true }));
    const usedSet = new Set(used);
    const pairRows = ctx.input<LocalityPair>({ stage: "locality", name: "pairs" }).filter((p) => usedSet.has(p.task_a) && usedSet.has(p.task_b)).map((p) => ({ repo: p.repo, task_a: p.task_a, task_b: p.task_b, class: p.eligible ? p.class : "ineligible", shared_dirs: p.shared_dirs.join(" "), shared_files: p.shared_files.join(" ") }));
    files.set("tables/locality_pairs.csv", stringify(pairRows, { header: true, columns: ["repo", "task_a", "task_b", "class", "shared_dirs", "shared_files"] }));
    const requestRows = specs.flatMap((s) => (["control", "switched"] as const).flatMap((condition) => s.conditions[condition].map((r, i) => ({ session_id: s.session_id, condition, position: i + 1, task_id: r.task_id, stage: r.stage ?? "", finalization: r.finalization, checkout: r.message.checkout }))));
    files.set("tables/requests.csv", stringify(requestRows, { header: true }));
    const profile = benchmarkProfile(specs);
    files.set("profile.json", json(profile));
    const { sessions: counts, ...flat } = profile;
    files.set("profile.csv", stringify([{ ...flat, near_sessions: counts.near, far_sessions: counts.far }], { header: true }));

    // Held-out assets: only the verifier reads these. Every one passed the oracle. Inside out_dir
    // they are part of its one swap; elsewhere they are a directory of their own.
    const heldoutFiles = new Map(used.map((id) => [`${id}.json`, json(heldout.get(id)!)]));
    const inside = relative(ctx.resolvePath(out), ctx.resolvePath(ctx.config.heldout_dir));
    if (!inside.startsWith("..") && !isAbsolute(inside)) {
      for (const [name, text] of heldoutFiles) files.set(inside ? `${inside}/${name}` : name, text);
      await ctx.publishDirectory(out, files);
    } else {
      await ctx.publishDirectory(out, files);
      await ctx.publishDirectory(ctx.config.heldout_dir, heldoutFiles);
    }
    ctx.log.info(`emitted ${specs.length} sessions over ${manifest.length} tasks to ${out}; profile ${JSON.stringify(profile)}`);
    return { manifest };
  },
});
