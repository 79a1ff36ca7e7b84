import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { simpleGit } from "simple-git";
import { TransientFailure } from "./failures.ts";

const execFileAsync = promisify(execFile);

/** Git with no user or system config and no prompts, so runs do not depend on the machine. */
export const GIT_ENV = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: tmpdir(),
};

/** Runs git; a failure is always a GitError with git's own words (stderr) and exit status. */
export async function git(args: string[], options: { cwd?: string; input?: string | Buffer; env?: Record<string, string> } = {}): Promise<string> {
  if (options.input === undefined) {
    try {
      const { stdout } = await execFileAsync("git", args, { cwd: options.cwd, env: { ...GIT_ENV, ...options.env }, maxBuffer: 1 << 30, encoding: "utf8" });
      return stdout;
    } catch (error) {
      const failed = error as { code?: unknown; stderr?: string; message: string };
      // A git that could not start at all (ENOENT) or hit a full disk keeps its errno code.
      if (typeof failed.code === "string") throw error;
      throw new GitError(args, typeof failed.code === "number" ? failed.code : -1, failed.stderr || failed.message);
    }
  }
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, { cwd: options.cwd, env: { ...GIT_ENV, ...options.env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(stdout) : reject(new GitError(args, code ?? -1, stderr))));
    // git may exit (with an error it reports) before reading all its input; the pipe's EPIPE is not ours.
    child.stdin.on("error", () => undefined);
    child.stdin.end(options.input);
  });
}

export class GitError extends Error {
  constructor(
    readonly args: string[],
    readonly code: number,
    readonly stderr: string,
  ) {
    super(`git ${args[0]} failed (exit ${code}): ${stderr.trim().split("\n").slice(0, 3).join(" | ")}`);
    this.name = "GitError";
  }
}

/**
 * simple-git over the isolated environment, for the mirror cache's clones and fetches. Pointing
 * GIT_CONFIG_GLOBAL at /dev/null is what keeps a machine's own git config out of our runs, so
 * simple-git is told that this config path is meant. Its failures surface as GitError, like every
 * other git call's.
 */
async function mirrorGit(
  baseDir: string,
  operation: string,
  run: (client: ReturnType<typeof simpleGit>) => Promise<unknown>,
  extraEnv: Record<string, string> = {},
  /** Kill git when it writes nothing (its progress included) for this long. */
  idleMs?: number,
): Promise<void> {
  const env = { ...GIT_ENV, ...extraEnv };
  const guarded = Object.keys(env).filter((key) => key.startsWith("GIT_"));
  try {
    const client = simpleGit({
      baseDir,
      allowEnvironment: guarded,
      unsafe: { allowUnsafeConfigPaths: true, allowUnsafeConfigEnvCount: true },
      ...(idleMs ? { timeout: { block: idleMs } } : {}),
    });
    await run(client.env(env));
  } catch (error) {
    throw new GitError([operation], (error as { exitCode?: number }).exitCode ?? -1, (error as Error).message);
  }
}

/**
 * Bare mirrors of the repositories under one directory, cloned once and shared by every task
 * and stage. The source can be a URL or a local path (mirrors, firewalls, offline work).
 */
/** Whether a clone source is a URL (https://, ssh://, file://, or scp-like user@host:path) rather than a local path. */
export function isRemoteCloneUrl(url: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(url) || /^[\w.-]+@[\w.-]+:/.test(url);
}

/**
 * A local copy of `repo` in `dir`, when it holds one: `OWNER__NAME.bundle`, an `OWNER__NAME.git`
 * bare repository or an `OWNER__NAME` clone (offline work, CI, a repository fetched by hand).
 */
export function localCopyOf(dir: string, repo: string): string | undefined {
  return localCopyNames(repo)
    .map((name) => resolve(dir, name))
    .find((path) => existsSync(path));
}

/** The names a local copy of `repo` may have, in the order they are looked for. */
export function localCopyNames(repo: string): string[] {
  const stem = repo.replace("/", "__");
  return [`${stem}.bundle`, `${stem}.git`, stem];
}

export class MirrorCache {
  /** One clone or fetch per repository at a time; concurrent records of a repository wait for it. */
  private readonly pending = new Map<string, Promise<string>>();

  readonly root: string;

  /** A directory of local copies (see localCopyOf) that win over every other source: `--mirrors`, SWITCH_SWE_MIRRORS. */
  localCopies?: string;

