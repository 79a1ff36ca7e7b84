import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { transientCause } from "../../../pipeline/failures.ts";
import { git, GitError, hasCommit } from "../../../pipeline/git.ts";
import { type FileHunks, readDiff } from "../../../pipeline/changes/hunks.ts";

/** One line of a file as the audit sees it: its number in the file and whether the test patch added it. */
export interface SourceLine {
  n: number;
  text: string;
  added: boolean;
  /** A `def` line taken from a hunk header: its indentation is not known until the hunk is read. */
  fromHeader?: boolean;
}

/**
 * Where the audit reads test sources and facts about the base revision. A repository gives whole
 * files at the base revision with the test patch applied, and can say whether a name or a message
 * exists at the base; the test patch alone gives only its hunks and knows nothing of the base.
 */
export interface SourceTree {
  readonly kind: "repository" | "test_patch";
  /** Why there is no repository, when there is none: said once per task in its flags. */
  readonly unavailable?: string;
  /** The file's lines (every line from a repository, the hunks' lines from a patch), or undefined. */
  lines(path: string): Promise<SourceLine[] | undefined>;
  /** Files that define `def name(` (test files first: those the test patch touches). */
  filesDefining(name: string): Promise<string[]>;
  /** Python files holding `text` verbatim (test files first), to find a test named by its docstring. */
  filesContaining(text: string): Promise<string[]>;
  /** Whether the base revision's non-test Python code holds `text` (undefined: cannot tell without a repository). */
  baseHas(text: string, asWord: boolean): Promise<boolean | undefined>;
}

/**
 * New-file line numbers of the lines a patch adds, and every line its hunks show, by file. With
 * `headers`, a hunk whose header names the function it sits in (`@@ … @@ def test_x(self):`, as
 * git writes it) starts with that `def` line, indented one level above the hunk's shallowest line,
 * so that a test the patch changes below its `def` can still be found in the patch alone.
 */
