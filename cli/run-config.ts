import { Option } from "commander";
import { BUILT_STAGES } from "../stages/index.ts";
import { orderStages, type RunOptions } from "../pipeline/engine/engine.ts";
import { createLogger } from "../pipeline/logger.ts";
import { createProgress, silentProgress } from "../pipeline/progress.ts";
import { formatSummary, Project, type ProjectOverrides } from "../pipeline/project/project.ts";
import type { AnyStage } from "../pipeline/engine/stage.ts";
import { type Io, requirePath, requireWritableDir } from "./io.ts";
import { usageParser } from "./numeric-options.ts";
import type { ExecutorChoice } from "../pipeline/engine/settings.ts";

/**
 * Opens the project of a run's config with the command line's overrides; its log goes to the
 * terminal (warnings only when quiet) and to the work directory's run log.
 */
export function openRunProject(io: Io, configPath: string, quiet: boolean, overrides: ProjectOverrides = {}): Project {
  requirePath("--config", configPath, "file");
  const project = Project.open(configPath, {
    stages: BUILT_STAGES,
    overrides,
    log: (layout) => {
      requireWritableDir(configPath, layout.root);
      return createLogger({ level: quiet ? "warn" : "info", file: layout.runLog, write: (line) => io.err(line + "\n") });
    },
  });
  project.log.info(`config ${configPath}: benchmark '${project.name}', seed ${project.seed}, work directory ${project.workDir}`);
  return project;
}

/** Runs a project's pipeline and prints the summary; the exit code says whether every stage finished. */
export async function runProject(io: Io, project: Project, runOptions: RunOptions, quiet: boolean): Promise<number> {
  try {
    const summary = await project.run(runOptions, quiet ? silentProgress : createProgress());
    io.out(formatSummary(summary) + "\n");
    if (summary.stages.length && summary.stages.every((s) => s.status === "up_to_date")) io.out("everything is up to date: no stage did any work\n");
    return summary.ok ? 0 : 1;
  } finally {
    await project.close();
  }
}

/** Opens the config's project with the command line's overrides, runs the pipeline, prints the summary. */
export function runWithConfig(io: Io, configPath: string, runOptions: RunOptions, quiet: boolean, overrides: ProjectOverrides = {}): Promise<number> {
  return runProject(io, openRunProject(io, configPath, quiet, overrides), runOptions, quiet);
}

export const stageOption = (flag: string, description: string) => new Option(flag, description).choices(orderStages(BUILT_STAGES).map((s) => s.name));

/** The flags every stage declares, as command-line options: they set a key of that stage's config. */
export function stageFlags(stages: AnyStage[]) {
  return stages.flatMap((stage) => (stage.flags ?? []).map((flag) => ({ stage: stage.name, ...flag, attribute: new Option(flag.flag, "").attributeName() })));
}

/** A stage's flag as a commander option, its value parsed as the stage says. */
export function flagOption(flag: { flag: string; parse?: (value: string) => unknown }, description: string): Option {
  const option = new Option(flag.flag, description);
  return flag.parse ? option.argParser(usageParser(flag.parse)) : option;
}

export function overridesFrom(opts: Record<string, unknown>, stages: AnyStage[]): ProjectOverrides {
  const stageKeys = stageFlags(stages)
    .filter((f) => opts[f.attribute] !== undefined)
    .map((f) => ({ stage: f.stage, key: f.key, value: opts[f.attribute] }));
  return {
    executor: opts.executor as ExecutorChoice | undefined,
    redis: opts.redis as string | undefined,
    gitService: opts.gitService as string | undefined,
    jobs: opts.jobs as number | undefined,
    mirrors: opts.mirrors as string | undefined,
    stageKeys,
  };
}