  /**
   * `envFor` gives the environment git needs to fetch from a source (a git service's token as an
   * HTTP header, say), kept out of the command line and the mirror's config.
   */
  constructor(
    root: string,
    private readonly envFor: (source: string) => Record<string, string> = () => ({}),
    /** A remote clone or fetch that moves less than a byte a second (HTTP), or writes nothing (ssh, git://), for this long is given up. */
    private readonly stallSeconds = 120,
  ) {
    this.root = resolve(root);
  }

  /**
   * A clone or fetch from `source`, bounded: git's HTTP transport gives up a transfer that stalls
   * (a server that accepts and never answers would otherwise hold the run for ever), and that is
   * said as what it is, a transient fact about the server. Other remote transports (ssh, git://)
   * have no such limit: git is run with `--progress` and killed when it writes nothing for as
   * long. A local source is not bounded (a large local clone may be silent while it copies).
   */
  private async transfer(
    baseDir: string,
    operation: string,
    source: string,
    run: (client: ReturnType<typeof simpleGit>, progress: string[]) => Promise<unknown>,
  ): Promise<void> {
    const bound = { GIT_HTTP_LOW_SPEED_LIMIT: "1", GIT_HTTP_LOW_SPEED_TIME: String(this.stallSeconds) };
    const remote = isRemoteCloneUrl(source) && !/^file:/i.test(source);
    try {
      await mirrorGit(
        baseDir,
        operation,
        (client) => run(client, remote ? ["--progress"] : []),
        { ...bound, ...this.envFor(source) },
        remote ? this.stallSeconds * 1000 : undefined,
      );
    } catch (error) {
      if (error instanceof GitError && /Operation too slow|Less than \d+ bytes\/sec|block timeout/i.test(error.stderr))
        throw new TransientFailure(`git ${operation} of ${source} stalled: the server sent nothing for ${this.stallSeconds} s`, { cause: error });
      throw error;
    }
  }

  /** Patches applied in order over a commit of a mirror, as one diff (see composePatches). */
  compose(mirror: string, commit: string, patches: { name: string; text: string }[]): ReturnType<typeof composePatches> {
    return composePatches(mirror, commit, patches);
  }

  /** `git apply --check` of a patch against a commit of a mirror (see applyCheck). */
  applyCheck(mirror: string, commit: string, patch: string): Promise<{ ok: true } | { ok: false; error: string }> {
    return applyCheck(mirror, commit, patch);
  }

  /** A git command run against a mirror (`git --git-dir=MIRROR ...`); its standard output. */
  git(mirror: string, args: string[]): Promise<string> {
    return git([`--git-dir=${mirror}`, ...args]);
  }

  pathFor(repo: string): string {
    return join(this.root, `${repo.replace("/", "__")}.git`);
  }

  /** Returns a mirror that holds `commit`, cloning or fetching only when it does not; CommitNotInSource when the source lacks it. */
  async ensure(repo: string, source: string, commit?: string): Promise<string> {
    const { path, missing } = await this.ensureSome(repo, source, commit ? [commit] : []);
    if (missing.length) throw new CommitNotInSource(missing, source);
    return path;
  }

  /**
   * A mirror with as many of `commits` as its source has: cloned once, fetched (every ref, pull
   * requests' heads included) when one is missing; returns the ones still missing after that.
   */
  async ensureSome(repo: string, source: string, commits: string[]): Promise<{ path: string; missing: string[] }> {
    const previous = this.pending.get(repo) ?? Promise.resolve("");
    const next = previous.catch(() => "").then(() => this.ensureNow(repo, source, commits));
    // Only the order is kept here: a failure belongs to the caller, never to the next in line, and
    // a kept rejection nobody waits on would be an unhandled one.
    this.pending.set(
      repo,
      next.then(
        ({ path }) => path,
        () => "",
      ),
    );
    return next;
  }

