import { readTestPatch } from "../../pipeline/changes/added-tests.ts";
import { DiffParseError } from "../../pipeline/changes/diff.ts";
import { GitError } from "../../pipeline/git.ts";
import type { ClassificationRules } from "../../pipeline/schemas/repo-profile.ts";
import { parse } from "yaml";
import { splitReferenceChange } from "./split.ts";

type Git = (args: string[]) => Promise<string>;

/**
 * A skeleton of an extension file (`switch-swe extend new`): what an author needs to write a
 * task's stages, as comments (the task's requests, its base, the source files its upstream fix
 * changes, the tests that fix adds, the pull request's own commits), and the fields to fill, left
 * empty so that a skeleton nobody filled in never passes `extend check` nor split.
 */

/** One commit of the pull request, as an author choosing where to cut it reads it. */
export interface PullRequestCommit {
  sha: string;
  subject: string;
  /** The source files it changes, and the test functions it adds (what a stage of it would verify). */
  sourceFiles: string[];
  tests: string[];
}

/** The pull request's own commits from the base, oldest first, and where they were found; or why there are none to cut at. */
export type PullRequestHistory = { number: number | null; head: string; foundAt: string; commits: PullRequestCommit[] } | { unavailable: string };

/** What the skeleton says of the task. */
export interface SkeletonFacts {
  taskId: string;
  baseCommit: string;
  /** The task's upstream requests, in order: reconstruct's stages, or the record's own request alone. */
  requests: string[];
  /** Where `requests` come from, for the reader: "reconstruct" or the record's field. */
  requestsFrom: string;
  sourceFiles: string[];
  upstreamTests: string[];
  history: PullRequestHistory;
  /** The command that checks the filled file. */
  checkCommand: string;
}

/** What the skeleton's commented `upstream_commits` holds where a commit and a request go. */
const PLACEHOLDERS = new Set(["COMMIT", "..."]);

/** At most this many of the pull request's commits are listed (an author cuts at a few). */
const LISTED_COMMITS = 60;

/**
 * The pull request's own commits, as `upstream_commits` reads them: its head (refs/pull/N/head, or
 * the merge commit's second parent), then the commits on its first-parent line that descend from
 * the base, each with what it changes and the tests it adds.
 */
export async function pullRequestHistory(
  git: Git,
  base: string,
  pull: { number: number | null; mergeCommit: string | null },
  rules: ClassificationRules,
): Promise<PullRequestHistory> {
  const resolve = async (ref: string) => (await git(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]).catch(() => "")).trim();
  let head = "";
  let foundAt = "";
  if (pull.number !== null && (head = await resolve(`refs/pull/${pull.number}/head`))) foundAt = `refs/pull/${pull.number}/head`;
  else if (pull.mergeCommit && (head = await resolve(`${pull.mergeCommit}^2`))) foundAt = `the second parent of merge commit ${pull.mergeCommit.slice(0, 12)}`;
  if (!head) {
    const named = pull.number === null ? "the record names no pull request" : `the repository holds no refs/pull/${pull.number}/head`;
    return {
      unavailable: `${named}${pull.mergeCommit ? ` and merge commit ${pull.mergeCommit.slice(0, 12)} has no second parent there` : " nor a merge commit"}`,
    };
  }
  const descends = await git(["merge-base", "--is-ancestor", base, head]).then(
    () => true,
    (error: unknown) => {
      if (error instanceof GitError && error.code === 1) return false;
      throw error;
    },
  );
  if (!descends)
    return { unavailable: `the pull request's head ${head.slice(0, 12)} (${foundAt}) does not descend from the base: its commits cannot be cut from it` };
  const listed = (await git(["log", "--reverse", "--first-parent", "--ancestry-path", "--format=%H %s", `${base}..${head}`])).split("\n").filter(Boolean);
  const commits: PullRequestCommit[] = [];
  let previous = base;
  for (const line of listed.slice(0, LISTED_COMMITS)) {
    const [sha, ...subject] = line.split(" ");
    commits.push({ sha: sha!, subject: subject.join(" "), ...(await commitChange(git, previous, sha!, rules)) });
    previous = sha!;
  }
  return {
    number: pull.number,
    head,
    foundAt: listed.length > LISTED_COMMITS ? `${foundAt}; the first ${LISTED_COMMITS} of ${listed.length}` : foundAt,
    commits,
  };
}

/** What one commit changes, read as split reads a change. */
async function commitChange(git: Git, from: string, to: string, rules: ClassificationRules): Promise<Pick<PullRequestCommit, "sourceFiles" | "tests">> {
  try {
    const change = splitReferenceChange(await git(["diff", "--binary", "--full-index", "-M", from, to]), rules);
    return { sourceFiles: change.sourceFiles, tests: readTestPatch(change.testPatch).added };
  } catch (error) {
    if (error instanceof DiffParseError) return { sourceFiles: [], tests: [] };
    throw error;
  }
}

/** Lines as YAML comments, indented under a heading. */
const quoted = (text: string, indent = "  ") =>
  text
    .replace(/\r\n?/g, "\n")
    .trimEnd()
    .split("\n")
    .map((l) => `#${indent}${l}`.trimEnd());

const listed = (items: string[], none: string) => (items.length ? items.map((i) => `#   ${i}`) : [`#   (${none})`]);

