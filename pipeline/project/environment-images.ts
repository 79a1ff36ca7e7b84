import { DockerExecutor } from "../executors/docker.ts";
import { needsRevisionLayer } from "../executors/recipe-scripts.ts";
import type { Project } from "./project.ts";
import { readSplitArtifacts } from "./split-artifacts.ts";

/** One environment image `images build` made or found. */
export interface BuiltImage {
  tag: string;
  repo: string;
  built: boolean;
  baseCommit?: string;
  asOf: string | null;
}

/**
 * Builds the environment image of every split task of a pipeline, as qualify would on demand (the
 * Docker executor of the config's execution settings): one per environment, and one per
 * (environment, base revision) when the recipe installs from the checkout.
 */
export async function buildPipelineImages(project: Project, each: (image: BuiltImage) => void): Promise<void> {
  const { splits, profiles } = await readSplitArtifacts(project);
  const resources = project.resources();
  const { workspace, log } = project;
  const executor = await workspace.executor("docker");
  const plan = resources.planEnvironments(splits, await executor.pythonOffer());
  for (const { task_id } of splits) {
    const why = plan.unavailableFor(task_id);
    if (why) log.warn(`${task_id}: no environment: ${why.message}`);
  }
  const done = new Set<string>();
  for (const split of splits) {
    const env = plan.planned(split.task_id);
    if (!env || !profiles.has(split.repo)) continue;
    const revision = needsRevisionLayer(env.recipe);
    const key = revision ? `${env.key}@${split.base_commit}` : env.key;
    if (done.has(key)) continue;
    done.add(key);
    const mirror = revision ? await resources.mirrorAt(split.repo, split.base_commit) : "";
    const { built } = await executor.ensureEnvironment(env, workspace.baseRevision(mirror, split.base_commit));
    each({
      tag: revision ? DockerExecutor.revisionTag(env, split.base_commit) : DockerExecutor.imageTag(env),
      repo: env.repo,
      built,
      ...(revision ? { baseCommit: split.base_commit } : {}),
      asOf: env.asOf,
    });
  }
}
