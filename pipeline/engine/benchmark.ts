import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import type { Logger } from "../logger.ts";
import { cloneSourceOf, type LoadedProfile, loadProfilesDir, type ProfileSet } from "../profiles/load.ts";
import { HeldoutTask } from "../schemas/heldout.ts";
import { InputError, readJsonFile } from "../validation.ts";
import { type LoadedConfig, loadConfig } from "./config.ts";
import { type ExecutionOverrides, type ExecutionSettings, withExecutionOverrides } from "./settings.ts";
import type { AnyStage } from "./stage.ts";
import { Workspace } from "./workspace.ts";

/**
 * Where emit publishes the benchmark (the emit stage's config is exactly this): the released
 * files, and apart from them the held-out assets that score submissions.
 */
export const BenchmarkLocations = z.strictObject({
  /** The released benchmark: manifest, sessions, tables, profile, schemas. */
  out_dir: z.string().default("manifests/benchmark"),
  /** Reference patches, test patches, test lists and commands: what an agent must never see. */
  heldout_dir: z.string().default("manifests/benchmark/heldout"),
});
export type BenchmarkLocations = z.infer<typeof BenchmarkLocations>;

/**
 * An emitted benchmark and what works on it outside a run (verify, session run and run-all, the
 * agent's environment image): its config, the one workspace of its work directory (mirrors,
 * scratch, the executor of its execution settings with the command line's overrides), its
 * held-out assets and its repository profiles. Opened once per command, so every session of a
 * run-all shares one mirror cache and one executor.
 */
export class OpenedBenchmark {
  readonly profiles: ProfileSet & { dir: string };
  readonly heldoutDir: string;
  readonly sessionsDir: string;

  private constructor(
    readonly configPath: string,
    readonly loaded: LoadedConfig,
    readonly execution: ExecutionSettings,
    readonly workspace: Workspace,
    locations: BenchmarkLocations,
    heldoutDir?: string,
  ) {
    this.heldoutDir = heldoutDir ? resolve(heldoutDir) : resolve(loaded.baseDir, locations.heldout_dir);
    this.sessionsDir = resolve(loaded.baseDir, locations.out_dir, "sessions");
    this.profiles = loadProfilesDir(loaded.config.profiles_dir, loaded.baseDir);
  }

  /** `stages` are the command line's registry, against which the config is checked. */
  static open(configPath: string, stages: AnyStage[], options: { overrides?: ExecutionOverrides; heldoutDir?: string; log: Logger }): OpenedBenchmark {
    const loaded = loadConfig(configPath, stages);
    const execution = withExecutionOverrides(loaded.config.execution, options.overrides ?? {});
    const locations = BenchmarkLocations.parse((loaded.config.stages as Record<string, unknown>).emit ?? {});
    return new OpenedBenchmark(
      configPath,
      loaded,
      execution,
      Workspace.open(loaded.workDir, execution, options.log, { scratch: "verify-scratch" }),
      locations,
      options.heldoutDir,
    );
  }

  /** A repository's profile, or an error naming the profiles directory and why there is none. */
  profile(repo: string): LoadedProfile {
    const profile = this.profiles.profiles.get(repo);
    if (!profile) throw new InputError(`${this.profiles.dir}: ${this.profiles.errors.get(repo) ?? `no profile for ${repo}`}`);
    return profile;
  }

  /** Where a repository is cloned from: the given source (a session's own), else its profile's, else GitHub. */
  cloneSource(repo: string, given?: string): string {
    return given ?? cloneSourceOf(repo, this.profile(repo), (p) => resolve(this.loaded.baseDir, p));
  }

  /** A task's held-out asset, or undefined when the benchmark has none. */
  heldout(taskId: string): HeldoutTask | undefined {
    const file = join(this.heldoutDir, `${taskId}.json`);
    return existsSync(file) ? readJsonFile(file, HeldoutTask, "a held-out task") : undefined;
  }

  /** A task's held-out asset; its absence is the caller's input error, said with where it was looked for. */
  requireHeldout(taskId: string, why: string): HeldoutTask {
    const task = this.heldout(taskId);
    if (!task)
      throw new InputError(
        `${join(this.heldoutDir, `${taskId}.json`)}: no held-out asset of ${taskId}, ${why} (is emit.heldout_dir in ${this.configPath} the benchmark's? pass --heldout DIR otherwise)`,
      );
    return task;
  }

  close(): Promise<void> {
    return this.workspace.close();
  }
}
