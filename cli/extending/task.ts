import { resolve } from "node:path";
import type { AnyStage } from "../../pipeline/engine/stage.ts";
import type { Logger } from "../../pipeline/logger.ts";
import type { LoadedProfile } from "../../pipeline/profiles/load.ts";
import { Project } from "../../pipeline/project/project.ts";
import { Candidate } from "../../pipeline/schemas/candidate.ts";
import { type Request, Task } from "../../pipeline/schemas/task.ts";
import { InputError } from "../../pipeline/validation.ts";
import { splitStage } from "../../stages/split/index.ts";

/**
 * What `extend new` and `extend check` know of a pipeline's task: its mined record, its profile,
 * its upstream requests, and where the config keeps extension files. Read from the pipeline's
 * artifacts, never written: an author's check leaves the run's artifacts and caches as they were.
 */

/** A pipeline opened for authoring: its own work directory (mirrors, environments), scratch checkouts apart from a run's. */
export function openForAuthoring(options: {
  stages: AnyStage[];
  config: string;
  log: Logger;
  executor?: "auto" | "docker" | "local";
  mirrors?: string;
}): Project {
  const project = Project.open(options.config, {
    stages: options.stages,
    log: options.log,
    scratch: "beside",
    overrides: { ...(options.executor ? { executor: options.executor } : {}), ...(options.mirrors ? { mirrors: options.mirrors } : {}) },
  });
  if (project.settings.execution.executor !== "queue") return project;
  options.log.warn("extend runs one task on this machine, not through the queue: using the docker executor (pass --executor to choose)");
  return project.elsewhere(project.workDir, { executor: "docker" });
}

/** The directory the config's split stage reads extension files from. */
export function extensionsDir(project: Project): string {
  return resolve(project.baseDir, project.stageConfig(splitStage).extensions_dir);
}

/** The task's mined record; a task the pipeline never mined is bad input, naming where it looked. */
export async function minedTask(project: Project, taskId: string, asked: string): Promise<Candidate> {
  const path = project.store.artifactPath("mine", "candidates");
  const records = await project.store.readRecords("mine", "candidates").catch(() => {
    throw new InputError(`${path} is missing: run 'switch-swe mine --config ${project.configPath}' first`);
  });
  const found = records.records.find((r) => (r as { id?: unknown }).id === taskId);
  if (!found) throw new InputError(`${asked}: no task ${taskId} among the records the config mined (${path}); an extension file is named <task id>.yaml`);
  return Candidate.parse(found);
}

/** The task's repository profile, or UnknownRepository. */
export function profileOf(project: Project, candidate: Candidate): LoadedProfile {
  return project.resources().profileOf(candidate.repo);
}

/** A mirror of the task's repository holding its base, in the project's work directory. */
export function taskMirror(project: Project, candidate: Candidate): Promise<string> {
  return project.resources().mirrorAt(candidate.repo, candidate.base_commit);
}

const AUTHORED = new Set(["authored", "upstream_commit"]);

/**
 * The task's upstream requests: reconstruct's (curation applied), its authored and upstream-commit
 * stages left out, where the pipeline reconstructed the task; else the record's own request as
 * request 1 (its problem statement, else its issues, else its pull request's description).
 */
export async function upstreamRequests(project: Project, candidate: Candidate): Promise<{ requests: Request[]; from: string }> {
  const reconstructed = await project.store
    .readRecords("reconstruct", "tasks")
    .then(({ records }) => records.map((r) => Task.parse(r)).find((t) => t.id === candidate.id))
    .catch(() => undefined);
  const upstream = reconstructed?.requests.filter((r) => !r.provenance.sources.some((s) => AUTHORED.has(s.kind)));
  if (upstream?.length) return { requests: upstream.map((r, i) => ({ ...r, stage: i + 1 })), from: "reconstruct" };
  const pr = candidate.pull_request;
  const [text, from] = candidate.problem_statement?.trim()
    ? [candidate.problem_statement, "problem statement"]
    : candidate.issues.length
      ? [candidate.issues.map((i) => `${i.title}\n\n${i.body}`).join("\n\n"), "linked issue"]
      : [`${pr?.title ?? ""}\n\n${pr?.body ?? ""}`, "pull request's description"];
  const request: Request = {
    stage: 1,
    text: text.trim() || "(empty)",
    provenance: { sources: [{ kind: "issue", record_id: candidate.id, author: "the record" }] },
  };
  return { requests: [request], from };
}
