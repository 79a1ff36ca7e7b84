import { existsSync, readFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import seedrandom from "seedrandom";
import { parse } from "yaml";
import { writeFileAtomic } from "../pipeline/atomic.ts";
import { canonicalJson, sha256 } from "../pipeline/canonical.ts";
import { git } from "../pipeline/git.ts";
import { fixtureValue, renderModule, renderTestFile, requestText, testNames, type DemoFunction, type FamilyName, type Stage } from "./families.ts";
import { CorpusPlan, type PullRequestPlan, type RepositoryPlan } from "./plan.ts";
import { GithubRecorder, type RepoRecords } from "./records.ts";
import { remapShas, replayConcurrently, wavesOf, type PullHistory } from "./waves.ts";
import { describeFirstIssue } from "../pipeline/validation.ts";
import { processAlive } from "../pipeline/process-alive.ts";

export interface CorpusResult {
  dir: string;
  recordsFile: string;
  repositories: string[];
  records: number;
  /** False when an identical corpus was already there and nothing was rebuilt. */
  built: boolean;
}

/** What the generator meant each pull request to be; tests compare it with what the pipeline finds. */
export interface PullIntent {
  repo: string;
  number: number;
  kind: PullRequestPlan["kind"];
  stages: number;
  issue: string | null;
  /** How the pull request names its issue (the plan's link kind). */
  link: PullRequestPlan["link"];
  merge: "merge" | "squash";
  fail_to_pass: string[];
  regressions: string[];
  flaky: string[];
  unjustified: string[];
  /** F2P tests that pass only after another test of their file: the oracle must reject their task. */
  order_dependent: string[];
  extras: string[];
}

const TRACKER = "demo-org/tracker";
/** Commits a `many_commits` pull request adds on top of its own: its list then exceeds GitHub's 250. */
const MANY_COMMITS = 256;
const HOUR = 3600_000;
const DAY = 24 * HOUR;
const AUTHOR = { name: "Alice Developer", email: "alice@demo.invalid", login: "alice-dev" };
const VERBS = [
  "scale",
  "shift",
  "stretch",
  "blend",
  "fold",
  "pack",
  "tally",
  "weigh",
  "trim",
  "tilt",
  "spread",
  "merge",
  "split",
  "carry",
  "mark",
  "tune",
  "count",
  "price",
  "slug",
  "join",
];
const NOUNS = {
  numeric: ["radius", "edge", "span", "angle", "depth", "width", "height", "offset", "step", "grid"],
  text: ["words", "title", "label", "token", "line", "phrase", "slug", "field", "name", "tag"],
  money: ["fee", "levy", "price", "charge", "rebate", "payout", "cost", "margin", "refund", "budget"],
} as const;
const BASE_SUFFIX: Record<FamilyName, string> = { numeric: "scale", text: "clean", money: "total" };

export function demoRepoPath(outDir: string, repo: string): string {
  return join(outDir, "repos", repo.replace("/", "__"));
}

/** Names what a corpus is built from: the plan's text and the generator's sources. */
export function corpusStamp(planText: string): string {
  const generator = ["build.ts", "families.ts", "records.ts", "plan.ts", "github-shapes.ts", "waves.ts"]
    .map((f) => readFileSync(new URL(`./${f}`, import.meta.url)))
    .join("\0");
  return sha256(planText + "\0" + generator);
}

/**
 * Builds the demo corpus from its plan: real git repositories whose pull requests branch, get
 * implementation, test and review-answering commits, and merge (merge commits or squashes), with
 * fixed dates so the same plan always gives the same commit ids; their records in SWE-bench's
 * JSONL format; and their GitHub REST records for the local API. Skips all work when the plan
 * and generator are unchanged.
 */
export async function buildDemoCorpus(planPath: string, outDir: string): Promise<CorpusResult> {
  const planText = readFileSync(planPath, "utf8");
  const rawPlan: unknown = parse(planText);
  const parsed = CorpusPlan.safeParse(rawPlan);
  if (!parsed.success) throw new Error(`${planPath}: ${describeFirstIssue(parsed.error, rawPlan)}`);
  const plan = parsed.data;
  const recordsFile = join(outDir, "records.jsonl");
  const stampFile = join(outDir, "corpus.sha256");
  const stamp = corpusStamp(planText);
  const repositories = plan.repositories.map((r) => r.repo);
  if (existsSync(recordsFile) && existsSync(stampFile) && readFileSync(stampFile, "utf8").trim() === stamp) {
    const records = readFileSync(recordsFile, "utf8").split("\n").filter(Boolean).length;
    return { dir: outDir, recordsFile, repositories, records, built: false };
  }
  const release = await lockCorpus(outDir);
  try {
    return await buildCorpus(plan, { outDir, recordsFile, stampFile, stamp, repositories });
  } finally {
    await release();
  }
}

/**
 * One build of a corpus directory at a time: a second would remove the first's repositories under
 * it. Another live process's lock is an error naming it; a dead one's is taken over.
 */
async function lockCorpus(outDir: string): Promise<() => Promise<void>> {
  await mkdir(outDir, { recursive: true });
  const lock = join(outDir, ".building.pid");
  for (;;) {
    try {
      await writeFile(lock, String(process.pid), { flag: "wx" });
      return () => rm(lock, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = Number(readFileSync(lock, "utf8").trim());
      if (holder && processAlive(holder))
        throw new Error(`${outDir}: another process (pid ${holder}) is building the demo corpus here; wait for it to finish (or stop it)`);
      await rm(lock, { force: true });
    }
  }
}

async function buildCorpus(
  plan: CorpusPlan,
  at: { outDir: string; recordsFile: string; stampFile: string; stamp: string; repositories: string[] },
): Promise<CorpusResult> {
  const { outDir, recordsFile, stampFile, stamp, repositories } = at;
  await rm(join(outDir, "repos"), { recursive: true, force: true });
  await rm(join(outDir, "github"), { recursive: true, force: true });
  const tracker = new GithubRecorder(TRACKER, Date.parse(plan.start));
  const lines: string[] = [];
  const intents: PullIntent[] = [];
  for (const repoPlan of plan.repositories) {
    const builder = new RepositoryBuilder(repoPlan, plan, outDir, tracker);
    const result = await builder.build();
    lines.push(...result.records);
    intents.push(...result.intents);
    await writeFileAtomic(join(outDir, "github", `${repoPlan.repo.replace("/", "__")}.json`), canonicalJson(result.github, 1) + "\n");
  }
  await writeFileAtomic(join(outDir, "github", `${TRACKER.replace("/", "__")}.json`), canonicalJson(tracker.records(), 1) + "\n");
  await writeFileAtomic(join(outDir, "intents.json"), canonicalJson(intents, 1) + "\n");
  await writeFileAtomic(recordsFile, lines.join(""));
  await writeFileAtomic(stampFile, stamp + "\n");
  return { dir: outDir, recordsFile, repositories, records: lines.length, built: true };
}

interface ModuleState {
  key: string;
  importPath: string;
  file: string;
  testFile: string;
  functions: DemoFunction[];
}

type Tree = Map<string, string | Buffer>;

class RepositoryBuilder {
  private readonly rng: seedrandom.PRNG;
  private readonly family: FamilyName;
  private readonly dir: string;
  private readonly modules = new Map<string, ModuleState>();
  private readonly staticFiles = new Map<string, string | Buffer>();
  private readonly packageTests: string[] = [];
  private readonly removed: string[] = [];
  private conftestFixture = false;
  private readonly usedNames = new Set<string>();
  private written: Tree = new Map();
  private clock: number;
  private readonly gh: GithubRecorder;
  private decoyIssue = 0;

  constructor(
    private readonly plan: RepositoryPlan,
    corpus: CorpusPlan,
    outDir: string,
    private readonly tracker: GithubRecorder,
  ) {
    this.rng = seedrandom(`${corpus.seed}/${plan.repo}`);
    this.family = plan.family;
    this.dir = demoRepoPath(outDir, plan.repo);
    this.clock = Date.parse(corpus.start);
    this.gh = new GithubRecorder(plan.repo, this.clock);
  }

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.rng() * items.length)]!;
  }

  private newName(): string {
    for (;;) {
      const name = `${this.pick(VERBS)}_${this.pick(NOUNS[this.family])}`;
      if (!this.usedNames.has(name)) {
        this.usedNames.add(name);
        return name;
      }
    }
  }

  private newFunction(module: ModuleState, extra: Partial<DemoFunction> = {}): DemoFunction {
    const fn: DemoFunction = {
      name: this.newName(),
      module: module.importPath,
      stage: 1,
      a: this.family === "money" ? this.pick([1.1, 0.9, 1.15, 1.25, 0.85, 1.05]) : this.pick([3, 5, 7]),
      b: 1 + Math.floor(this.rng() * 9),
      sep: this.pick(["-", "_", ".", "+", "~"]),
      ...extra,
    };
    module.functions.push(fn);
    return fn;
  }

  private paths(key: string): { file: string; importPath: string; testFile: string } {
    const { layout, package: pkg } = this.plan;
    const testDir = layout === "inpackage" ? `${pkg}/tests` : "tests";
    const testFile = `${testDir}/test_${key.replaceAll("/", "_")}.py`;
    if (this.plan.top_level_modules.includes(key)) return { file: `${key}.py`, importPath: key, testFile };
    const root = layout === "src" ? `src/${pkg}` : pkg;
    return { file: `${root}/${key}.py`, importPath: `${pkg}.${key.replaceAll("/", ".")}`, testFile };
  }

  private get testDir(): string {
    return this.plan.layout === "inpackage" ? `${this.plan.package}/tests` : "tests";
  }

  private get packageDir(): string {
    return this.plan.layout === "src" ? `src/${this.plan.package}` : this.plan.package;
  }

  private tree(): Tree {
    const tree: Tree = new Map(this.staticFiles);
    const pythonpath = this.plan.layout === "src" ? '["src", "."]' : '["."]';
    tree.set(
      "pyproject.toml",
      `[project]\nname = "${this.plan.package}"\nversion = "0.1.0"\nrequires-python = ">=3.9"\nclassifiers = ["Programming Language :: Python :: 3.11"]\n\n[project.optional-dependencies]\ntest = ["pytest"]\n\n[tool.pytest.ini_options]\npythonpath = ${pythonpath}\ntestpaths = ["${this.testDir}"]\n`,
    );
    const removedNote = this.removed.length ? `\n\nRemoved modules: ${this.removed.join(", ")}.` : "";
    tree.set(`${this.packageDir}/__init__.py`, `"""${this.plan.package}: demo package.${removedNote}"""\n\n__version__ = "0.1.0"\n`);
    for (const module of this.modules.values()) {
      const parts = module.file.split("/");
      for (let i = this.plan.layout === "src" ? 3 : 2; i < parts.length; i++) {
        const init = `${parts.slice(0, i).join("/")}/__init__.py`;
        if (!tree.has(init)) tree.set(init, "");
      }
      tree.set(module.file, renderModule(this.family, module.functions));
      tree.set(module.testFile, renderTestFile(this.family, module.functions));
    }
    if (this.plan.layout === "inpackage") tree.set(`${this.testDir}/__init__.py`, "");
    const fixture = this.conftestFixture ? `\n\n@pytest.fixture\ndef sample_input():\n    return ${fixtureValue(this.family)}\n` : "";
    tree.set(`${this.testDir}/conftest.py`, `import pytest\n\n\n@pytest.fixture\ndef package_name():\n    return "${this.plan.package}"\n${fixture}`);
    const pkgTests = [`def test_version(package_name):\n    assert importlib.import_module(package_name).__version__ == "0.1.0"\n`, ...this.packageTests];
    tree.set(`${this.testDir}/test_package.py`, `import importlib\n\nimport pytest\n\n\n${pkgTests.join("\n\n")}`);
    return tree;
  }

  private env(at: number): Record<string, string> {
    const date = new Date(at).toISOString().replace(/\.\d{3}Z$/, "Z");
    return {
      GIT_AUTHOR_NAME: AUTHOR.name,
      GIT_AUTHOR_EMAIL: AUTHOR.email,
      GIT_COMMITTER_NAME: "Demo Maintainer",
      GIT_COMMITTER_EMAIL: "maintainer@demo.invalid",
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_DATE: date,
    };
  }

  private run(args: string[], at?: number): Promise<string> {
    // git looks no higher than the repository's own directory: should its .git go missing (another
    // build of the same corpus removed it), git must fail, not commit into an enclosing repository.
    const ceiling = { GIT_CEILING_DIRECTORIES: dirname(this.dir) };
    return git(args, { cwd: this.dir, env: at === undefined ? ceiling : { ...ceiling, ...this.env(at) } });
  }

  /** Writes the current tree over the working copy and commits it; returns the commit id. */
  private async commit(message: string, at: number, only?: (path: string) => boolean): Promise<string> {
    const next = this.tree();
    for (const [path, content] of next) {
      if (only && !only(path)) continue;
      const before = this.written.get(path);
      if (before !== undefined && (typeof before === "string" ? before === content : Buffer.isBuffer(content) && before.equals(content))) continue;
      await mkdir(dirname(join(this.dir, path)), { recursive: true });
      await writeFile(join(this.dir, path), content);
      this.written.set(path, content);
    }
    for (const path of [...this.written.keys()]) {
      if (!next.has(path) && (!only || only(path))) {
        await rm(join(this.dir, path), { force: true });
        this.written.delete(path);
      }
    }
    await this.run(["add", "--all"]);
    await this.run(["commit", "--quiet", "--allow-empty", "--no-gpg-sign", "-m", message], at);
    return (await this.run(["rev-parse", "HEAD"])).trim();
  }

  async build(): Promise<{ records: string[]; intents: PullIntent[]; github: RepoRecords }> {
    await rm(this.dir, { recursive: true, force: true });
    await mkdir(this.dir, { recursive: true });
    await this.run(["init", "--quiet", "--initial-branch=main"]);
    for (const [path, text] of Object.entries(this.plan.files)) this.staticFiles.set(path, text);
    for (const key of [...this.plan.modules, ...this.plan.top_level_modules]) {
      const module: ModuleState = { key, ...this.paths(key), functions: [] };
      this.modules.set(key, module);
      const base = this.newFunction(module, { base: true });
      this.usedNames.delete(base.name);
      base.name = `${key.split("/").pop()}_${BASE_SUFFIX[this.family]}`;
    }
    await this.commit("Initial import", this.clock);
    this.decoyIssue = this.gh.issue({
      title: "Ideas for 1.0",
      body: "Collecting ideas for the 1.0 release; not tied to any one change.",
      author: "maintainer-bob",
      at: this.clock + HOUR,
      open: true,
    });
    this.clock += DAY;

    const records: string[] = [];
    const intents: PullIntent[] = [];
    const moved = new Map<string, string>();
    for (const wave of wavesOf(this.plan.pull_requests, this.plan.repo)) {
      const waveBase = (await this.run(["rev-parse", "HEAD"])).trim();
      const waveStart = this.clock;
      const histories: PullHistory[] = [];
      for (const [k, index] of wave.entries()) {
        // Open at the same time: each an hour after the one before, whatever the others' merges.
        if (wave.length > 1) this.clock = waveStart + k * HOUR;
        const result = await this.pullRequest(this.plan.pull_requests[index]!, index, wave.length > 1 ? waveBase : undefined);
        records.push(result.record);
        intents.push(result.intent);
        histories.push(result.history);
      }
      if (wave.length > 1) {
        this.clock = Math.max(...histories.map((h) => h.mergedAt)) + 3 * HOUR;
        await replayConcurrently((args, at) => this.run(args, at), waveBase, histories, moved, this.plan.repo);
      }
    }
    // Records were written as the pull requests were built one on another: they name the commits where they now are.
    const github = JSON.parse(remapShas(JSON.stringify(this.gh.records()), moved)) as RepoRecords;
    return { records: records.map((r) => remapShas(r, moved)), intents, github };
  }

  /** A feature (possibly flaky, or without tests): new functions, refined stage by stage. */
  private planNewFunctions(pr: PullRequestPlan, modules: ModuleState[], stages: number): StagePlan {
    const texts: string[] = [];
    const apply: ((stage: number) => void)[] = [];

    const fns = modules.map((m, i) =>
      this.newFunction(m, {
        flaky: pr.kind === "flaky" && i === 0,
        usesFixture: pr.extras.includes("conftest") && i === 0,
        binaryData: pr.extras.includes("binary") && i === 0,
        exported: pr.extras.includes("unjustified_test") && i === 0,
        orderDependent: pr.extras.includes("order_dependent") && i === 0,
        untested: pr.kind === "no_tests",
      }),
    );
    for (const fn of fns) fn.stage = 1;
    const title = `Add ${fns.map((f) => f.name).join(", ")}`;
    for (let s = 1; s <= stages; s++) texts.push(requestText(this.family, s as Stage, fns));
    for (let s = 1; s <= stages; s++) apply.push((stage) => fns.forEach((fn) => (fn.stage = stage as Stage)));
    if (pr.extras.includes("conftest")) this.conftestFixture = true;
    if (pr.extras.includes("binary")) {
      this.staticFiles.set(`${this.testDir}/data/${fns[0]!.name}.bin`, Buffer.from([0x89, 0x42, 0x49, 0x4e, 0, 1, 2, 3, 255, 254, 0, 7]));
      this.staticFiles.set(`${this.packageDir}/data/${fns[0]!.name}.bin`, Buffer.from([0, 0, 0, 1, 0x89, 0xff]));
    }
    return { fns, title, texts, apply, hasTests: pr.kind !== "no_tests" };
  }

  /** What each stage of a pull request asks for, and the change (per stage) that answers it. */
  private planStages(pr: PullRequestPlan, modules: ModuleState[], stages: number, intent: PullIntentLists): StagePlan {
    switch (pr.kind) {
      case "feature":
      case "flaky":
      case "no_tests":
        return this.planNewFunctions(pr, modules, stages);
      case "regression":
        return this.planRegression(modules, stages, intent);
      case "docs_only":
      case "changelog_only":
        return this.planProse(pr);
      case "rename":
        return this.planRename(pr, modules, stages, intent);
      case "delete":
        return this.planDelete(modules, stages, intent);
    }
  }

  /** A new function whose change breaks an existing test (a regression the qualification must reject). */
  private planRegression(modules: ModuleState[], stages: number, intent: PullIntentLists): StagePlan {
    const texts: string[] = [];
    const apply: ((stage: number) => void)[] = [];
    const module = modules[0]!;
    const baseFn = module.functions.find((f) => f.base)!;
    const many = this.newFunction(module, { manyOf: baseFn.name });
    many.name = `${baseFn.name}_many`;
    const fns = [many];
    for (let s = 1; s <= stages; s++) texts.push(requestText(this.family, s as Stage, fns));
    apply.push(() => (baseFn.regressed = true));
    for (let s = 2; s <= stages; s++) apply.push((stage) => (many.stage = stage as Stage));
    intent.regressions.push(`${module.testFile}::test_${baseFn.name}`);
    return { fns, title: `Add ${many.name}`, texts, apply, hasTests: true };
  }

  /** A change to documentation or the changelog alone, with no test. */
  private planProse(pr: PullRequestPlan): StagePlan {
    const file =
      pr.kind === "docs_only"
        ? this.staticFiles.has("docs/index.rst")
          ? "docs/index.rst"
          : [...this.staticFiles.keys()].find((f) => f.startsWith("README"))!
        : "CHANGES.rst";
    const title = pr.kind === "docs_only" ? "Document installation" : "Release notes for 0.2.0";
    const text =
      pr.kind === "docs_only"
        ? `The documentation should explain how to install ${this.plan.package} with pip (\`pip install ${this.plan.package}\`).`
        : "Please add the release notes for 0.2.0 to the changelog.";
    const write = () => {
      const before = String(this.staticFiles.get(file) ?? (file === "CHANGES.rst" ? "Changes\n=======\n" : ""));
      this.staticFiles.set(
        file,
        before + (pr.kind === "docs_only" ? `\nInstall it with \`\`pip install ${this.plan.package}\`\`.\n` : "\n0.2.0\n-----\n\n- New helpers.\n"),
      );
    };
    return { fns: [], title, texts: [text], apply: [write], hasTests: false };
  }

  /** A module renamed, its functions importable under the new name. */
  private planRename(pr: PullRequestPlan, modules: ModuleState[], stages: number, intent: PullIntentLists): StagePlan {
    const texts: string[] = [];
    const apply: ((stage: number) => void)[] = [];
    const module = modules[0]!;
    const oldImport = module.importPath;
    const target = pr.rename_to!;
    const paths = this.paths(target);
    const title = `Rename ${oldImport} to ${paths.importPath}`;
    const fns = module.functions;
    texts.push(
      `Rename \`${oldImport}\` to \`${paths.importPath}\`: every function it has today (${fns.map((f) => `\`${f.name}\``).join(", ")}) must be importable from \`${paths.importPath}\`, and the old module name goes away.`,
    );
    if (stages > 1)
      texts.push(
        `The renamed module \`${paths.importPath}\` should declare \`__all__\` listing its public functions: ${fns.map((f) => `\`${f.name}\``).join(", ")}.`,
      );
    apply.push(() => {
      module.file = paths.file;
      module.importPath = paths.importPath;
      for (const fn of module.functions) fn.module = paths.importPath;
      this.packageTests.push(`def test_${target.replaceAll("/", "_")}_importable():\n    importlib.import_module("${paths.importPath}")\n`);
      intent.fail_to_pass.push(`${this.testDir}/test_package.py::test_${target.replaceAll("/", "_")}_importable`);
    });
    if (stages > 1) apply.push(() => module.functions.forEach((fn) => (fn.exported = true)));
    return { fns, title, texts, apply, hasTests: true };
  }

  /** A module removed, and (in stage 2) the removal documented. */
  private planDelete(modules: ModuleState[], stages: number, intent: PullIntentLists): StagePlan {
    const texts: string[] = [];
    const apply: ((stage: number) => void)[] = [];
    const module = modules[0]!;
    const title = `Remove ${module.importPath}`;
    texts.push(`Remove the unused module \`${module.importPath}\`: importing it should raise ImportError.`);
    if (stages > 1)
      texts.push(
        `Say in the package docstring (\`${this.plan.package}.__doc__\`) that \`${module.importPath}\` was removed, so that \`help(${this.plan.package})\` tells users.`,
      );
    const slug = module.key.replaceAll("/", "_");
    apply.push(() => {
      this.modules.delete(module.key);
      this.packageTests.push(`def test_${slug}_removed():\n    with pytest.raises(ImportError):\n        importlib.import_module("${module.importPath}")\n`);
      intent.fail_to_pass.push(`${this.testDir}/test_package.py::test_${slug}_removed`);
    });
    if (stages > 1)
      apply.push(() => {
        this.removed.push(module.importPath);
        this.packageTests.push(
          `def test_${slug}_removal_documented(package_name):\n    assert "${module.importPath}" in importlib.import_module(package_name).__doc__\n`,
        );
        intent.fail_to_pass.push(`${this.testDir}/test_package.py::test_${slug}_removal_documented`);
      });
    return { fns: [], title, texts, apply, hasTests: true };
  }

  /**
   * The pull request's history: stage 1's implementation, then its tests, then one commit per
   * review round, merged into main (squash or merge commit); returns the commits, times and diff.
   */
  private async commitAndMerge(pr: PullRequestPlan, index: number, plan: StagePlan, stages: number, t0: number, base: string) {
    const { title, apply, hasTests } = plan;
    const branch = `pr-${index}`;
    const isSource = (path: string) => !path.includes("test") && !path.startsWith("docs/") && !/^(README|CHANGES)/.test(path);
    const prAt = t0 + DAY;
    apply[0]!(1);
    const firstMessage = `${title}${pr.link === "commit_keyword" && !pr.extras.includes("many_commits") ? `\n\nThis fixes #${this.gh.peekNumber()}.` : ""}`;
    const c1 = await this.commit(firstMessage, prAt - 2 * HOUR, hasTests ? isSource : undefined);
    const commits: { sha: string; message: string; at: number }[] = [{ sha: c1, message: firstMessage, at: prAt - 2 * HOUR }];
    if (hasTests) {
      const c2 = await this.commit("Add tests", prAt - HOUR);
      commits.push({ sha: c2, message: "Add tests", at: prAt - HOUR });
    }
    const roundAt: number[] = [];
    for (let s = 2; s <= stages; s++) {
      roundAt.push(prAt + (s - 1) * DAY);
      apply[s - 1]!(s);
      const at = prAt + (s - 1) * DAY + 5 * HOUR;
      const sha = await this.commit(`Address review: stage ${s}`, at);
      commits.push({ sha, message: `Address review: stage ${s}`, at });
    }
    if (pr.extras.includes("many_commits")) {
      // More commits than pulls.listCommits returns (250): checkpoints with no change, and, for a
      // commit-keyword link, the closing keyword only in the last one, beyond GitHub's cap.
      let parent = (await this.run(["rev-parse", "HEAD"])).trim();
      const tree = (await this.run(["rev-parse", "HEAD^{tree}"])).trim();
      const at = prAt - HOUR / 2;
      for (let k = 1; k <= MANY_COMMITS; k++) {
        const message =
          k < MANY_COMMITS
            ? `Checkpoint ${k}`
            : `Finish ${title.toLowerCase()}${pr.link === "commit_keyword" ? `\n\nThis fixes #${this.gh.peekNumber()}.` : ""}`;
        parent = (await git(["commit-tree", tree, "-p", parent, "-m", message], { cwd: this.dir, env: this.env(at + k * 1000) })).trim();
        commits.push({ sha: parent, message, at: at + k * 1000 });
      }
      await this.run(["reset", "--quiet", "--hard", parent]);
    }
    const head = (await this.run(["rev-parse", "HEAD"])).trim();
    const approvedAt = prAt + stages * DAY;
    const mergedAt = approvedAt + HOUR;
    await this.run(["checkout", "--quiet", "main"]);
    const number = this.gh.peekNumber() + GithubRecorder.issuesBefore(pr);
    if (pr.merge === "squash") {
      await this.run(["merge", "--quiet", "--squash", branch]);
      await this.run(["commit", "--quiet", "--no-gpg-sign", "-m", `${title} (#${number})`], mergedAt);
    } else {
      await this.run(
        ["merge", "--quiet", "--no-ff", "--no-gpg-sign", "-m", `Merge pull request #${number} from ${AUTHOR.login}/${branch}\n\n${title}`, branch],
        mergedAt,
      );
    }
    const mergeCommit = (await this.run(["rev-parse", "HEAD"])).trim();
    await this.run(["update-ref", `refs/pull/${number}/head`, head]);
    await this.run(["branch", "--quiet", "-D", branch]);
    const diff = await this.run(["diff", "--binary", "--full-index", "-M", base, head]);
    const trees = new Map(
      (await this.run(["log", "--format=%H %T", `${base}..${head}`]))
        .trim()
        .split("\n")
        .map((l) => l.split(" ") as [string, string]),
    );
    return { prAt, commits: commits.map((c) => ({ ...c, tree: trees.get(c.sha)! })), roundAt, head, approvedAt, mergedAt, mergeCommit, diff };
  }

  /** The pull request as a SWE-bench-style record (its base as its records name it). */
  private swebenchRecord(github: { number: number; problemTitle: string; problemBody: string }, base: string, diff: string, prAt: number): string {
    const [patch, testPatch] = swebenchStyleSplit(diff);
    return (
      canonicalJson({
        instance_id: `${this.plan.repo.replace("/", "__")}-${github.number}`,
        repo: this.plan.repo,
        base_commit: base,
        patch,
        test_patch: testPatch,
        problem_statement: `${github.problemTitle}\n\n${github.problemBody}\n`,
        created_at: new Date(prAt).toISOString().replace(/\.\d{3}Z$/, "Z"),
        version: "0.1",
        environment_setup_commit: base,
        FAIL_TO_PASS: "[]",
        PASS_TO_PASS: "[]",
      }) + "\n"
    );
  }

  /** The tests the generator meant as fail-to-pass, flaky, order-dependent and unjustified. */
  private intendedTests(pr: PullRequestPlan, plan: StagePlan, intent: PullIntentLists): void {
    if (!plan.hasTests) return;
    const fns = plan.fns;
    {
      const touched = pr.kind === "rename" ? fns : fns.filter((fn) => !fn.base);
      for (const fn of touched) {
        const module = [...this.modules.values()].find((m) => m.functions.includes(fn));
        if (!module) continue;
        for (const name of testNames(this.family, fn)) {
          const id = `${module.testFile}::${name}`;
          if (fn.flaky && name.endsWith("_basic")) intent.flaky.push(id);
          // The registry test passes before the fix too: pass-to-pass, and what the F2P test leans on.
          else if (fn.orderDependent && name.endsWith("_zz_registry")) continue;
          else intent.fail_to_pass.push(id);
          if (fn.orderDependent && name.endsWith("_basic")) intent.order_dependent.push(id);
          if (fn.exported && pr.kind !== "rename" && name.endsWith("_listed")) intent.unjustified.push(id);
        }
      }
    }
  }

  /** After the merge, a maintainer makes a flaky or order-dependent test deterministic on main, so later PRs do not inherit it. */
  private async repairTests(fns: DemoFunction[], mergedAt: number): Promise<{ sha: string; at: number }[]> {
    const repairs: { sha: string; at: number }[] = [];
    // A maintainer deflakes a flaky test on main right after the merge, so only its own PR sees it.
    const flaky = fns.find((fn) => fn.flaky);
    if (flaky) {
      flaky.flaky = false;
      repairs.push({ sha: await this.commit(`Make test_${flaky.name}_basic deterministic`, mergedAt + 2 * HOUR), at: mergedAt + 2 * HOUR });
    }
    // Likewise an order-dependent test is made independent on main, so later PRs do not inherit it.
    const dependent = fns.find((fn) => fn.orderDependent);
    if (dependent) {
      dependent.orderDependent = false;
      repairs.push({ sha: await this.commit(`Make test_${dependent.name}_basic independent of test order`, mergedAt + 2 * HOUR), at: mergedAt + 2 * HOUR });
    }
    return repairs;
  }

  /**
   * One pull request, built on main as it stands and merged into it. In a wave, `waveBase` is the
   * commit every pull request of the wave branches from once replayed (waves.ts): its records name it.
   */
  private async pullRequest(pr: PullRequestPlan, index: number, waveBase?: string) {
    const t0 = this.clock;
    const builtOn = (await this.run(["rev-parse", "HEAD"])).trim();
    const base = waveBase ?? builtOn;
    await this.run(["checkout", "--quiet", "-b", `pr-${index}`]);
    const modules = pr.modules.map((key) => {
      const module = this.modules.get(key);
      if (!module) throw new Error(`${this.plan.repo}: pull request ${index + 1} names unknown module ${key}`);
      return module;
    });
    const stages = 1 + pr.rounds;
    const intent: PullIntentLists = { fail_to_pass: [], regressions: [], flaky: [], unjustified: [], order_dependent: [] };
    const plan = this.planStages(pr, modules, stages, intent);
    const { fns, title, texts } = plan;
    const issueAt = t0;
    const { prAt, commits, roundAt, head, approvedAt, mergedAt, mergeCommit, diff } = await this.commitAndMerge(pr, index, plan, stages, t0, builtOn);
    this.intendedTests(pr, plan, intent);
    const github = this.gh.pullRequest({
      plan: pr,
      index,
      title,
      texts,
      fns,
      issueAt,
      prAt,
      roundAt,
      approvedAt,
      mergedAt,
      base,
      head,
      mergeCommit,
      commits,
      diff,
      decoyIssue: this.decoyIssue,
      tracker: this.tracker,
      moduleText: (fn) => {
        const m = [...this.modules.values()].find((x) => x.functions.includes(fn));
        return m ? { path: m.file, text: renderModule(this.family, m.functions) } : undefined;
      },
    });
    this.clock = mergedAt + 3 * HOUR;
    const repairs = await this.repairTests(fns, mergedAt);

    const record = this.swebenchRecord(github, base, diff, prAt);
    const history: PullHistory = {
      index,
      number: github.number,
      base,
      commits: commits.map((c) => ({ sha: c.sha, at: c.at })),
      head,
      merge: pr.merge,
      mergeCommit,
      mergedAt,
      repairs,
    };
    return {
      record,
      history,
      intent: {
        repo: this.plan.repo,
        number: github.number,
        kind: pr.kind,
        stages: texts.length,
        issue: github.issue,
        link: pr.link,
        merge: pr.merge,
        ...intent,
        fail_to_pass: [...new Set(intent.fail_to_pass)].sort(),
        extras: pr.extras,
      } satisfies PullIntent,
    };
  }
}

/** The lists of tests a pull request's intent names. */
interface PullIntentLists {
  fail_to_pass: string[];
  regressions: string[];
  flaky: string[];
  unjustified: string[];
  order_dependent: string[];
}

/** A pull request's stages: the functions it touches, its title, each stage's request text and change. */
interface StagePlan {
  fns: DemoFunction[];
  title: string;
  texts: string[];
  apply: ((stage: number) => void)[];
  hasTests: boolean;
}

/** Splits the way SWE-bench's records do (any path with a test directory is the test patch), for the import path. */
function swebenchStyleSplit(diff: string): [string, string] {
  const sections = diff.split(/^(?=diff --git )/m).filter(Boolean);
  const isTest = (section: string) => /(^|\/)tests?\//.test(section.split("\n")[0]!.split(" b/").pop() ?? "");
  return [sections.filter((s) => !isTest(s)).join(""), sections.filter(isTest).join("")];
}
