import { readTestPatch } from "../../pipeline/changes/added-tests.ts";
import { GitError } from "../../pipeline/git.ts";
import type { ClassificationRules } from "../../pipeline/schemas/repo-profile.ts";
import type { ExtensionStage } from "../../pipeline/schemas/split.ts";
import { ExtensionError, type ExtensionFile } from "./extensions.ts";
import { splitReferenceChange } from "./split.ts";

type Git = (args: string[]) => Promise<string>;

/** The upstream change cut at its pull request's own commits: the first stage's change, and a stage for each later commit. */
export interface UpstreamCut {
  /** base → the first stage's last commit: the change the record's own request asks for. */
  firstDiff: string;
  stages: ExtensionStage[];
  /** base → the last commit, source and test files: the whole upstream change as history holds it. */
  historyPatch: string;
}

const diffArgs = ["diff", "--binary", "--full-index", "-M"];

/**
 * Stages from real history (an extension file's `upstream_commits`): the pull request's commits
 * after `first_stage_until`, each stage the commits from the one before up to its `commit`, its
 * implementation and tests split by the profile's classes and only its request written. Each
 * commit must lie on the way from the base, in order, with no merge between; each stage must add a
 * test function of its own and remove none (what every stage must, requirements being cumulative).
 */
export async function upstreamCommitStages(
  git: Git,
  path: string,
  base: string,
  file: ExtensionFile,
  rules: ClassificationRules,
): Promise<UpstreamCut | undefined> {
  const cut = file.upstream_commits;
  if (!cut) return undefined;
  const resolve = async (commit: string, field: string) => {
    const sha = (await git(["rev-parse", "--verify", "--quiet", `${commit}^{commit}`]).catch(() => "")).trim();
    if (!sha) throw new ExtensionError(`${path}: field ${field}: ${commit} is not a commit of the repository`, field);
    return sha;
  };
  const descends = (commit: string, ancestor: string) =>
    git(["merge-base", "--is-ancestor", ancestor, commit]).then(
      () => true,
      (error: unknown) => {
        if (error instanceof GitError && error.code === 1) return false;
        throw error;
      },
    );
  let previous = await resolve(cut.first_stage_until, "upstream_commits.first_stage_until");
  if (previous === base || !(await descends(previous, base)))
    throw new ExtensionError(
      `${path}: field upstream_commits.first_stage_until: ${cut.first_stage_until} does not come after the task's base ${base}`,
      "upstream_commits.first_stage_until",
    );
  await refuseMerges(git, path, base, previous, "upstream_commits.first_stage_until", cut.first_stage_until);
  const firstDiff = await git([...diffArgs, base, previous]);
  const stages: ExtensionStage[] = [];
  for (const [i, stage] of cut.stages.entries()) {
    const field = `upstream_commits.stages.${i}`;
    const commit = await resolve(stage.commit, `${field}.commit`);
    if (commit === previous || !(await descends(commit, previous)))
      throw new ExtensionError(
        `${path}: field ${field}.commit: ${stage.commit} does not come after the stage before it (${previous.slice(0, 12)})`,
        `${field}.commit`,
      );
    await refuseMerges(git, path, previous, commit, `${field}.commit`, stage.commit);
    const change = splitReferenceChange(await git([...diffArgs, previous, commit]), rules);
    if (!change.implementationPatch)
      throw new ExtensionError(`${path}: field ${field}.commit: the commits up to ${stage.commit} change no source file`, `${field}.commit`);
    const reading = readTestPatch(change.testPatch);
    if (!reading.added.length)
      throw new ExtensionError(
        `${path}: field ${field}.commit: the commits up to ${stage.commit} add no test function: the stage could not be verified`,
        `${field}.commit`,
      );
    if (reading.removed.length)
      throw new ExtensionError(
        `${path}: field ${field}.commit: the commits up to ${stage.commit} remove or rewrite ${reading.removed.length} test line(s) (first: ${reading.removed[0]}): a stage's tests only add`,
        `${field}.commit`,
      );
    stages.push({
      index: i + 1,
      field,
      file: path,
      author: file.author,
      reason: file.reason,
      after: 1,
      request: stage.request.trim(),
      implementation_patch: change.implementationPatch,
      test_patch: change.testPatch,
      tests: reading.added,
      commit,
    });
    previous = commit;
  }
  const whole = splitReferenceChange(await git([...diffArgs, base, previous]), rules);
  return { firstDiff, stages, historyPatch: whole.implementationPatch + whole.testPatch };
}

/**
 * A merge on the way (the main line merged into the pull request's branch) would make the diff
 * between two of its commits carry other pull requests' work as this stage's implementation and
 * tests: such a cut is refused, naming the merge.
 */
async function refuseMerges(git: Git, path: string, from: string, to: string, field: string, named: string): Promise<void> {
  const merges = (await git(["rev-list", "--merges", "--ancestry-path", `${from}..${to}`])).split("\n").filter(Boolean);
  if (merges.length)
    throw new ExtensionError(
      `${path}: field ${field}: the commits up to ${named} include merge commit ${merges.at(-1)!.slice(0, 12)}, which brings in changes that are not the pull request's own`,
      field,
    );
}
