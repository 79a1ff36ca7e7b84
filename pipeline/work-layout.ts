import { join, resolve } from "node:path";
import type { StageName } from "./schemas/common.ts";

/** A run's scratch checkouts, or those of a command working beside a run (verify, a session), which a run starting meanwhile does not clear. */
export type ScratchKind = "run" | "beside";

/** Inside an environments directory (a work directory's envs/, or a local executor's own root): uv's shared cache and every build's log. */
export function environmentsLayout(root: string): { uvCache: string; buildLogs: string } {
  return { uvCache: join(root, "uv-cache"), buildLogs: join(root, "build-logs") };
}

/**
 * Inside one session run's directory (under session-runs/<agent>/, or where --work puts it): the
 * session's checkouts, the agent's logs, the trajectory, and a context relay's state, usage and
 * decisions.
 */
export function sessionRunLayout(runDir: string): { workspace: string; logs: string; trajectory: string; contextRelay: string } {
  return {
    workspace: join(runDir, "workspace"),
    logs: join(runDir, "logs"),
    trajectory: join(runDir, "trajectory.jsonl"),
    contextRelay: join(runDir, "context-relay"),
  };
}

/**
 * Every path of a work directory, named once. Whoever reads or writes the work directory (the
 * engine, the store, the workspace, the executors, a queue worker's own directory, fidelity, the
 * session runner, the commands) asks this for the path; no other module spells a directory of it.
 *
 *   switch-swe.lock.json      which inputs produced which outputs (the engine's lock file)
 *   .run.lock                 the process that holds the directory
 *   artifacts/<stage>/*.jsonl each stage's records
 *   cache/<stage>/            each record's cached result
 *   git/                      mirrors of the repositories
 *   envs/                     environments (local executor), uv's cache and build logs
 *   scratch/, verify-scratch/ checkouts of a run, and of commands working beside one
 *   logs/                     run.log, metrics.jsonl, a stage's saved logs under logs/<stage>/
 *   http-cache/<api>/         GitHub's answers, one directory per API
 *   session-runs/<agent>/     each session run's workspace, agent logs and trajectory (sessionRunLayout)
 *   run-logs/                 a queue worker's logs of the jobs it ran
 *   records.jsonl, profiles/  fidelity's subset of a records file, and its profiles with local mirrors
 *   profile-under-check/      repo check's profile, alone
 *   judge-cache/              a model judge's answers, by model, prompt version and inputs (audit --judge)
 */
export class WorkLayout {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  /** The engine's lock file: which inputs produced which outputs. */
  get lockFile(): string {
    return join(this.root, "switch-swe.lock.json");
  }

  /** Names the process holding the work directory, one run at a time. */
  get runLock(): string {
    return join(this.root, ".run.lock");
  }

  artifact(stage: StageName, name: string): string {
    return join(this.root, "artifacts", stage, `${name}.jsonl`);
  }

  /** The artifacts directory, whole (what a determinism check hashes). */
  get artifacts(): string {
    return join(this.root, "artifacts");
  }

  recordCache(stage: StageName, key: string): string {
    return join(this.root, "cache", stage, key.slice(0, 2), `${key}.json`);
  }

  get mirrors(): string {
    return join(this.root, "git");
  }

  get environments(): string {
    return join(this.root, "envs");
  }

  /** uv's download and wheel cache, shared by every build of this directory's environments. */
  get uvCache(): string {
    return environmentsLayout(this.environments).uvCache;
  }

  /** Every environment build's whole log. */
  get buildLogs(): string {
    return environmentsLayout(this.environments).buildLogs;
  }

  /** The directories a killed run can leave partial entries (`*.partial-<pid>`) in. */
  get partialHolders(): { name: string; dir: string }[] {
    return [
      { name: "envs", dir: this.environments },
      { name: "git", dir: this.mirrors },
    ];
  }

  scratch(kind: ScratchKind = "run"): string {
    return join(this.root, kind === "run" ? "scratch" : "verify-scratch");
  }

  get logs(): string {
    return join(this.root, "logs");
  }

  /** The run's log, every line the logger writes. */
  get runLog(): string {
    return join(this.logs, "run.log");
  }

  /** Measurements stages append for benchmarks, kept out of artifacts. */
  get metrics(): string {
    return join(this.logs, "metrics.jsonl");
  }

  /** A log a stage (or another group) keeps: logs/<group>/<name>.log, the name made a file name. */
  savedLog(group: string, name: string): string {
    return join(this.logs, group, `${name.replace(/[^\w.-]/g, "_")}.log`);
  }

  /** GitHub's cached answers for one API (host, port and path): two APIs on one host never share answers. */
  httpCache(apiUrl: string): string {
    const url = new URL(apiUrl);
    return join(this.root, "http-cache", `${url.host}${url.pathname.replace(/\/+$/, "")}`.replace(/[^\w.-]/g, "_"));
  }

  /** Where an agent's session runs go unless the command line names another directory. */
  sessionRuns(agent: string): string {
    return join(this.root, "session-runs", agent);
  }

  /** A queue worker's logs of the jobs it ran. */
  get workerLogs(): string {
    return join(this.root, "run-logs");
  }

  /** Fidelity's subset of a records file: the records of the tasks asked for. */
  get fidelityRecords(): string {
    return join(this.root, "records.jsonl");
  }

  /** Fidelity's copy of the profiles, clone URLs pointed at local mirrors. */
  get fidelityProfiles(): string {
    return join(this.root, "profiles");
  }

  /** A model judge's answers to one prompt (audit --judge), by the hash of model, prompt version and inputs. */
  judgeAnswers(key: string): string {
    return join(this.root, "judge-cache", key.slice(0, 2), `${key}.json`);
  }

  /** The profile repo check checks, alone in a directory as the pipeline loads profiles. */
  get profileUnderCheck(): string {
    return join(this.root, "profile-under-check");
  }
}
