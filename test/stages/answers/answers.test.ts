import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { git, GitError } from "../../../pipeline/git.ts";
import { HeldoutTask } from "../../../pipeline/schemas/heldout.ts";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { ValidationReport } from "../../../pipeline/schemas/validation.ts";
import { runCli } from "../../helpers/cli-in-process.ts";
import { demoRunCopy, type DemoRunCopy } from "../../helpers/demo-run.ts";

/**
 * SPEC §2.7 on the emitted demo, checked here by other means than the pipeline's: the merge
 * commits come from the corpus's GitHub records (not from the answers stage's search), and the
 * names from a plain reading of each held-out patch, looked for with git grep in each checkout's
 * tree. No checkout may hold its focus's answer; the interruptions' answers found this way are
 * exactly the ones validate reported.
 */
let demo: DemoRunCopy;
let emitted: string;
let sessions: SessionSpec[];
let mergeOf: Map<string, string>;

beforeAll(async () => {
  demo = await demoRunCopy();
  emitted = join(demo.dir, "manifests", "demo");
  sessions = readdirSync(join(emitted, "sessions"))
    .filter((f) => f.startsWith("session-"))
    .map((f) => SessionSpec.parse(JSON.parse(readFileSync(join(emitted, "sessions", f), "utf8"))));
  mergeOf = new Map();
  for (const file of readdirSync(join(demo.corpus.dir, "github"))) {
    const records = JSON.parse(readFileSync(join(demo.corpus.dir, "github", file), "utf8")) as { pulls: Record<string, { merge_commit_sha: string | null }> };
    for (const [number, pull] of Object.entries(records.pulls ?? {}))
      if (pull.merge_commit_sha) mergeOf.set(`${file.replace(/\.json$/, "")}-${number}`, pull.merge_commit_sha);
  }
});

const repoDir = (repo: string) => join(demo.corpus.dir, "repos", repo.replace("/", "__"));
const heldout = (id: string) => HeldoutTask.parse(JSON.parse(readFileSync(join(emitted, "heldout", `${id}.json`), "utf8")));

async function descends(repo: string, commit: string, ancestor: string): Promise<boolean> {
  try {
    await git(["merge-base", "--is-ancestor", ancestor, commit], { cwd: repoDir(repo) });
    return true;
  } catch (error) {
    if (error instanceof GitError && error.code === 1) return false;
    throw error;
  }
}

/** The names a task's held-out patches define (`+def x`, `+class X`) that its own base has nowhere. */
async function newNames(task: HeldoutTask): Promise<string[]> {
  const defined = [...`${task.implementation_patch}\n${task.test_patch}`.matchAll(/^\+\s*(?:def|class)\s+([A-Za-z_]\w*)/gm)].map((m) => m[1]!);
  const names: string[] = [];
  for (const name of new Set(defined)) if (!(await holdsWord(task.repo, task.base_commit, name))) names.push(name);
  return names;
}

async function holdsWord(repo: string, commit: string, word: string): Promise<boolean> {
  try {
    await git(["grep", "-q", "-w", "-F", "-e", word, commit, "--"], { cwd: repoDir(repo) });
    return true;
  } catch (error) {
    if (error instanceof GitError && error.code === 1) return false;
    throw error;
  }
}

/** Whether a checkout of a session holds a task's answer, by the merge's history or by a new name. */
async function holds(spec: SessionSpec, task: string, checkout: SessionSpec["checkouts"][number]): Promise<boolean> {
  const tree = checkout.derived?.commit ?? checkout.base_commit;
  const merge = mergeOf.get(task);
  if (merge && !checkout.derived?.without.includes(task) && (await descends(spec.repo, tree, merge))) return true;
  for (const name of await newNames(heldout(task))) if (await holdsWord(spec.repo, tree, name)) return true;
  return false;
}

describe("no answer in the container, on the emitted demo", () => {
  it("no checkout of any session holds the focus's answer, and every interruption answer is one validate reported", async () => {
    expect(sessions.length).toBeGreaterThanOrEqual(12);
    const reports = new Map(
      readFileSync(join(demo.workDir, "artifacts", "validate", "reports.jsonl"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => ValidationReport.parse(JSON.parse(l)))
        .map((r) => [r.session_id, r]),
    );
    let interruptionAnswers = 0;
    for (const spec of sessions) {
      for (const c of spec.checkouts.filter((c) => c.task_id !== spec.focus))
        expect(await holds(spec, spec.focus, c), `${spec.session_id} ${c.path}`).toBe(false);
      const found: string[] = [];
      for (const task of spec.interruptions)
        for (const c of spec.checkouts.filter((c) => c.task_id !== task)) if (await holds(spec, task, c)) found.push(`${task} in ${c.path}`);
      const reported = reports.get(spec.session_id)!.interruption_answers.map((a) => `${a.task_id} in ${a.checkout}`);
      expect(found.sort(), spec.session_id).toEqual(reported.sort());
      interruptionAnswers += found.length;
    }
    // The demo's histories run concurrently in places and one after another elsewhere: both kinds are met.
    expect(interruptionAnswers).toBeGreaterThan(0);
  });

  it("`session check` passes the emitted sessions and refuses one edited so an interruption's base descends from the focus's fix, naming the task, the checkout and the commit", async () => {
    const all = await runCli(["session", "check", "-c", demo.configPath]);
    expect(all.code, all.stdout + all.stderr).toBe(0);
    expect(all.stdout).toContain(`${sessions.length} of ${sessions.length} session(s) pass every check`);
    const spec = sessions[0]!;
    const victim = spec.checkouts.find((c) => c.task_id !== spec.focus)!;
    const fix = mergeOf.get(spec.focus)!;
    const edited = structuredClone(spec);
    edited.checkouts.find((c) => c.path === victim.path)!.base_commit = fix;
    delete edited.checkouts.find((c) => c.path === victim.path)!.derived;
    const file = join(demo.dir, "edited-session.json");
    writeFileSync(file, JSON.stringify(edited, null, 2));
    const refused = await runCli(["session", "check", "-c", demo.configPath, file]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(`REFUSED ${spec.session_id}`);
    expect(refused.stdout).toMatch(
      new RegExp(
        `focus_answer_kept_out: ${victim.path} \\(${victim.task_id}, base ${fix.slice(0, 12)}\\) holds the focus ${spec.focus}'s answer: its base descends from the fix ${fix.slice(0, 12)}`,
      ),
    );
  });
});
