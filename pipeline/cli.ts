import { accessSync, constants, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { Command, CommanderError, Option } from "commander";
import { BUILT_STAGES } from "../stages/index.ts";
import { ConfigError, loadConfig } from "./config.ts";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Docker from "dockerode";
import { buildBaseImage, DockerExecutor } from "./executors/docker.ts";
import { environmentsForTasks } from "../stages/qualify/index.ts";
import { ArtifactStore } from "./store.ts";
import { Candidate } from "./schemas/candidate.ts";
import { SplitChange } from "./schemas/split.ts";
import { listImages, pruneImages } from "./executors/images.ts";
import { buildDemoCorpus } from "./demo/build.ts";
import { formatByHand, qualifyByHand } from "../stages/qualify/by-hand.ts";
import { RecordError } from "./stage.ts";
import { FakeGithub } from "./demo/github-server.ts";
import { runDoctor } from "./doctor.ts";
import { formatSummary, orderStages, parseStageConfig, PipelineError, runPipeline, type RunOptions } from "./engine.ts";
import { InputError } from "./validation.ts";
import { createLogger } from "./logger.ts";
import { loadProfiles, loadProfilesDir } from "./profiles.ts";
import { createProgress } from "./progress.ts";
import { draftProfile } from "./repo-init.ts";
import { checkSchemaFiles, writeSchemaFiles } from "./schema-export.ts";
import { STAGE_ORDER, type StageName } from "./schemas/common.ts";
import { ClassificationRules } from "./schemas/repo-profile.ts";
import { splitFields, splitReferenceChange } from "../stages/split/split.ts";
import { DiffParseError } from "../stages/split/diff.ts";
import { emitStage } from "../stages/emit/index.ts";
import { qualifyStage } from "../stages/qualify/index.ts";
import { writeFileAtomic } from "./atomic.ts";
import { formatVerification, verifySubmission } from "./verifier/command.ts";
import { writeResultsReport } from "./report/command.ts";

class UsageError extends InputError {}

/** Commander discards what an action returns, so actions report their exit code through this. */
let exitCode = 0;
function act<A extends unknown[]>(fn: (...args: A) => Promise<number> | number): (...args: A) => Promise<void> {
  return async (...args: A) => {
    exitCode = await fn(...args);
  };
}

/** A path option must name what it says before any work starts: a file, or a directory. */
function requirePath(option: string, path: string | undefined, kind: "file" | "directory"): void {
  if (path === undefined) return;
  let stat;
  try {
    stat = statSync(path);
  } catch {
    throw new UsageError(`${option} ${path}: no such ${kind}`);
  }
  // Not only regular files: /dev/null is a fine empty artifact, a pipe a fine diff.
  if (kind === "file" && stat.isDirectory()) throw new UsageError(`${option} ${path}: is a directory, expected a file`);
  if (kind === "directory" && !stat.isDirectory()) throw new UsageError(`${option} ${path}: is a file, expected a directory`);
}

/** The work directory must be one this user can create and write, before the first log line goes there. */
function requireWritableDir(configPath: string, dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
  } catch (error) {
    throw new UsageError(`${configPath}: key work_dir: ${dir} cannot be created or written (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

/** Command-line flags that override a stage's config for this run only. */
interface Overrides {
  offline?: boolean;
  tokenFile?: string;
  executor?: string;
  runs?: number;
  jobs?: number;
}

function applyOverrides(stages: Record<string, unknown>, overrides: Overrides): Record<string, unknown> {
  const execution = { ...(overrides.executor ? { executor: overrides.executor } : {}), ...(overrides.jobs ? { jobs: overrides.jobs } : {}) };
  const qualify = { ...(stages.qualify as object | undefined), ...execution, ...(overrides.runs ? { runs: overrides.runs } : {}) };
  if (Object.keys(qualify).length) stages = { ...stages, qualify };
  // The oracle runs tests too, on the same executor.
  if (Object.keys(execution).length) stages = { ...stages, oracle: { ...(stages.oracle as object | undefined), ...execution } };
  const mine = stages.mine as { github?: Record<string, unknown> } | undefined;
  if (!mine?.github || (overrides.offline === undefined && overrides.tokenFile === undefined)) return stages;
  const github = { ...mine.github, ...(overrides.offline !== undefined ? { offline: overrides.offline } : {}), ...(overrides.tokenFile ? { token_file: overrides.tokenFile } : {}) };
  return { ...stages, mine: { ...mine, github } };
}

async function runWithConfig(configPath: string, runOptions: RunOptions, quiet: boolean, overrides: Overrides = {}): Promise<number> {
  requirePath("--config", configPath, "file");
  const loaded = loadConfig(configPath, BUILT_STAGES);
  requireWritableDir(configPath, loaded.workDir);
  const log = createLogger({ level: quiet ? "warn" : "info", file: `${loaded.workDir}/logs/run.log` });
  log.info(`config ${configPath}: benchmark '${loaded.config.name}', seed ${loaded.config.seed}, work directory ${loaded.workDir}`);
  const summary = await runPipeline(
    {
      workDir: loaded.workDir,
      baseDir: loaded.baseDir,
      stages: BUILT_STAGES,
      stageConfigs: applyOverrides(loaded.config.stages, overrides),
      seed: loaded.config.seed,
      name: loaded.config.name,
      log,
      progress: quiet ? { start() {}, tick() {}, done() {} } : createProgress(),
    },
    runOptions,
  );
  process.stdout.write(formatSummary(summary) + "\n");
  const notBuiltStages = summary.stages.filter((s) => s.status === "not_built").map((s) => s.stage);
  if (notBuiltStages.length) process.stdout.write(`not built in this version: ${notBuiltStages.join(", ")}\n`);
  if (summary.stages.length && summary.stages.every((s) => s.status === "up_to_date" || s.status === "not_built")) {
    process.stdout.write("everything is up to date: no stage did any work\n");
  }
  return summary.ok ? 0 : 1;
}

function stageOption(flag: string, description: string): Option {
  return new Option(flag, description).choices([...STAGE_ORDER]);
}

export function buildProgram(): Command {
  const program = new Command("switch-swe")
    .description("Builds a task-switching benchmark for coding agents from real pull-request histories.")
    .showHelpAfterError()
    .exitOverride();

  program
    .command("run")
    .description("run every stage in order, skipping work whose inputs, config and code are unchanged")
    .requiredOption("-c, --config <file>", "pipeline config (YAML or JSON)")
    .option("--force", "redo every stage and every record, ignoring caches")
    .option("--keep-going", "run later stages even after a stage had failures that may not recur (the run still exits 1)")
    .addOption(stageOption("--from <stage>", "redo this stage and every later one"))
    .addOption(stageOption("--only <stage>", "run this stage alone from the artifacts already built"))
    .option("-q, --quiet", "print only warnings, errors and the summary")
    .option("--offline", "mine GitHub from the recorded HTTP cache only")
    .option("--token-file <file>", "read the GitHub token from this file instead of GITHUB_TOKEN")
    .addOption(new Option("--executor <kind>", "qualify's and the oracle's executor: docker, local or auto").choices(["auto", "docker", "local"]))
    .option("--jobs <n>", "tasks qualified at once", (v) => Number(v))
    .addHelpText("after", "\nExample:\n  switch-swe run --config data/demo/pipeline.yaml\n  switch-swe run --config data/demo/pipeline.yaml --from split")
    .action(act(async (opts) => runWithConfig(opts.config, { force: opts.force, keepGoing: opts.keepGoing, from: opts.from as StageName | undefined, only: opts.only as StageName | undefined }, Boolean(opts.quiet), { offline: opts.offline, tokenFile: opts.tokenFile, executor: opts.executor, jobs: opts.jobs })));

  for (const built of orderStages(BUILT_STAGES)) {
    const name = built.name;
    const info = { summary: built.summary, example: built.example };
    const command = program
      .command(name)
      .description(info.summary)
      .option("-c, --config <file>", "pipeline config (YAML or JSON)")
      .option("--force", "redo the stage, ignoring caches")
      .option("-q, --quiet", "print only warnings, errors and the summary")
      .addHelpText("after", `\nExample:\n  ${info.example.split("   |   ").join("\n  ")}`);
    if (name === "qualify") {
      command
        .option("--task <file>", "qualify one task by hand: a split record (one line of artifacts/split/splits.jsonl)")
        .option("--profile <file>", "with --task: the repository profile (default data/repos/OWNER__NAME.json)")
        .option("--work-dir <dir>", "with --task: where environments and mirrors go", ".switch-swe/qualify")
        .option("--as-of <date>", "with --task: resolve dependencies as of this date")
        .option("--full-suite", "with --task: run the whole suite, not only the touched test files")
        .option("--json", "with --task: print the result as JSON")
        .option("--runs <n>", "runs of each state", (v) => Number(v));
    }
    if (name === "qualify" || name === "oracle") {
      command
        .addOption(new Option("--executor <kind>", "docker, local, or auto (Docker when an engine answers)").choices(["auto", "docker", "local"]))
        .option("--jobs <n>", "tasks worked on at once", (v) => Number(v));
    }
    if (name === "mine") {
      command.option("--offline", "mine GitHub from the recorded HTTP cache only").option("--token-file <file>", "read the GitHub token from this file instead of GITHUB_TOKEN");
    }
    if (name === "split") {
      command
        .option("--diff <file>", "split one git diff by hand instead of running the stage")
        .option("--profile <file>", "repository profile whose classification rules to use (default rules otherwise)")
        .option("--json", "print the result as JSON");
    }
    command.action(
      act(async (opts) => {
        if (name === "split" && opts.diff) {
          requirePath("--diff", opts.diff, "file");
          requirePath("--profile", opts.profile, "file");
          return splitByHand(opts.diff, opts.profile, Boolean(opts.json));
        }
        if (name === "qualify" && opts.task) {
          requirePath("--task", opts.task, "file");
          requirePath("--profile", opts.profile, "file");
          let result;
          try {
            result = await qualifyByHand({ taskFile: opts.task, profile: opts.profile, executor: opts.executor ?? "auto", runs: opts.runs ?? 3, workDir: opts.workDir, asOf: opts.asOf, fullSuite: Boolean(opts.fullSuite), log: createLogger({ level: opts.json ? "warn" : "info" }) });
          } catch (error) {
            // The task itself could not be qualified (its environment does not build, a patch does not apply).
            if (error instanceof RecordError) throw new RunFailed(error.message);
            throw error;
          }
          process.stdout.write(opts.json ? JSON.stringify(result, null, 2) + "\n" : formatByHand(result));
          return result.kept ? 0 : 1;
        }
        if (!opts.config) throw new UsageError(`'${name}' needs --config FILE (or, for split, --diff FILE)`);
        return runWithConfig(opts.config, { only: name, force: opts.force }, Boolean(opts.quiet), { offline: opts.offline, tokenFile: opts.tokenFile, executor: opts.executor, runs: opts.runs, jobs: opts.jobs });
      }),
    );
  }

  program
    .command("verify")
    .description("score a session's final focus artifact against the focus task's held-out verifier (docs/SPEC.md §3)")
    .requiredOption("-c, --config <file>", "the pipeline config that built the benchmark (held-out assets, profiles, executor)")
    .requiredOption("--session <file>", "the session specification (manifests/<benchmark>/sessions/<session>.json)")
    .option("--artifact <patch>", "the focus artifact as a git diff against the focus base commit")
    .option("--checkout <dir>", "collect the focus artifact from this checkout (committed and uncommitted changes, new and deleted files)")
    // Required: a report filed under the wrong condition would silently skew Table 1.
    .addOption(new Option("--condition <condition>", "which run of the session the artifact comes from: control (uninterrupted) or switched").choices(["control", "switched"]).makeOptionMandatory())
    .option("--heldout <dir>", "held-out assets directory (default: the config's emit.heldout_dir)")
    .addOption(new Option("--executor <kind>", "docker, local, or auto (default: the config's oracle.executor)").choices(["auto", "docker", "local"]))
    .option("--out <file>", "also write the verification report (JSON) to this file")
    .option("--save-artifact <file>", "also write the artifact that was scored (as collected) to this file")
    .option("--json", "print the verification report as JSON")
    .addHelpText("after", "\nExit status: 0 resolved, 1 not resolved, 3 infrastructure fault after two re-runs, 2 bad input.\n\nExample:\n  switch-swe verify -c data/demo/pipeline.yaml --session manifests/demo/sessions/S.json --checkout /workspace/w02 --condition switched --out results/agent-a/S.switched.json")
    .action(
      act(async (opts) => {
        requirePath("--config", opts.config, "file");
        requirePath("--session", opts.session, "file");
        requirePath("--artifact", opts.artifact, "file");
        requirePath("--checkout", opts.checkout, "directory");
        requirePath("--heldout", opts.heldout, "directory");
        const result = await verifySubmission({ config: opts.config, session: opts.session, artifact: opts.artifact, checkout: opts.checkout, condition: opts.condition, heldoutDir: opts.heldout, executor: opts.executor, log: createLogger({ level: opts.json ? "warn" : "info" }) });
        const { report } = result;
        if (opts.out) await writeFileAtomic(opts.out, JSON.stringify(report, null, 2) + "\n");
        if (opts.saveArtifact) await writeFileAtomic(opts.saveArtifact, result.artifact);
        process.stdout.write(opts.json ? JSON.stringify(report, null, 2) + "\n" : formatVerification(report));
        return report.infrastructure_fault ? 3 : report.resolved ? 0 : 1;
      }),
    );

  program
    .command("report")
    .description("aggregate verification reports into the study's Table 1: resolution per condition and the gap, overall and per locality group")
    .requiredOption("--results <dir>", "verification reports; each subdirectory is one configuration (agent and model)")
    .option("--sessions <dir>", "the benchmark's session specifications: the fixed denominators (default: <emit.out_dir>/sessions of --config)")
    .option("-c, --config <file>", "the pipeline config that built the benchmark")
    .option("--out <dir>", "where to write table1.md, table1.csv and resolution.svg (default: <results>/report)")
    .addHelpText("after", "\nExample:\n  switch-swe report --results results/ --sessions manifests/demo/sessions --out results/report")
    .action(
      act(async (opts) => {
        requirePath("--results", opts.results, "directory");
        requirePath("--sessions", opts.sessions, "directory");
        requirePath("--config", opts.config, "file");
        let sessionsDir = opts.sessions as string | undefined;
        if (!sessionsDir) {
          if (!opts.config) throw new UsageError("give --sessions DIR, or --config FILE whose emit.out_dir holds the sessions");
          const loaded = loadConfig(opts.config, BUILT_STAGES);
          const emit = parseStageConfig(emitStage, loaded.config.stages.emit);
          sessionsDir = resolve(loaded.baseDir, emit.out_dir, "sessions");
        }
        const outDir = opts.out ?? join(opts.results, "report");
        const written = await writeResultsReport(opts.results, sessionsDir, outDir);
        process.stdout.write(readFileSync(written.files[0]!, "utf8"));
        process.stdout.write(written.files.map((f) => `wrote ${f}\n`).join(""));
        return written.aggregation.problems.length ? 1 : 0;
      }),
    );

  program
    .command("demo")
    .description("build the bundled demo corpus (real git repositories and their records) and run the pipeline over it")
    .option("--corpus <file>", "corpus description", "data/demo/corpus.yaml")
    .option("--out <dir>", "where to build the corpus", ".switch-swe/demo-corpus")
    .option("-c, --config <file>", "pipeline config to run over it", "data/demo/pipeline.yaml")
    .option("--force", "redo every stage, ignoring caches")
    .option("--keep-going", "run later stages even after a stage had failures that may not recur (the run still exits 1)")
    .option("-q, --quiet", "print only warnings, errors and the summary")
    .addOption(new Option("--executor <kind>", "qualify's and the oracle's executor: docker, local or auto").choices(["auto", "docker", "local"]))
    .option("--jobs <n>", "tasks qualified at once", (v) => Number(v))
    .addHelpText("after", "\nExample:\n  switch-swe demo\n  switch-swe demo --executor local")
    .action(
      act(async (opts) => {
        requirePath("--corpus", opts.corpus, "file");
        requirePath("--config", opts.config, "file");
        const corpus = await buildDemoCorpus(opts.corpus, opts.out);
        process.stderr.write(`demo corpus: ${corpus.records} pull requests in ${corpus.repositories.join(", ")} (${corpus.built ? "built" : "already built"}) at ${corpus.dir}\n`);
        const server = await serveDemoApi(opts.config, join(corpus.dir, "github"));
        try {
          return await runWithConfig(opts.config, { force: opts.force, keepGoing: opts.keepGoing }, Boolean(opts.quiet), { executor: opts.executor, jobs: opts.jobs });
        } finally {
          await server?.stop();
        }
      }),
    );

  program
    .command("doctor")
    .description("check git, Python, the Docker engine and base image, and GITHUB_TOKEN; say how to fix what is missing")
    .option("--json", "print the checks as JSON")
    .addHelpText("after", "\nExample:\n  switch-swe doctor")
    .action(act(async (opts) => {
      const report = await runDoctor();
      if (opts.json) process.stdout.write(JSON.stringify(report, null, 2) + "\n");
      else for (const check of report.checks) process.stdout.write(`${check.ok ? "ok  " : check.required ? "FAIL" : "warn"}  ${check.name}: ${check.detail}${check.ok ? "" : `\n      fix: ${check.fix}`}\n`);
      return report.ok ? 0 : 1;
    }));

  program
    .command("schemas")
    .description("export the public artifacts' JSON Schemas (session spec, manifest entry, verification report)")
    .option("--out <dir>", "directory to write to", "manifests/schema")
    .option("--check", "exit 1 if the files in --out are missing or stale, without writing")
    .addHelpText("after", "\nExample:\n  switch-swe schemas --out manifests/schema\n  switch-swe schemas --check")
    .action(act(async (opts) => {
      if (opts.check) {
        const stale = checkSchemaFiles(opts.out);
        if (stale.length) {
          process.stderr.write(`stale or missing JSON Schema files in ${opts.out}: ${stale.join(", ")}; run 'npm run schemas' and commit them\n`);
          return 1;
        }
        process.stdout.write(`JSON Schemas in ${opts.out} are up to date\n`);
        return 0;
      }
      const written = await writeSchemaFiles(opts.out);
      process.stdout.write(written.map((f) => `wrote ${f}\n`).join(""));
      return 0;
    }));

  const images = program.command("images").description("build, list and prune the Docker images the docker executor uses");
  images
    .command("base")
    .description("build the base image from a Debian root filesystem (debootstrap + docker import; needs root)")
    .option("--suite <suite>", "Debian release: bullseye (Python 3.9), bookworm (3.11), trixie (3.13)", "bookworm")
    .option("--mirror <url>", "Debian mirror", "http://deb.debian.org/debian")
    .addHelpText("after", "\nExample:\n  switch-swe images base --suite bookworm")
    .action(
      act(async (opts) => {
        const tag = await buildBaseImage({ suite: opts.suite, mirror: opts.mirror, log: createLogger(), workDir: tmpdir() });
        process.stdout.write(`built ${tag}\n`);
        return 0;
      }),
    );
  images
    .command("build")
    .description("build the environment image of every split task of a pipeline (qualify builds them on demand too)")
    .requiredOption("-c, --config <file>", "pipeline config whose split stage has run")
    .addHelpText("after", "\nExample:\n  switch-swe images build --config data/demo/pipeline.yaml")
    .action(
      act(async (opts) => {
        requirePath("--config", opts.config, "file");
        const loaded = loadConfig(opts.config, BUILT_STAGES);
        const store = new ArtifactStore(loaded.workDir);
        const read = async (stage: StageName, name: string) => (await store.readRecords(stage, name).catch(() => { throw new UsageError(`${store.artifactPath(stage, name)} is missing: run 'switch-swe run --config ${opts.config}' up to split first`); })).records;
        const splits = (await read("split", "splits")).map((r) => SplitChange.parse(r));
        const candidates = new Map((await read("mine", "candidates")).map((r) => Candidate.parse(r)).map((c) => [c.id, c]));
        const { profiles } = loadProfilesDir(parseStageConfig(qualifyStage, loaded.config.stages.qualify).profiles_dir, loaded.baseDir);
        const environments = [...new Map([...environmentsForTasks(splits, candidates, profiles).values()].map((e) => [e.key, e])).values()];
        const executor = new DockerExecutor(new Docker(), createLogger());
        for (const env of environments) {
          const { built } = await executor.ensureEnvironment(env);
          process.stdout.write(`${built ? "built" : "present"} ${DockerExecutor.imageTag(env)}  ${env.repo}  as of ${env.asOf ?? "today"}\n`);
        }
        return 0;
      }),
    );
  images
    .command("list")
    .description("list switch-swe's base and environment images")
    .addHelpText("after", "\nExample:\n  switch-swe images list")
    .action(
      act(async () => {
        for (const image of await listImages(new Docker())) process.stdout.write(`${image.tag}  ${(image.size / 2 ** 20).toFixed(0)} MiB  ${image.repo ?? ""}\n`);
        return 0;
      }),
    );
  images
    .command("prune")
    .description("remove environment images (they are rebuilt on demand); --all removes base images too")
    .option("--all", "remove base images as well")
    .addHelpText("after", "\nExample:\n  switch-swe images prune")
    .action(
      act(async (opts) => {
        const removed = await pruneImages(new Docker(), Boolean(opts.all));
        process.stdout.write(removed.map((t) => `removed ${t}\n`).join("") || "nothing to remove\n");
        return 0;
      }),
    );

  const repo = program.command("repo").description("manage repository profiles");
  repo
    .command("init")
    .description("write a draft repository profile by inspecting a clone, for a maintainer to review")
    .argument("<owner/name>", "the repository, as GitHub spells it")
    .requiredOption("--clone <path>", "a local clone (or checkout) of the repository")
    .option("--out <file>", "where to write the profile (default data/repos/OWNER__NAME.json)")
    .option("--force", "overwrite an existing profile")
    .addHelpText("after", "\nExample:\n  switch-swe repo init psf/requests --clone ~/src/requests")
    .action(act(async (repoName: string, opts) => {
      requirePath("--clone", opts.clone, "directory");
      const result = await draftProfile(repoName, opts.clone, { out: opts.out, force: Boolean(opts.force) });
      process.stdout.write(`wrote ${result.path}\n${result.notes.map((n: string) => `  review: ${n}\n`).join("")}`);
      return 0;
    }));

  return program;
}

/**
 * Serves the demo corpus's GitHub records on the loopback address the config's mine.github.api_url
 * names, so the config (and with it every cache key) stays the same from run to run.
 */
async function serveDemoApi(configPath: string, recordsDir: string): Promise<FakeGithub | undefined> {
  const loaded = loadConfig(configPath, BUILT_STAGES);
  const apiUrl = (loaded.config.stages.mine as { github?: { api_url?: string } } | undefined)?.github?.api_url;
  if (!apiUrl) return undefined;
  const url = new URL(apiUrl);
  if (url.hostname !== "127.0.0.1" && url.hostname !== "localhost") throw new UsageError(`the demo serves its GitHub records on loopback only; ${configPath}: key stages.mine.github.api_url is ${apiUrl}`);
  const server = new FakeGithub({ recordsDir });
  try {
    await server.start(Number(url.port));
  } catch (error) {
    throw new UsageError(`cannot serve the demo's GitHub API on ${apiUrl} (${(error as Error).message}); free the port or change stages.mine.github.api_url in ${configPath}`);
  }
  process.stderr.write(`demo GitHub API: serving ${recordsDir} on ${server.url}\n`);
  return server;
}

function splitByHand(diffPath: string, profilePath: string | undefined, json: boolean): number {
  let rules = ClassificationRules.parse({});
  if (profilePath) {
    const { profiles, errors } = loadProfiles([{ path: profilePath, text: readFileSync(profilePath, "utf8") }]);
    const first = [...profiles.values()][0];
    if (!first) throw new UsageError([...errors.values()][0] ?? `${profilePath}: not a repository profile`);
    rules = first.profile.classification;
  }
  let result;
  try {
    result = splitReferenceChange(readFileSync(diffPath, "utf8"), rules);
  } catch (error) {
    if (error instanceof DiffParseError) throw new UsageError(`${diffPath}: ${error.message}`);
    throw error;
  }
  if (json) process.stdout.write(JSON.stringify(splitFields(result), null, 2) + "\n");
  else {
    for (const f of result.files) process.stdout.write(`${f.class.padEnd(7)} ${f.status.padEnd(12)} ${f.old_path !== f.path ? `${f.old_path} -> ` : ""}${f.path}  (${f.rule})\n`);
    process.stdout.write(`C_t: ${result.sourceFiles.join(", ") || "(empty)"}\nD_t: ${result.sourceDirs.join(", ") || "(empty)"}\n`);
  }
  return 0;
}

/** The task or run could not be done (not the user's input): one line, exit 1. */
class RunFailed extends Error {}

/**
 * Runs the CLI; returns the exit code: 0 ok, 1 a run or task that failed, 2 bad usage, config or
 * input (one line naming the file and field). Anything else is a bug: it is reported as an
 * internal error in one line that says where its details were written; `--debug` prints the stack.
 */
export async function main(argv: string[]): Promise<number> {
  const debug = argv.includes("--debug");
  const program = buildProgram();
  for (const command of allCommands(program)) command.exitOverride();
  exitCode = 0;
  try {
    await program.parseAsync(argv.filter((a) => a !== "--debug"));
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof InputError || error instanceof PipelineError || (error instanceof Error && error.name === "DiffParseError")) {
      process.stderr.write(`switch-swe: ${error.message}\n`);
      return 2;
    }
    if (error instanceof RunFailed) {
      process.stderr.write(`switch-swe: ${error.message}\n`);
      return 1;
    }
    const detail = error instanceof Error ? error.stack ?? error.message : String(error);
    const logFile = join(tmpdir(), `switch-swe-internal-error-${process.pid}.log`);
    try {
      writeFileSync(logFile, `${new Date().toISOString()} switch-swe ${argv.slice(2).join(" ")}\n${detail}\n`);
    } catch {
      // the message below still says what happened
    }
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    process.stderr.write(`switch-swe: internal error: ${message} (a bug in switch-swe; details in ${logFile}${debug ? "" : "; run again with --debug to see the stack"})\n`);
    if (debug) process.stderr.write(`${detail}\n`);
    return 1;
  }
  return exitCode;
}

function allCommands(command: Command): Command[] {
  return [command, ...command.commands.flatMap(allCommands)];
}
