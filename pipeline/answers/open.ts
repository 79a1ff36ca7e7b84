import { UnknownRepository, type TaskResources } from "../profiles/resources.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import { RepositoryAnswers } from "./repository.ts";

/**
 * Each repository of `tasks` opened for the answer rule: its mirror made to hold every task's base
 * (cloned or fetched once), read through one RepositoryAnswers. A repository without a profile is
 * left out with the reason.
 */
export async function openRepositoryAnswers(
  tasks: readonly HeldoutTask[],
  resources: TaskResources,
): Promise<{ repositories: Map<string, { answers: RepositoryAnswers; mirror: string }>; unavailable: Map<string, string> }> {
  const repositories = new Map<string, { answers: RepositoryAnswers; mirror: string }>();
  const unavailable = new Map<string, string>();
  const byRepo = new Map<string, string[]>();
  for (const t of tasks) byRepo.set(t.repo, [...(byRepo.get(t.repo) ?? []), t.base_commit]);
  for (const [repo, bases] of [...byRepo].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!resources.profiles.profiles.has(repo)) {
      unavailable.set(repo, new UnknownRepository(repo, resources.profiles).message);
      continue;
    }
    const { path, missing, source } = await resources.mirrorWith(repo, [...new Set(bases)]);
    if (missing.length) {
      unavailable.set(repo, `${source} lacks ${missing.length} base commit(s), first ${missing[0]}`);
      continue;
    }
    repositories.set(repo, { answers: new RepositoryAnswers((args) => resources.git(path, args)), mirror: path });
  }
  return { repositories, unavailable };
}