/** The skeleton's text: the facts as comments, then the fields to fill, empty. */
export function extensionSkeleton(facts: SkeletonFacts): string {
  const lines = [
    `# Benchmark-authored stages for ${facts.taskId} (docs/EXTENDING.md says how to write them well).`,
    "# Written by `switch-swe extend new` from the task's record. Fill in every empty field below, then:",
    `#   ${facts.checkCommand}`,
    "# A field left empty fails that check, and split.",
    "#",
    `# The task's base commit: ${facts.baseCommit}`,
    "#",
    ...requestLines(facts),
    "#",
    "# The source files the upstream fix changes (the task's C_t). A stage's implementation changes",
    "# these, and another file only when its request truly needs it (that changes the task's locality):",
    ...listed(facts.sourceFiles, "none"),
    "#",
    "# The tests the upstream fix adds (a stage adds test functions of its own, never these again):",
    ...listed(facts.upstreamTests, "none"),
    "#",
    ...historyLines(facts.history),
    `task: ${facts.taskId}`,
    "# Who writes these stages (a name or a team), and why they are what a user of the project asks next.",
    'author: ""',
    'reason: ""',
    "# One entry a stage, in the order they apply (`after: N`, optional, places it after request N).",
    "# request: what the user writes, stating every public name, message, exception type and literal",
    "#   value its tests check, and no code of the fix (a YAML block scalar: `request: |`).",
    "# implementation: a git diff over the upstream fix and the earlier stages' implementations, of",
    "#   source files only.",
    "# tests: a git diff over the upstream tests and the earlier stages' tests, of test files only, that",
    "#   adds test functions of its own and changes no line already there.",
    "stages:",
    '  - request: ""',
    '    implementation: ""',
    '    tests: ""',
  ];
  return lines.join("\n") + "\n";
}

function requestLines(facts: SkeletonFacts): string[] {
  const heading =
    facts.requestsFrom === "reconstruct"
      ? `# The task's upstream requests as reconstruct made them (${facts.requests.length}); a stage comes after the last, or after request N with \`after: N\`:`
      : `# The task's request, the record's ${facts.requestsFrom} (reconstruct may cut it into stages; \`after: N\` counts those):`;
  return [heading, ...facts.requests.flatMap((text, i) => [`#  request ${i + 1}:`, ...quoted(text, "    | ")])];
}

function historyLines(history: PullRequestHistory): string[] {
  if ("unavailable" in history)
    return ["# The pull request's own commits: none to cut at here (" + history.unavailable + "),", "# so every stage is written here, under `stages`.", "#"];
  const commits = history.commits.map(
    (c) =>
      `${c.sha.slice(0, 12)}  ${c.subject}${c.sourceFiles.length ? `  [source: ${c.sourceFiles.join(", ")}]` : "  [no source file]"}${c.tests.length ? ` [adds ${c.tests.length} test(s): ${c.tests.map((t) => t.split("::").pop()).join(", ")}]` : " [adds no test]"}`,
  );
  return [
    `# The pull request's own commits${history.number === null ? "" : ` (#${history.number}`}, from ${history.foundAt}${history.number === null ? "" : ")"}, oldest first.`,
    "# A stage can be cut from real history (its code and tests upstream's, only its request written):",
    "# each stage after the first must change a source file and add a test function of its own.",
    ...listed(commits, "none after the base"),
    "# To cut there, uncomment `upstream_commits` and fill it in: first_stage_until, the last commit of",
    "# what request 1 asks for; each stage, the last commit it takes and the request that asks for it.",
    "# Its stages come first; the stages below come after them (delete `stages` if there are none).",
    "# upstream_commits:",
    "#   first_stage_until: COMMIT",
    "#   stages:",
    "#     - commit: COMMIT",
    "#       request: |",
    "#         ...",
    "#",
  ];
}

/**
 * Fields a skeleton leaves empty (or holding one of its placeholders) and an author has not filled
 * in yet: each is named, so that a skeleton nobody filled in is refused for what it is, not for the
 * first schema rule it breaks.
 */
export function unfilledFields(path: string, text: string): { field: string; cause: string; message: string }[] {
  let raw: unknown;
  try {
    raw = parse(text);
  } catch {
    return [];
  }
  if (!raw || typeof raw !== "object") return [];
  const empty = (value: unknown) => value === null || value === undefined || (typeof value === "string" && (!value.trim() || PLACEHOLDERS.has(value.trim())));
  const out: { field: string; cause: string; message: string }[] = [];
  const check = (object: Record<string, unknown>, keys: string[], at: string) => {
    for (const key of keys)
      if (empty(object[key]))
        out.push({
          field: `${at}${key}`,
          cause: "unfilled",
          message: `${path}: field ${at}${key}: is empty: fill it in (the comments above it say what it takes; docs/EXTENDING.md how to write it)`,
        });
  };
  const file = raw as Record<string, unknown>;
  check(file, ["author", "reason"], "");
  const stages = (value: unknown) => (Array.isArray(value) ? (value as unknown[]) : []);
  const commits = (file.upstream_commits ?? {}) as Record<string, unknown>;
  if (file.upstream_commits) check(commits, ["first_stage_until"], "upstream_commits.");
  stages(commits.stages).forEach((s, i) => check((s ?? {}) as Record<string, unknown>, ["commit", "request"], `upstream_commits.stages.${i}.`));
  stages(file.stages).forEach((s, i) => check((s ?? {}) as Record<string, unknown>, ["request", "implementation", "tests"], `stages.${i}.`));
  return out;
}
