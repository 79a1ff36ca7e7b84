import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { BenchmarkLayout } from "../benchmark-layout.ts";
import type { Workspace } from "../executors/workspace.ts";
import type { ExecutionSettings } from "../engine/settings.ts";
import type { LoadedProfile, ProfileSet } from "../profiles/load.ts";
import type { TaskResources } from "../profiles/resources.ts";
import { HeldoutTask } from "../schemas/heldout.ts";
import type { SessionSpec } from "../schemas/session.ts";
import { readListedSessions } from "./listed-sessions.ts";
import { InputError, readJsonFile } from "../validation.ts";
import { Project, type ProjectOptions } from "./project.ts";

/**
 * An emitted benchmark and what works on it outside a run (verify, session run and run-all, the
 * agent's environment image): its project (config with the command line's overrides, the one
 * workspace of its work directory, scratch checkouts apart from a run's), its held-out assets and
 * its repository profiles. Opened once per command, so every session of a run-all shares one
 * mirror cache and one executor per kind.
 */
export class OpenedBenchmark {
  /** Its tasks' repositories: profiles (the one `unknown_repository` error) and mirrors. */
  readonly resources: TaskResources<ProfileSet & { dir: string }>;
  /** Where its files are: the config's emit section, the held-out assets where the command line puts them. */
  readonly layout: BenchmarkLayout;

  private constructor(
    readonly project: Project,
    heldoutDir?: string,
  ) {
    this.layout = project.benchmarkLayout(heldoutDir);
    this.resources = project.resources();
  }

  get profiles(): ProfileSet & { dir: string } {
    return this.resources.profiles;
  }

  get heldoutDir(): string {
    return this.layout.heldoutDir;
  }

  get sessionsDir(): string {
    return this.layout.sessionsDir;
  }

  /** Opens the benchmark of a config file; `stages` are the command line's registry, against which the config is checked. */
  static open(configPath: string, options: Omit<ProjectOptions, "scratch"> & { heldoutDir?: string }): OpenedBenchmark {
    return new OpenedBenchmark(Project.open(configPath, { ...options, scratch: "beside" }), options.heldoutDir);
  }

  get configPath(): string {
    return this.project.configPath ?? "(no config file)";
  }

  get baseDir(): string {
    return this.project.baseDir;
  }

  /** The execution settings, with the command line's overrides. */
  get execution(): ExecutionSettings {
    return this.project.settings.execution;
  }

  get workspace(): Workspace {
    return this.project.workspace;
  }

  /** A repository's profile, or UnknownRepository. */
  profile(repo: string): LoadedProfile {
    return this.resources.profileOf(repo);
  }

  /** Where a repository of a profile is cloned from: the given source (a session's own), else its profile's. */
  cloneSource(repo: string, given?: string): string {
    if (given === undefined) this.profile(repo);
    return this.resources.cloneSource(repo, given);
  }

  /** A mirror holding `commit` of a repository of a profile, cloned from `cloneSource`. */
  mirrorAt(repo: string, commit: string, given?: string): Promise<string> {
    if (given === undefined) this.profile(repo);
    return this.resources.mirrorAt(repo, commit, given);
  }

  /** The sessions the benchmark lists (its sessions/index.json), each with its file and specification, in the list's order. */
  sessions(): { file: string; spec: SessionSpec }[] {
    return readListedSessions(this.sessionsDir);
  }

  /** A task's held-out asset, or undefined when the benchmark has none. */
  heldout(taskId: string): HeldoutTask | undefined {
    const file = this.layout.heldout(taskId);
    return existsSync(file) ? readJsonFile(file, HeldoutTask, "a held-out task") : undefined;
  }

  /** A task's held-out asset; its absence is the caller's input error, said with where it was looked for. */
  requireHeldout(taskId: string, why: string): HeldoutTask {
    const task = this.heldout(taskId);
    if (!task)
      throw new InputError(
        `${this.layout.heldout(taskId)}: no held-out asset of ${taskId}, ${why} (is emit.heldout_dir in ${this.configPath} the benchmark's? pass --heldout DIR otherwise)`,
      );
    return task;
  }

  close(): Promise<void> {
    return this.project.close();
  }
}