export function patchFiles(patch: string | FileHunks[], headers = false): Map<string, SourceLine[]> {
  const files = new Map<string, SourceLine[]>();
  for (const file of typeof patch === "string" ? readDiff(patch) : patch) {
    if (file.status === "deleted" || !file.hunks.length) continue;
    const lines: SourceLine[] = [];
    for (const hunk of file.hunks) {
      const context = hunk.scope.trim();
      if (headers && hunk.newStart > 1 && /^(async\s+)?def \w+\(/.test(context))
        lines.push({ n: hunk.newStart - 1, text: context, added: false, fromHeader: true });
      for (const line of hunk.lines) if (line.side !== "removed") lines.push({ n: line.newLine!, text: line.text, added: line.side === "added" });
    }
    files.set(file.path, lines);
  }
  return files;
}

/** Gives each hunk-header `def` the indentation one level above the shallowest line of its hunk. */
function indentHeaderDefs(lines: SourceLine[]): void {
  lines.forEach((line, i) => {
    if (!line.fromHeader) return;
    let shallowest = Infinity;
    for (let j = i + 1; j < lines.length && lines[j]!.n === lines[j - 1]!.n + 1; j++) {
      const text = lines[j]!.text;
      if (text.trim()) shallowest = Math.min(shallowest, text.length - text.trimStart().length);
    }
    const indent = Number.isFinite(shallowest) ? Math.max(0, shallowest - 4) : 0;
    line.text = " ".repeat(indent) + line.text;
  });
}

/** The test patch as the only source: its hunks, with gaps between them. */
export class PatchOnlyTree implements SourceTree {
  readonly kind = "test_patch" as const;
  private readonly files: Map<string, SourceLine[]>;

  constructor(
    testPatch: string,
    readonly unavailable: string,
  ) {
    this.files = patchFiles(testPatch, true);
    for (const lines of this.files.values()) indentHeaderDefs(lines);
  }

  async lines(path: string): Promise<SourceLine[] | undefined> {
    return this.files.get(path);
  }

  async filesDefining(name: string): Promise<string[]> {
    const def = new RegExp(`^\\s*(async\\s+)?def ${name}\\(`);
    return [...this.files].filter(([, lines]) => lines.some((l) => def.test(l.text))).map(([path]) => path);
  }

  async filesContaining(text: string): Promise<string[]> {
    return [...this.files].filter(([, lines]) => lines.some((l) => l.text.includes(text))).map(([path]) => path);
  }

  async baseHas(): Promise<undefined> {
    return undefined;
  }
}

/**
 * A repository at the base revision with the test patch applied, read from a bare mirror without a
 * checkout: the patch is applied to a temporary index and written as a tree of its own.
 */
export class RepositoryTree implements SourceTree {
  readonly kind = "repository" as const;
  private readonly cache = new Map<string, Promise<SourceLine[] | undefined>>();
  private readonly baseCache = new Map<string, Promise<boolean>>();
  private readonly added: Map<string, Set<number>>;
  private readonly patchedFiles: string[];

  private constructor(
    private readonly gitDir: string,
    private readonly base: string,
    private readonly tree: string,
    appliedDiff: string,
  ) {
    const files = patchFiles(appliedDiff);
    this.added = new Map([...files].map(([path, lines]) => [path, new Set(lines.filter((l) => l.added).map((l) => l.n))]));
    this.patchedFiles = [...files.keys()];
  }

  /** Opens the tree; a test patch that does not apply is an error with git's words (the caller says so). */
  static async open(gitDir: string, base: string, testPatch: string): Promise<RepositoryTree> {
    const scratch = await mkdtemp(join(tmpdir(), "switch-swe-audit-"));
    const env = { GIT_INDEX_FILE: join(scratch, "index") };
    try {
      await git([`--git-dir=${gitDir}`, "read-tree", base], { env });
      if (testPatch.trim()) await git([`--git-dir=${gitDir}`, "apply", "--cached", "--whitespace=nowarn", "-"], { env, input: testPatch });
      const tree = (await git([`--git-dir=${gitDir}`, "write-tree"], { env })).trim();
      // Which lines the patch added, numbered as they stand in the tree: git applies a hunk where
      // its context is found, which may be lines away from where its header says.
      const applied = await git([`--git-dir=${gitDir}`, "diff", "--no-ext-diff", "--no-renames", "--no-color", "-U0", base, tree]);
      return new RepositoryTree(gitDir, base, tree, applied);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  lines(path: string): Promise<SourceLine[] | undefined> {
    let found = this.cache.get(path);
    if (!found) {
      const added = this.added.get(path) ?? new Set<number>();
      found = git([`--git-dir=${this.gitDir}`, "cat-file", "blob", `${this.tree}:${path}`]).then(
        (text) => text.split("\n").map((t, i) => ({ n: i + 1, text: t, added: added.has(i + 1) })),
        (error: unknown) => {
          if (error instanceof GitError) return undefined;
          throw error;
        },
      );
      this.cache.set(path, found);
    }
    return found;
  }

  async filesDefining(name: string): Promise<string[]> {
    const out = await grep([`--git-dir=${this.gitDir}`, "grep", "-l", "-E", `^\\s*(async\\s+)?def ${name}\\(`, this.tree, "--", "*.py"]);
    const files = out.map((l) => l.slice(this.tree.length + 1));
    return [...files.filter((f) => this.patchedFiles.includes(f)), ...files.filter((f) => !this.patchedFiles.includes(f))];
  }

  async filesContaining(text: string): Promise<string[]> {
    const out = await grep([`--git-dir=${this.gitDir}`, "grep", "-l", "-F", "-e", text, this.tree, "--", "*.py"]);
    const files = out.map((l) => l.slice(this.tree.length + 1));
    return [...files.filter((f) => this.patchedFiles.includes(f)), ...files.filter((f) => !this.patchedFiles.includes(f))];
  }

  baseHas(text: string, asWord: boolean): Promise<boolean> {
    const key = `${asWord ? "w" : "f"}:${text}`;
    let found = this.baseCache.get(key);
    if (!found) {
      // The library's own code, not its tests: a name only a test uses at the base is not public.
      const args = [
        `--git-dir=${this.gitDir}`,
        "grep",
        "-l",
        "-F",
        ...(asWord ? ["-w"] : []),
        "-e",
        text,
        this.base,
        "--",
        "*.py",
        ":!*tests/*",
        ":!*test_*.py",
        ":!*testing/*",
      ];
      found = grep(args).then((files) => files.length > 0);
      this.baseCache.set(key, found);
    }
    return found;
  }
}

/**
 * A task's sources: the repository when its mirror holds the base commit and the test patch applies
 * there, else the test patch, saying why. A failure that is not git's judgement of the task (a full
 * disk, a killed git) is thrown: it must not become an audit record.
 */
export async function sourcesAt(mirror: string, base: string, testPatch: string): Promise<SourceTree> {
  if (!(await hasCommit(mirror, base))) return new PatchOnlyTree(testPatch, `the mirror lacks base commit ${base}`);
  try {
    return await RepositoryTree.open(mirror, base, testPatch);
  } catch (error) {
    if (!(error instanceof GitError) || transientCause(error)) throw error;
    return new PatchOnlyTree(testPatch, `the test patch does not apply at the base: ${error.message}`);
  }
}

/** `git grep`'s matches; its exit status 1 means none. */
async function grep(args: string[]): Promise<string[]> {
  try {
    return (await git(args)).split("\n").filter(Boolean);
  } catch (error) {
    if (error instanceof GitError && error.code === 1) return [];
    throw error;
  }
}
