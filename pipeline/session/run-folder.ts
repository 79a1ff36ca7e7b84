import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import type { Logger } from "../logger.ts";
import type { OpenedBenchmark } from "../project/benchmark.ts";
import type { AgentSpec } from "../schemas/agent.ts";
import { InputError } from "../validation.ts";

/**
 * A session run's folder (its workspace, agent logs and trajectory: sessionRunLayout) and its
 * report file: where each goes, and who owns a folder, so one run never takes another's.
 */

import type { Condition } from "../schemas/session.ts";

/** Written into each run folder: whose run it holds, so another run never deletes it silently. */
const RUN_OWNER_FILE = ".switch-swe-run.json";

export interface RunOwner {
  agent: string;
  /** The report whose trajectory link points into the folder. */
  report: string;
}

/**
 * Checks that a run may take `runDir`: it is absent or empty, or holds an earlier run of the same
 * agent reported to the same file (replaced, and said). Another agent's run, a run reported
 * elsewhere, or a folder that is not a run is refused (InputError, exit 2) unless `force`: its
 * report's trajectory link would otherwise point at another run.
 */
export function checkRunDir(runDir: string, owner: RunOwner, force: boolean | undefined, log: Logger): void {
  if (!existsSync(runDir) || !readdirSync(runDir).length) return;
  let earlier: Partial<RunOwner> | undefined;
  try {
    earlier = JSON.parse(readFileSync(join(runDir, RUN_OWNER_FILE), "utf8")) as Partial<RunOwner>;
  } catch {
    earlier = undefined;
  }
  const same = earlier?.agent === owner.agent && earlier?.report === owner.report;
  if (same) {
    log.info(`${runDir}: replacing the earlier run of ${owner.agent} there (its report ${owner.report} is written anew)`);
    return;
  }
  const what = earlier?.agent
    ? `the run of agent ${earlier.agent} reported in ${earlier.report ?? "an unknown file"}`
    : "files that are not a run of switch-swe";
  if (force) {
    log.warn(`${runDir}: --force: replacing ${what}`);
    return;
  }
  throw new InputError(`${runDir} holds ${what}; it is not deleted: give another --work folder, or pass --force to replace it`);
}

/**
 * Replaces `runDir` with an empty run folder holding only its owner file. The folder is built
 * beside it (`<runDir>.partial-<pid>`) and renamed into place, so a run killed at any instant
 * leaves either no folder or one that names its owner: a folder made but not yet marked would be
 * refused as "not a run" by the next run (run-all resumed after a kill). A partial left by a
 * killed run of this folder is removed first.
 */
export async function takeRunDir(runDir: string, owner: RunOwner): Promise<void> {
  const parent = dirname(runDir);
  await mkdir(parent, { recursive: true });
  const partialOf = `${basename(runDir)}.partial-`;
  for (const name of readdirSync(parent))
    if (name.startsWith(partialOf) && /^\d+$/.test(name.slice(partialOf.length))) await rm(join(parent, name), { recursive: true, force: true });
  const partial = `${runDir}.partial-${process.pid}`;
  await mkdir(partial);
  await writeFile(join(partial, RUN_OWNER_FILE), JSON.stringify(owner) + "\n");
  await rm(runDir, { recursive: true, force: true });
  await rename(partial, runDir);
}

/** Where one session and condition's run goes: its workspace, agent logs and trajectory. */
export const runDirOf = (benchmark: OpenedBenchmark, options: { work?: string; agent: AgentSpec }, sessionId: string, condition: Condition) =>
  resolve(options.work ?? benchmark.project.layout.sessionRuns(options.agent.name), `${sessionId}.${condition}`);

/** The report file of one session and condition under a results directory. */
export const reportFileOf = (out: string, sessionId: string, condition: Condition) => join(out, `${sessionId}.${condition}.json`);
