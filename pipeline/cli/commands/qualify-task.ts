import { mkdirSync, readFileSync } from "node:fs";
import type { Command } from "commander";
import { createLogger } from "../../logger.ts";
import { RecordError } from "../../stage.ts";
import { type Io, requirePath, RunFailed } from "../io.ts";
import { basename, dirname, join, resolve } from "node:path";
import { environmentSpec, recipeFor } from "../../executors/environment.ts";
import { createExecutor } from "../../executors/index.ts";
import { MirrorCache } from "../../git.ts";
import { freshCheckout } from "../../domain/checkout.ts";
import type { Logger } from "../../logger.ts";
import { cloneSourceOf, loadProfiles, profileFileName } from "../../domain/profiles.ts";
import { SplitChange } from "../../schemas/split.ts";
import { describeFirstIssue, InputError } from "../../validation.ts";
import { designatedTestFiles, qualificationRecord, qualifyTask } from "../../../stages/qualify/run.ts";

export interface ByHandOptions {
  taskFile: string;
  profile?: string;
  executor: "auto" | "docker" | "local";
  runs: number;
  workDir: string;
  asOf?: string;
  fullSuite: boolean;
  log: Logger;
}

/**
 * Qualifies one task from a split record (a line of artifacts/split/splits.jsonl saved as a file),
 * for a maintainer checking a task by hand: every test's status in every run, and the sets.
 */
export async function qualifyByHand(options: ByHandOptions) {
  const workDir = resolve(options.workDir);
  const text = readFileSync(options.taskFile, "utf8").trim();
  let raw: unknown;
  try {
    raw = JSON.parse(text.split("\n")[0]!);
  } catch (error) {
    throw new InputError(`${options.taskFile}: line 1: not valid JSON (${(error as Error).message}); expected a split record, one line of artifacts/split/splits.jsonl`);
  }
  const parsed = SplitChange.safeParse(raw);
  if (!parsed.success) throw new InputError(`${options.taskFile}: ${describeFirstIssue(parsed.error, raw)} (expected a split record, one line of artifacts/split/splits.jsonl)`);
  const split = parsed.data;
  const profilePath = options.profile ?? join("data", "repos", profileFileName(split.repo));
  const { profiles, errors } = loadProfiles([{ path: basename(profilePath), text: readFileSync(profilePath, "utf8") }]);
  const loaded = profiles.get(split.repo);
  if (!loaded) throw new InputError(errors.values().next().value ?? `${profilePath}: not the profile of ${split.repo}`);
  const env = environmentSpec(split.repo, recipeFor(loaded.profile, { id: split.task_id }), options.asOf ?? null);
  const executor = await createExecutor(options.executor, { envRoot: join(workDir, "envs"), log: options.log });
  const mirror = await new MirrorCache(join(workDir, "git")).ensure(split.repo, cloneSourceOf(split.repo, loaded, (p) => resolve(dirname(profilePath), p)), split.base_commit);
  const scratch = join(workDir, "scratch");
  mkdirSync(scratch, { recursive: true });
  const testArgs = options.fullSuite ? [] : designatedTestFiles(split.files);
  const checkout = (patches: { name: string; text: string }[]) => freshCheckout(mirror, split.base_commit, patches, scratch);
  const input = { id: split.task_id, baseCommit: split.base_commit, testPatch: split.test_patch, implementationPatch: split.implementation_patch, env, testArgs, runs: options.runs, checkout };
  return qualificationRecord(input, executor.kind, await qualifyTask(executor, input, options.log));
}

/** A table for a terminal: one row a test, one column a run of each state, then its set. */
export function formatByHand(result: Awaited<ReturnType<typeof qualifyByHand>>): string {
  const setOf = (t: string) => (result.fail_to_pass.includes(t) ? "F2P" : result.pass_to_pass.includes(t) ? "P2P" : result.pass_to_fail.includes(t) ? "P2F" : result.unstable.includes(t) ? "unstable" : "F2F");
  const tests = [...new Set(result.runs.flatMap((r) => Object.keys(r.outcomes)))].sort();
  const header = ["test", ...result.runs.map((r) => `${r.state[0]}${r.run + 1}`), "set"];
  const rows = tests.map((t) => [t, ...result.runs.map((r) => r.outcomes[t] ?? "absent"), setOf(t)]);
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => r[i]!.length)));
  const lines = [header, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join("  "));
  lines.push("", `${result.task_id} (${result.executor}): ${result.kept ? "kept" : `rejected: ${result.reject_reason}: ${result.reject_detail}`}`);
  return lines.join("\n") + "\n";
}

/** `switch-swe qualify --task FILE`: the by-hand mode of the qualify command. */
export const qualifyTaskCommand = {
  addOptions(command: Command): void {
    command
      .option("--task <file>", "qualify one task by hand: a split record (one line of artifacts/split/splits.jsonl)")
      .option("--profile <file>", "with --task: the repository profile (default data/repos/OWNER__NAME.json)")
      .option("--work-dir <dir>", "with --task: where environments and mirrors go", ".switch-swe/qualify")
      .option("--as-of <date>", "with --task: resolve dependencies as of this date")
      .option("--full-suite", "with --task: run the whole suite, not only the touched test files")
      .option("--json", "with --task: print the result as JSON");
  },
  async run(io: Io, opts: Record<string, any>): Promise<number> {
    requirePath("--task", opts.task, "file");
    requirePath("--profile", opts.profile, "file");
    let result;
    try {
      result = await qualifyByHand({ taskFile: opts.task, profile: opts.profile, executor: opts.executor ?? "auto", runs: opts.runs ?? 3, workDir: opts.workDir, asOf: opts.asOf, fullSuite: Boolean(opts.fullSuite), log: createLogger({ level: opts.json ? "warn" : "info", write: (line) => io.err(line + "\n") }) });
    } catch (error) {
      // The task itself could not be qualified (its environment does not build, a patch does not apply).
      if (error instanceof RecordError) throw new RunFailed(error.message);
      throw error;
    }
    io.out(opts.json ? JSON.stringify(result, null, 2) + "\n" : formatByHand(result));
    return result.kept ? 0 : 1;
  },
};
