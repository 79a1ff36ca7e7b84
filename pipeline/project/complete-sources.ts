import { completeSources, type SourceCompletion } from "../checkouts/complete-source.ts";
import type { Project } from "./project.ts";
import { readSplitArtifacts } from "./split-artifacts.ts";

/** One repository of a pipeline, its work directory's mirror completed (see completeSources). */
export interface RepositoryCompletion extends SourceCompletion {
  repo: string;
  /** Base commits of split tasks, and those of them its source does not have (nothing to complete there). */
  commits: number;
  absentCommits: string[];
}

/**
 * Completes the work directory's mirror of every repository of a pipeline's split tasks from
 * `sources` (directories or tar archives): the blobs the tasks' base commits name and the mirror
 * lacks, matched by git blob id. Repositories whose mirrors lack nothing read no source.
 */
export async function completePipelineSources(project: Project, sources: readonly string[]): Promise<RepositoryCompletion[]> {
  const { splits } = await readSplitArtifacts(project);
  const resources = project.resources();
  const byRepo = new Map<string, Set<string>>();
  for (const split of splits) byRepo.set(split.repo, (byRepo.get(split.repo) ?? new Set()).add(split.base_commit));
  const repos = [...byRepo].sort(([a], [b]) => a.localeCompare(b));
  const held = [];
  for (const [repo, commits] of repos) {
    const { path, missing } = await resources.mirrorWith(repo, [...commits].sort());
    held.push({ repo, commits: commits.size, absentCommits: missing, mirror: path, present: [...commits].filter((c) => !missing.includes(c)).sort() });
  }
  // One pass over the sources for every repository.
  const completed = await completeSources(
    held.map((h) => ({ mirror: h.mirror, commits: h.present })),
    sources,
  );
  return held.map(({ repo, commits, absentCommits }, i) => ({ repo, commits, absentCommits, ...completed[i]! }));
}
