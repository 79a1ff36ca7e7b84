import type { PullRequestPlan } from "./plan.ts";

type Run = (args: string[], at?: number) => Promise<string>;

/** What a pull request left in git when it was built on top of the ones before it. */
export interface PullHistory {
  index: number;
  number: number;
  /** The commit its records name as its base: the wave's. */
  base: string;
  /** Its own commits, oldest first, with their times. */
  commits: { sha: string; at: number }[];
  head: string;
  merge: "merge" | "squash";
  mergeCommit: string;
  mergedAt: number;
  /** Commits a maintainer made on main right after the merge (a flaky test made deterministic). */
  repairs: { sha: string; at: number }[];
}

/**
 * The plan's pull requests in waves: consecutive ones with the same `wave` are open at the same
 * time (each branches from main as it stood when the wave began); any other is a wave of its own.
 */
export function wavesOf(prs: readonly PullRequestPlan[], where: string): number[][] {
  const waves: number[][] = [];
  const seen = new Set<number>();
  prs.forEach((pr, i) => {
    const last = waves.at(-1);
    if (pr.wave !== undefined && last && prs[last[0]!]!.wave === pr.wave) {
      last.push(i);
      return;
    }
    if (pr.wave !== undefined) {
      if (seen.has(pr.wave)) throw new Error(`${where}: pull request ${i + 1} is in wave ${pr.wave}, whose pull requests must be listed one after another`);
      seen.add(pr.wave);
    }
    waves.push([i]);
  });
  return waves;
}

/**
 * Rewrites a wave's history so its pull requests are concurrent. They were built one on top of
 * another (the generator's model of the code moves forward one change at a time); here each one's
 * commits are replayed on a branch from `waveBase`, so no base of the wave holds another's change,
 * and they are merged into main in the order of their merge times, each maintainer repair after
 * its merge. The pull requests of a wave change different files, so main ends with exactly the
 * tree it had; anything else is a plan error. `shaMap` learns every commit and tree that moved.
 */
export async function replayConcurrently(run: Run, waveBase: string, histories: PullHistory[], shaMap: Map<string, string>, where: string): Promise<void> {
  const rev = async (what: string) => (await run(["rev-parse", what])).trim();
  const map = async (from: string, to: string) => {
    shaMap.set(from, to);
    const [a, b] = [await rev(`${from}^{tree}`), await rev(`${to}^{tree}`)];
    if (a !== b) shaMap.set(a, b);
  };
  const sequentialTip = await rev("HEAD");
  await run(["reset", "--quiet", "--hard", waveBase]);
  const branches = new Map<number, string>();
  for (const h of histories) {
    const branch = `wave-pr-${h.index}`;
    await run(["checkout", "--quiet", "-b", branch, waveBase]);
    for (const c of h.commits) {
      try {
        await run(["cherry-pick", "--allow-empty", "--keep-redundant-commits", c.sha], c.at);
      } catch (error) {
        throw new Error(
          `${where}: pull request #${h.number} cannot be open beside the others of its wave: its commit ${c.sha.slice(0, 12)} changes lines another pull request of the wave changes (${(error as Error).message.split("\n")[0]}); put them in different waves`,
        );
      }
      await map(c.sha, await rev("HEAD"));
    }
    branches.set(h.index, branch);
    await run(["update-ref", `refs/pull/${h.number}/head`, await rev("HEAD")]);
  }
  await run(["checkout", "--quiet", "main"]);
  const events = histories
    .flatMap((h) => [
      { at: h.mergedAt, h, repair: undefined as PullHistory["repairs"][number] | undefined },
      ...h.repairs.map((r) => ({ at: r.at, h, repair: r })),
    ])
    .sort((a, b) => a.at - b.at || a.h.index - b.h.index || (a.repair ? 1 : 0) - (b.repair ? 1 : 0));
  for (const { at, h, repair } of events) {
    if (repair) {
      await run(["cherry-pick", "--allow-empty", "--keep-redundant-commits", repair.sha], at);
      await map(repair.sha, await rev("HEAD"));
      continue;
    }
    const message = await run(["log", "-1", "--format=%B", h.mergeCommit]);
    if (h.merge === "squash") {
      await run(["merge", "--quiet", "--squash", branches.get(h.index)!], at);
      await run(["commit", "--quiet", "--allow-empty", "--no-gpg-sign", "-m", message.trimEnd()], at);
    } else await run(["merge", "--quiet", "--no-ff", "--no-gpg-sign", "-m", message.trimEnd(), branches.get(h.index)!], at);
    await map(h.mergeCommit, await rev("HEAD"));
  }
  for (const branch of branches.values()) await run(["branch", "--quiet", "-D", branch]);
  if ((await rev("HEAD^{tree}")) !== (await rev(`${sequentialTip}^{tree}`)))
    throw new Error(
      `${where}: the wave's pull requests, merged concurrently, do not give the tree they give one after another: two of them change the same file`,
    );
}

/** `text` with every full commit or tree id `shaMap` knows replaced by where it moved. */
export function remapShas(text: string, shaMap: ReadonlyMap<string, string>): string {
  return shaMap.size ? text.replace(/\b[0-9a-f]{40}\b/g, (sha) => shaMap.get(sha) ?? sha) : text;
}
