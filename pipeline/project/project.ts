import { resolve } from "node:path";
import { type Workspace, Workspace as WorkspaceOf } from "../executors/workspace.ts";
import { formatSummary, parseStageConfig, runPipeline, type RunOptions, type RunSummary } from "../engine/engine.ts";
import { type ExecutionOverrides, PipelineSettings, withExecutionOverrides } from "../engine/settings.ts";
import type { AnyStage, StageDefinition } from "../engine/stage.ts";
import { ArtifactStore } from "../engine/store.ts";
import type { Logger } from "../logger.ts";
import { loadProfilesDir, type ProfileSet } from "../profiles/load.ts";
import { TaskResources } from "../profiles/resources.ts";
import { type Progress, silentProgress } from "../progress.ts";
import type { StageName } from "../schemas/common.ts";
import { type ScratchKind, WorkLayout } from "../work-layout.ts";
import { BenchmarkLayout, BenchmarkLocations } from "../benchmark-layout.ts";
import { loadConfig, settingsOf } from "./config.ts";

export { formatSummary };

/** What a command line changes for one project: the execution settings, and stage config keys set by flags. */
export interface ProjectOverrides extends ExecutionOverrides {
  /** Stage config keys (dotted) with their values, from the flags the stages declare. */
  stageKeys?: { stage: StageName; key: string; value: unknown }[];
  /**
   * A directory of local copies of repositories (OWNER__NAME.bundle, .git or a clone) that the
   * mirrors are cloned from instead of the profiles' clone_url: `--mirrors`, else SWITCH_SWE_MIRRORS.
   */
  mirrors?: string;
}

/** A pipeline as a config file describes it, or as a caller builds it without one (fidelity's, a benchmark's). */
export interface ProjectDefinition {
  /** The benchmark's name (the config's `name`). */
  name: string;
  seed: string;
  workDir: string;
  /** Relative paths of the config resolve against this (the config file's directory). */
  baseDir: string;
  /** profiles_dir, execution and session; defaults where absent. */
  settings?: PipelineSettings;
  /** Each stage's raw section, validated by the stage's schema when the stage runs. */
  stageConfigs: Partial<Record<StageName, unknown>>;
}

export interface ProjectOptions {
  /** The stages this build has: the config's sections are checked against them. */
  stages: AnyStage[];
  /** The logger, or how to make it once the work directory is known (a run's log file lives there). */
  log: Logger | ((layout: WorkLayout) => Logger);
  overrides?: ProjectOverrides;
  /** `beside`: a command working beside a run (verify, a session) keeps its own scratch checkouts. */
  scratch?: ScratchKind;
}

function setKey(section: unknown, key: string, value: unknown): Record<string, unknown> {
  const [head, ...rest] = key.split(".");
  const object = { ...((section as Record<string, unknown> | undefined) ?? {}) };
  object[head!] = rest.length ? setKey(object[head!], rest.join("."), value) : value;
  return object;
}

/**
 * One pipeline and its work directory, opened once by every entrance (each command, fidelity's
 * synthetic pipeline, the session runner, the benchmarks): its config with the command line's
 * overrides, the work directory's layout (every path, named once), its artifact store, and its one
 * workspace (mirrors, scratch, executors), opened on first use and closed with the project. The
 * config file is read here and nowhere else.
 */
export class Project {
  readonly layout: WorkLayout;
  readonly store: ArtifactStore;
  readonly settings: PipelineSettings;
  readonly stageConfigs: Partial<Record<StageName, unknown>>;
  readonly log: Logger;
  private opened?: Workspace;

  private constructor(
    readonly definition: ProjectDefinition,
    private readonly options: ProjectOptions,
    /** The config file, when the project has one. */
    readonly configPath?: string,
  ) {
    this.layout = new WorkLayout(definition.workDir);
    this.store = new ArtifactStore(this.layout);
    const settings = definition.settings ?? PipelineSettings.parse({});
    const overrides = options.overrides ?? {};
    this.settings = { ...settings, execution: withExecutionOverrides(settings.execution, overrides) };
    let stageConfigs = { ...definition.stageConfigs };
    for (const { stage, key, value } of overrides.stageKeys ?? []) stageConfigs = { ...stageConfigs, [stage]: setKey(stageConfigs[stage], key, value) };
    this.stageConfigs = stageConfigs;
    this.log = typeof options.log === "function" ? options.log(this.layout) : options.log;
  }

