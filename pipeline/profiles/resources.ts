import type { PythonOffer, EnvironmentSpec } from "../executors/types.ts";
import type { MirrorCache } from "../git.ts";
import type { QualificationRecord } from "../schemas/qualification.ts";
import type { SplitChange } from "../schemas/split.ts";
import type { Task } from "../schemas/task.ts";
import { type EnvironmentPlan, environmentsForTasks, recordedEnvironment } from "./environments.ts";
import { InputError } from "../validation.ts";
import { cloneSourceOf, profileFileName, type LoadedProfile, type ProfileSet } from "./load.ts";

/**
 * A repository with no valid profile: the one reject (`unknown_repository`, field `repo`) of every
 * stage and command that needs a repository's profile. The engine turns it into a record's reject
 * (record-map.ts); a command prints it as an input error.
 */
export class UnknownRepository extends InputError {
  override name = "UnknownRepository";
  readonly reason = "unknown_repository";
  readonly field = "repo";

  constructor(
    readonly repo: string,
    profiles: ProfileSet,
  ) {
    const where = profiles.dir ? `${profiles.dir}/${profileFileName(repo)}` : profileFileName(repo);
    super(profiles.errors.get(repo) ?? `there is no profile ${where}; write one with 'switch-swe repo init ${repo} --clone PATH'`);
  }
}

/**
 * What a task's repository gives every stage and command: its profile and the mirror that holds a
 * commit of it, both found one way. A stage gets it through its context (`ctx.resources`), a
 * command through the opened benchmark.
 */
export class TaskResources<P extends ProfileSet = ProfileSet> {
  constructor(
    readonly profiles: P,
    /** The work directory's mirror cache, asked for when a mirror is first needed (a command's workspace opens on first use). */
    private readonly mirrors: () => MirrorCache,
    /** Resolves a path as the config writes it (a profile's file) against the config's directory. */
    private readonly resolvePath: (path: string) => string,
  ) {}

  /** The repository's profile, or UnknownRepository. */
  profileOf(repo: string): LoadedProfile {
    const loaded = this.profiles.profiles.get(repo);
    if (!loaded) throw new UnknownRepository(repo, this.profiles);
    return loaded;
  }

  /** Where the repository is cloned from: the given source, else its profile's clone_url, else GitHub's (a repository with no profile too). */
  cloneSource(repo: string, given?: string): string {
    return given ?? cloneSourceOf(repo, this.profiles.profiles.get(repo), this.resolvePath);
  }

  /** A mirror holding as many of `commits` as the repository's source has, the ones it lacks, and that source. */
  async mirrorWith(repo: string, commits: string[]): Promise<{ path: string; missing: string[]; source: string }> {
    const source = this.cloneSource(repo);
    return { ...(await this.mirrors().ensureSome(repo, source, commits)), source };
  }

  /**
   * The environments of a pipeline's split tasks, planned once over all of them as qualify plans
   * them (the earliest pull request sharing a recipe dates it; the Python from what the executor
   * offers). qualify, `images build` and `qualify task` plan through it.
   */
  planEnvironments(splits: SplitChange[], offer: PythonOffer): EnvironmentPlan {
    return environmentsForTasks(splits, this.profiles.profiles, offer);
  }

  /** The environment a task was qualified in, read from the task and qualify's record (never planned again); see recordedEnvironment. */
  environmentOf(task: Task, qualification: QualificationRecord | undefined): EnvironmentSpec {
    return recordedEnvironment(task, qualification);
  }

  /** Runs git in one of its mirrors. */
  git(mirror: string, args: string[]): Promise<string> {
    return this.mirrors().git(mirror, args);
  }

  /** A mirror of the repository that holds `commit` (CommitNotInSource when its source lacks it), cloned from `cloneSource`. */
  mirrorAt(repo: string, commit: string, given?: string): Promise<string> {
    return this.mirrors().ensure(repo, this.cloneSource(repo, given), commit);
  }
}
