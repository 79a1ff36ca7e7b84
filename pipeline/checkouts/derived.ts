import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { git, GitError } from "../git.ts";

/** A task's upstream reference, as history holds it (a full-index diff: the reverse merges three ways from its blobs), to be reversed out of a later base. */
export interface ReversedReference {
  taskId: string;
  patch: string;
}

/** The fixed identity of a derived commit, so every machine that makes it gets the same id. */
const DERIVED_IDENTITY = {
  GIT_AUTHOR_NAME: "switch-swe",
  GIT_AUTHOR_EMAIL: "switch-swe@localhost",
  GIT_COMMITTER_NAME: "switch-swe",
  GIT_COMMITTER_EMAIL: "switch-swe@localhost",
  GIT_AUTHOR_DATE: "2000-01-01T00:00:00Z",
  GIT_COMMITTER_DATE: "2000-01-01T00:00:00Z",
};

export type DerivedCommit = { ok: true; commit: string } | { ok: false; taskId: string; error: string };

/**
 * A commit of `base`'s files with each given task's upstream reference reversed out of them (git
 * apply -R --3way on an index of its own, nothing checked out; a conflict is a refusal, never
 * resolved), as a child of `base` with a fixed author,
 * date and message: the same inputs give the same commit id in any clone. A reference that does
 * not reverse cleanly (later history changed its lines) is said with the task it belongs to. The
 * commit is kept reachable by a ref of its own so a mirror's housekeeping never drops it.
 */
export async function derivedCommit(mirror: string, base: string, reversed: readonly ReversedReference[]): Promise<DerivedCommit> {
  const scratch = await mkdtemp(join(tmpdir(), "switch-swe-derived-"));
  const env = { GIT_INDEX_FILE: join(scratch, "index") };
  const run = (args: string[], input?: string) =>
    git([`--git-dir=${mirror}`, ...args], { env: { ...env, ...DERIVED_IDENTITY }, ...(input === undefined ? {} : { input }) });
  try {
    await run(["read-tree", base]);
    for (const { taskId, patch } of reversed) {
      try {
        // Three-way, from the blobs the full-index patch names: the later base's lines around the
        // change may have moved (tests appended after it), which a strict reverse would refuse.
        await run(["apply", "--cached", "-R", "--3way", "--whitespace=nowarn", "--binary", "-"], patch);
      } catch (error) {
        if (!(error instanceof GitError)) throw error;
        const lines = error.stderr.trim().split("\n");
        const conflicted = lines.filter((l) => l.startsWith("U ")).map((l) => l.slice(2));
        if (conflicted.length) return { ok: false, taskId, error: `the reverse conflicts with later changes to ${conflicted.join(", ")}` };
        const said = lines.filter((l) => !/^(Falling back|Applied patch)/.test(l));
        return { ok: false, taskId, error: said.slice(0, 2).join(" | ") || "the reverse does not merge cleanly" };
      }
      const unmerged = (await run(["ls-files", "--unmerged"])).trim();
      if (unmerged)
        return {
          ok: false,
          taskId,
          error: `the reverse conflicts with later changes in ${[...new Set(unmerged.split("\n").map((l) => l.split("\t")[1]))].join(", ")}`,
        };
    }
    const tree = (await run(["write-tree"])).trim();
    const message = `switch-swe: ${base} without the upstream reference of ${reversed.map((r) => r.taskId).join(", ")}\n`;
    const commit = (await run(["commit-tree", tree, "-p", base], message)).trim();
    await run(["update-ref", `refs/switch-swe/derived/${commit}`, commit]);
    return { ok: true, commit };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** A session's checkout, as its specification names it: a base, and for a derived one the tasks reversed out and the commit that gives. */
export interface SessionCheckout {
  path: string;
  task_id: string;
  base_commit: string;
  derived?: { without: string[]; commit: string };
}

/**
 * The commit whose files a session checkout gets, made in `mirror` where it is derived (the same
 * id everywhere, from the base and the reversed references' upstream patches, which only the
 * held-out assets hold): every runner, the session runner and an export alike, provisions
 * through this. A derived checkout that does not come out as its specification says is refused.
 */
export async function checkoutCommit(mirror: string, checkout: SessionCheckout, upstreamPatch: (taskId: string) => string | undefined): Promise<string> {
  if (!checkout.derived) return checkout.base_commit;
  const reversed = checkout.derived.without.map((taskId) => {
    const patch = upstreamPatch(taskId);
    if (patch === undefined) throw new Error(`${checkout.path} (${checkout.task_id}) reverses ${taskId}'s fix, but no held-out asset of ${taskId} is at hand`);
    return { taskId, patch };
  });
  const made = await derivedCommit(mirror, checkout.base_commit, reversed);
  if (!made.ok) throw new Error(`${checkout.path} (${checkout.task_id}): ${made.taskId}'s fix does not reverse out of ${checkout.base_commit}: ${made.error}`);
  if (made.commit !== checkout.derived.commit)
    throw new Error(
      `${checkout.path} (${checkout.task_id}): made again, the derived checkout is ${made.commit}, not ${checkout.derived.commit} as the session says`,
    );
  return made.commit;
}