  private async ensureNow(repo: string, given: string, commits: string[]): Promise<{ path: string; missing: string[] }> {
    const path = this.pathFor(repo);
    // The same commits from a copy at hand: where they come from changes no result.
    const source = (this.localCopies && localCopyOf(this.localCopies, repo)) || given;
    if (!existsSync(join(path, "HEAD"))) {
      await mkdir(this.root, { recursive: true });
      const partial = `${path}.partial-${process.pid}`;
      await rm(partial, { recursive: true, force: true });
      try {
        await this.transfer(this.root, "clone", source, (client, progress) => client.clone(source, partial, ["--mirror", ...progress]));
      } catch (error) {
        // A clone given up (stalled, refused) leaves nothing behind; only a killed run leaves a partial for the leftovers sweep.
        await rm(partial, { recursive: true, force: true });
        throw error;
      }
      // Renamed into place only when whole, so a killed clone is never mistaken for a mirror.
      await rename(partial, path);
    }
    const absent = async () => (await Promise.all(commits.map(async (c) => ((await hasCommit(path, c)) ? null : c)))).filter((c): c is string => c !== null);
    let missing = await absent();
    if (missing.length) {
      // Pull requests' heads (refs/pull/*) come along: a squash-merged PR's head is only there.
      await this.transfer(path, "fetch", source, (client, progress) => client.fetch(source, "+refs/*:refs/*", progress));
      missing = await absent();
    }
    return { path, missing };
  }
}

/** Commits a repository's clone source does not have (force-pushed away, never pushed): a fact about its history. */
export class CommitNotInSource extends Error {
  override name = "CommitNotInSource";
  constructor(
    readonly commits: string[],
    readonly source: string,
  ) {
    super(`${commits.length === 1 ? `commit ${commits[0]} is` : `commits ${commits.join(", ")} are`} not in ${source}`);
  }
}

export async function hasCommit(gitDir: string, commit: string): Promise<boolean> {
  try {
    await git([`--git-dir=${gitDir}`, "cat-file", "-e", `${commit}^{commit}`]);
    return true;
  } catch {
    return false;
  }
}

/**
 * `git apply --check` of `patch` against the tree of `commit`, through a throwaway index: no
 * checkout is written, so this is cheap enough to run for every split.
 */
export async function applyCheck(gitDir: string, commit: string, patch: string): Promise<{ ok: true } | { ok: false; error: string }> {
  if (!patch) return { ok: true };
  const scratch = await mkdtemp(join(tmpdir(), "switch-swe-index-"));
  const env = { GIT_INDEX_FILE: join(scratch, "index") };
  try {
    // --git-dir always: without it a broken mirror would let git find an enclosing repository.
    await git([`--git-dir=${gitDir}`, "read-tree", commit], { env });
    await git([`--git-dir=${gitDir}`, "apply", "--cached", "--check", "--whitespace=nowarn", "-"], { env, input: patch });
    return { ok: true };
  } catch (error) {
    return { ok: false, error: error instanceof GitError ? error.stderr.trim() : (error as Error).message };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * The diff from `commit` to its tree with `patches` applied in order, through a throwaway index
 * (no checkout is written; the composed tree's objects go into the mirror): one patch made of
 * several, such as a reference fix and the extensions written over it. Or the first patch that
 * does not apply, with git's words.
 */
export async function composePatches(
  gitDir: string,
  commit: string,
  patches: { name: string; text: string }[],
): Promise<{ ok: true; diff: string } | { ok: false; name: string; error: string }> {
  const scratch = await mkdtemp(join(tmpdir(), "switch-swe-index-"));
  const env = { GIT_INDEX_FILE: join(scratch, "index") };
  try {
    await git([`--git-dir=${gitDir}`, "read-tree", commit], { env });
    for (const patch of patches) {
      if (!patch.text) continue;
      try {
        await git([`--git-dir=${gitDir}`, "apply", "--cached", "--whitespace=nowarn", "-"], { env, input: patch.text });
      } catch (error) {
        return { ok: false, name: patch.name, error: error instanceof GitError ? error.stderr.trim() : (error as Error).message };
      }
    }
    const tree = (await git([`--git-dir=${gitDir}`, "write-tree"], { env })).trim();
    const diff = await git([`--git-dir=${gitDir}`, "diff", "--no-color", "--no-ext-diff", "--binary", "--full-index", "-M", commit, tree]);
    return { ok: true, diff };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** The source has a commit but not the contents of some of its files (a partial clone, a snapshot without its large files). */
export class IncompleteSource extends Error {
  override name = "IncompleteSource";
  constructor(
    readonly commit: string,
    readonly paths: string[],
    readonly mirror: string,
  ) {
    super(
      `the clone source lacks the contents of ${paths.length} file(s) of ${commit.slice(0, 12)} (${paths.slice(0, 5).join(", ")}${paths.length > 5 ? ", …" : ""}): it is a partial clone or a snapshot without its large files, so no checkout of that commit can be made from it`,
    );
  }
}
