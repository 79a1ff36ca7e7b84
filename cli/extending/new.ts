import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { isAbsolute, join, relative, resolve } from "node:path";
import { readTestPatch } from "../../pipeline/changes/added-tests.ts";
import type { AnyStage } from "../../pipeline/engine/stage.ts";
import { CommitNotInSource, GitError } from "../../pipeline/git.ts";
import type { Logger } from "../../pipeline/logger.ts";
import { InputError } from "../../pipeline/validation.ts";
import { splitReferenceChange } from "../../stages/split/index.ts";
import { extensionSkeleton, pullRequestHistory, type PullRequestHistory } from "../../stages/split/skeleton.ts";
import { extensionsDir, minedTask, openForAuthoring, profileOf, taskMirror, upstreamRequests } from "./task.ts";

export interface ExtendNewOptions {
  stages: AnyStage[];
  config: string;
  task: string;
  mirrors?: string;
  log: Logger;
}

/**
 * Writes `<extensions_dir>/<task>.yaml`, a skeleton for the task's stages from its record, and
 * returns its path; never over a file that exists (an author's work is not replaced).
 */
export async function newExtensionFile(options: ExtendNewOptions): Promise<string> {
  const project = openForAuthoring(options);
  try {
    const dir = extensionsDir(project);
    const path = join(dir, `${options.task}.yaml`);
    const shown = asTyped(path);
    if (existsSync(path)) throw new InputError(`${shown} exists: extend new never writes over an extension file (edit it, or remove it to start again)`);
    const candidate = await minedTask(project, options.task, options.task);
    const loaded = profileOf(project, candidate);
    const upstream = splitReferenceChange(candidate.reference_diff, loaded.profile.classification);
    const { requests, from } = await upstreamRequests(project, candidate);
    const text = extensionSkeleton({
      taskId: candidate.id,
      baseCommit: candidate.base_commit,
      requests: requests.map((r) => r.text),
      requestsFrom: from,
      sourceFiles: upstream.sourceFiles,
      upstreamTests: readTestPatch(upstream.testPatch).added,
      history: await historyOf(options, project, candidate, loaded),
      checkCommand: `switch-swe extend check ${shown} -c ${asTyped(options.config)}`,
    });
    mkdirSync(dir, { recursive: true });
    // `wx`: a file that appeared since the check above is not written over either.
    writeFileSync(path, text, { flag: "wx" });
    return path;
  } finally {
    await project.close();
  }
}

/** A path as one would type it here: relative to the working directory when it lies under it. */
function asTyped(path: string): string {
  const shown = relative(process.cwd(), path);
  return shown && !shown.startsWith("..") && !isAbsolute(shown) ? shown : resolve(path);
}

/** The pull request's commits, or why they cannot be had: a repository out of reach leaves the skeleton without them, saying so. */
async function historyOf(
  options: ExtendNewOptions,
  project: ReturnType<typeof openForAuthoring>,
  candidate: Awaited<ReturnType<typeof minedTask>>,
  loaded: ReturnType<typeof profileOf>,
): Promise<PullRequestHistory> {
  let mirror: string;
  try {
    mirror = await taskMirror(project, candidate);
  } catch (error) {
    if (!(error instanceof GitError || error instanceof CommitNotInSource)) throw error;
    options.log.warn(`${candidate.id}: the repository could not be read (${error.message.split("\n")[0]}); the skeleton lists no pull request commits`);
    return { unavailable: `the repository could not be read here: ${error.message.split("\n")[0]}` };
  }
  return pullRequestHistory(
    (args) => project.workspace.mirrors.git(mirror, args),
    candidate.base_commit,
    { number: candidate.pull_number, mergeCommit: candidate.pull_request?.merge_commit_sha ?? null },
    loaded.profile.classification,
  );
}
