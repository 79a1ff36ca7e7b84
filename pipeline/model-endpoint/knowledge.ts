/**
 * What the endpoint's scripted models know of an emitted benchmark: every session's schedules,
 * and each task's reference change as steps over its base revision. Only the endpoint reads the
 * held-out assets this way, as the scripted agents do; nothing of them reaches a harness but the
 * edits a script makes.
 */
import { spawn } from "node:child_process";
import { mkdtemp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import type { OpenedBenchmark } from "../project/benchmark.ts";
import { git } from "../git.ts";
import { Condition, SessionSpec } from "../schemas/session.ts";
import { parseGitDiff } from "../changes/diff.ts";
import { sessionCloneSource } from "../session/runs.ts";
import { CONTINUATION_MESSAGE } from "../session/types.ts";
import { planChange, type ChangePlan } from "./plan.ts";
import type { EndpointKnowledge } from "./scripts.ts";

/**
 * A file's bytes at a commit of a mirror, or null when it has none there (read with cat-file into
 * a buffer: the git helper decodes its output as UTF-8, which would mangle a binary file).
 */
function bytesAt(mirror: string, commit: string, path: string): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const child = spawn("git", ["cat-file", "blob", `${commit}:${path}`], { cwd: mirror, stdio: ["ignore", "pipe", "ignore"] });
    const chunks: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => chunks.push(c));
    child.on("close", (code) => resolve(code === 0 ? Buffer.concat(chunks) : null));
    child.on("error", () => resolve(null));
  });
}

/** The plan of one task's reference change: base files from the mirror, the final ones from `git apply` of the patch over them. */
async function taskPlan(mirror: string, baseCommit: string, patch: string): Promise<ChangePlan> {
  const diffs = parseGitDiff(patch);
  const paths = [...new Set(diffs.flatMap((d) => [d.oldPath, d.path]))];
  const base = new Map<string, Buffer | null>();
  for (const path of paths) base.set(path, await bytesAt(mirror, baseCommit, path));
  const dir = await mkdtemp(join(tmpdir(), "switch-swe-plan-"));
  const final = new Map<string, Buffer | null>();
  try {
    for (const [path, bytes] of base) {
      if (!bytes) continue;
      await mkdir(join(dir, path, ".."), { recursive: true });
      await writeFile(join(dir, path), bytes);
    }
    await git(["apply", "--binary", "--whitespace=nowarn", "-"], { cwd: dir, input: patch });
    for (const path of paths) final.set(path, existsSync(join(dir, path)) ? await readFile(join(dir, path)) : null);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return planChange(
    patch,
    (p) => base.get(p) ?? null,
    (p) => final.get(p) ?? null,
  );
}

/** The knowledge of every session of an emitted benchmark, with the plans of every task its sessions name. */
export async function benchmarkKnowledge(bench: OpenedBenchmark): Promise<EndpointKnowledge> {
  const schedules: EndpointKnowledge["schedules"] = [];
  const plans = new Map<string, ChangePlan>();
  const stages = new Map<string, number>();
  for (const { file, spec } of bench.sessions()) {
    for (const condition of Condition.options) schedules.push({ session: spec.session_id, condition, requests: spec.conditions[condition] });
    for (const r of spec.conditions.switched) if (r.stage !== undefined) stages.set(r.task_id, Math.max(stages.get(r.task_id) ?? 0, r.stage));
    const source = sessionCloneSource(spec, file);
    for (const checkout of spec.checkouts) {
      if (plans.has(checkout.task_id)) continue;
      const task = bench.requireHeldout(checkout.task_id, "whose reference change the scripted model makes");
      const mirror = await bench.mirrorAt(spec.repo, task.base_commit, source);
      plans.set(checkout.task_id, await taskPlan(mirror, task.base_commit, task.implementation_patch));
    }
  }
  return {
    schedules,
    stages: (task) => stages.get(task) ?? 1,
    plan: (task) => {
      const plan = plans.get(task);
      if (!plan) throw new Error(`the endpoint knows no reference change of ${task}`);
      return plan;
    },
    continuation: CONTINUATION_MESSAGE,
  };
}
