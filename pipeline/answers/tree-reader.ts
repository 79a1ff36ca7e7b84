import { GitError } from "../git.ts";

type Git = (args: string[]) => Promise<string>;

/**
 * A repository's trees as the answer rule reads them, through git and cached for the run: a file
 * at a commit, whether one commit descends from another, and which of a set of names occur in a
 * commit's tree. Nothing is checked out.
 */
export class TreeReader {
  private readonly files = new Map<string, Promise<string | undefined>>();
  private readonly ancestry = new Map<string, Promise<boolean>>();
  private readonly names = new Map<string, Map<string, Promise<string | undefined>>>();

  constructor(private readonly git: Git) {}

  /** The file's text at the commit; undefined where the commit has no such file. */
  file(commit: string, path: string): Promise<string | undefined> {
    const key = `${commit}:${path}`;
    let read = this.files.get(key);
    if (!read) {
      read = this.git(["cat-file", "-p", key]).catch((error: unknown) => {
        if (error instanceof GitError) return undefined;
        throw error;
      });
      this.files.set(key, read);
    }
    return read;
  }

  /** Whether `commit` is `ancestor` or descends from it. */
  descends(commit: string, ancestor: string): Promise<boolean> {
    const key = `${ancestor}..${commit}`;
    let answer = this.ancestry.get(key);
    if (!answer) {
      answer = this.git(["merge-base", "--is-ancestor", ancestor, commit]).then(
        () => true,
        (error: unknown) => {
          // Exit 1 is git's "no"; anything else (an unknown commit) is a real failure.
          if (error instanceof GitError && error.code === 1) return false;
          throw error;
        },
      );
      this.ancestry.set(key, answer);
    }
    return answer;
  }

  /**
   * For each name, a file of the commit's tree where it occurs as a whole word (undefined: none),
   * the first in path order; only among the files `pathspecs` give where any are given (git's
   * pathspecs: `*.py`, `:(exclude)pkg/m.py`). Names already asked of this commit and pathspecs are
   * not searched again.
   */
  async whereNames(commit: string, names: readonly string[], pathspecs: readonly string[] = []): Promise<Map<string, string | undefined>> {
    const key = pathspecs.length ? `${commit}\0${pathspecs.join("\0")}` : commit;
    const known = this.names.get(key) ?? new Map<string, Promise<string | undefined>>();
    this.names.set(key, known);
    const wanted = [...new Set(names)].filter((n) => !known.has(n));
    if (wanted.length) {
      const search = this.grep(commit, wanted, pathspecs);
      for (const name of wanted)
        known.set(
          name,
          search.then((found) => found.get(name)),
        );
    }
    const result = new Map<string, string | undefined>();
    for (const name of names) result.set(name, await known.get(name)!);
    return result;
  }

  private async grep(commit: string, names: string[], pathspecs: readonly string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    // Whole words, fixed strings, text files only; `--null` ends the path with NUL so a ':' in a path cannot confuse the parse.
    const args = ["grep", "-I", "-F", "-w", "-o", "--null", "--no-color", ...names.flatMap((n) => ["-e", n]), commit, "--", ...pathspecs];
    let out = "";
    try {
      out = await this.git(args);
    } catch (error) {
      // git grep exits 1 when nothing matches.
      if (error instanceof GitError && error.code === 1) return found;
      throw error;
    }
    for (const line of out.split("\n")) {
      const nul = line.indexOf("\0");
      if (nul < 0) continue;
      const path = line.slice(commit.length + 1, nul);
      const match = line.slice(nul + 1);
      if (!found.has(match)) found.set(match, path);
    }
    return found;
  }
}