  /** Opens the pipeline a config file describes; an invalid config is a ConfigError naming the file, key and line. */
  static open(configPath: string, options: ProjectOptions): Project {
    const loaded = loadConfig(configPath, options.stages);
    const definition: ProjectDefinition = {
      name: loaded.config.name,
      seed: loaded.config.seed,
      workDir: loaded.workDir,
      baseDir: loaded.baseDir,
      settings: settingsOf(loaded.config),
      stageConfigs: loaded.config.stages,
    };
    return new Project(definition, options, configPath);
  }

  /** A pipeline without a config file: fidelity's over a records file, a benchmark's, a test's. */
  static of(definition: ProjectDefinition, options: ProjectOptions): Project {
    return new Project({ ...definition, workDir: resolve(definition.workDir), baseDir: resolve(definition.baseDir) }, options);
  }

  get name(): string {
    return this.definition.name;
  }

  get seed(): string {
    return this.definition.seed;
  }

  get workDir(): string {
    return this.layout.root;
  }

  get baseDir(): string {
    return this.definition.baseDir;
  }

  get stages(): AnyStage[] {
    return this.options.stages;
  }

  /** The work directory's workspace: created on first use, one per project. */
  get workspace(): Workspace {
    const localCopies = this.options.overrides?.mirrors ?? process.env.SWITCH_SWE_MIRRORS;
    this.opened ??= WorkspaceOf.open(this.layout, this.settings.execution, this.log, {
      scratch: this.options.scratch ?? "run",
      ...(localCopies ? { localCopies: resolve(localCopies) } : {}),
    });
    return this.opened;
  }

  /** A stage's config section, validated by the stage's schema, with the command line's overrides. */
  stageConfig<C>(stage: Pick<StageDefinition<C, never>, "name" | "configSchema">): C {
    return parseStageConfig(stage, this.stageConfigs[stage.name]);
  }

  /** Where the config's emit section puts the benchmark, every path of it; a held-out directory the command line gives wins. */
  benchmarkLayout(heldoutDir?: string): BenchmarkLayout {
    const locations = parseStageConfig({ name: "emit", configSchema: BenchmarkLocations }, this.stageConfigs.emit);
    return BenchmarkLayout.of(this.baseDir, locations, heldoutDir);
  }

  /** The repository profiles of profiles_dir, with the errors of those that do not load. */
  profiles(): ProfileSet & { dir: string } {
    return loadProfilesDir(this.settings.profiles_dir, this.baseDir);
  }

  /** Its tasks' repositories: their profiles (read now) and mirrors (in its workspace). */
  resources(): TaskResources<ProfileSet & { dir: string }> {
    return new TaskResources(
      this.profiles(),
      () => this.workspace.mirrors,
      (p) => resolve(this.baseDir, p),
    );
  }

  /** Runs the stage engine over this project. */
  run(runOptions: RunOptions = {}, progress: Progress = silentProgress): Promise<RunSummary> {
    return runPipeline(
      {
        store: this.store,
        workspace: this.workspace,
        baseDir: this.baseDir,
        stages: this.stages,
        stageConfigs: this.stageConfigs,
        settings: this.settings,
        seed: this.seed,
        name: this.name,
        log: this.log,
        progress,
      },
      runOptions,
    );
  }

  /**
   * The same pipeline (config, settings, overrides) working in another directory, with further
   * execution overrides: `qualify task` builds environments and mirrors in a work directory of
   * its own.
   */
  elsewhere(workDir: string, overrides: ExecutionOverrides = {}): Project {
    const options = { ...this.options, overrides: { ...this.options.overrides, ...overrides }, log: this.log };
    return new Project({ ...this.definition, workDir: resolve(workDir) }, options, this.configPath);
  }

  /** Releases what the workspace's executors hold open. */
  async close(): Promise<void> {
    await this.opened?.close();
    this.opened = undefined;
  }
}

/** A pipeline without a config file, with what runs it: fidelity's, a benchmark's, a test's. */
export type ProjectRun = Omit<ProjectDefinition, "name"> & {
  name?: string;
  stages: AnyStage[];
  log: Logger;
  progress?: Progress;
  overrides?: ProjectOverrides;
};

/** Opens a project without a config file, runs the stage engine over it once, and closes it. */
export async function runProjectOnce(run: ProjectRun, runOptions: RunOptions = {}): Promise<RunSummary> {
  const project = Project.of(
    { ...run, name: run.name ?? "benchmark" },
    { stages: run.stages, log: run.log, ...(run.overrides ? { overrides: run.overrides } : {}) },
  );
  try {
    return await project.run(runOptions, run.progress);
  } finally {
    await project.close();
  }
}
