import { existsSync, readFileSync, statSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { listTree, PUBLISH_MARKER, replaceDirectoryAtomic } from "../atomic.ts";
import { compareKeys, hashValue, sha256 } from "../canonical.ts";
import { codeVersion } from "../code-version.ts";
import { decodeStrict } from "../decode.ts";
import { loadProfiles, type ProfileSet } from "../profiles/load.ts";
import { TaskResources } from "../profiles/resources.ts";
import type { Workspace } from "../executors/workspace.ts";
import { openGithubClient } from "../github-client.ts";
import type { Logger } from "../logger.ts";
import type { Progress } from "../progress.ts";
import { mapRecords, RecordTally } from "./record-map.ts";
import { Reject, type StageName } from "../schemas/common.ts";
import { PipelineSettings, VOLATILE_EXECUTION_KEYS, type SettingName } from "./settings.ts";
import { inputsOf, type AnyStage, type ExternalFile, type StageContext, type StageDefinition } from "./stage.ts";
import type { ArtifactStore, LockEntry } from "./store.ts";
import { describeFirstIssue, firstIssue } from "../validation.ts";

export class PipelineError extends Error {
  override name = "PipelineError";
}

const REJECTS = "rejects";
/** Reasons that a stage reports through ctx.reject for failures that may not recur. */
const TRANSIENT_REASONS: ReadonlySet<string> = new Set(["internal_error", "infrastructure_fault", "transient_failure"]);

/** What one run of the pipeline shares between its stages. */
export interface RunResources {
  baseDir: string;
  seed: string;
  benchmark: string;
  settings: PipelineSettings;
  log: Logger;
  progress: Progress;
  /** The work directory's owner: mirrors, scratch checkouts, logs, the executor. */
  workspace: Workspace;
}

export interface StageOutcome {
  stage: StageName;
  status: "ran" | "incomplete" | "up_to_date";
  in: number;
  out: number;
  rejected: number;
  by_reason?: Record<string, number>;
  reused: number;
  transient?: string[];
  /** The stage's notes for the summary. */
  notes?: string[];
  /** A listing gate's rejects, one line each: the record, the reason and the message. */
  listed?: string[];
}

/** One reject as a gate lists it in the summary: its record, reason and the start of its message. */
function listedLine(r: Reject): string {
  const message = r.message.startsWith(`${r.record_id}: `) ? r.message.slice(r.record_id.length + 2) : r.message;
  const short = message.replace(/\s+/g, " ");
  return `${r.record_id}: ${r.reason}: ${short.length > 200 ? `${short.slice(0, 199)}…` : short}`;
}

/** A stage's section of the config, validated; an error names the key. Commands outside a run use it too. */
export function parseStageConfig<C>(stage: Pick<StageDefinition<C, never>, "name" | "configSchema">, raw: unknown): C {
  const parsed = stage.configSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = firstIssue(parsed.error, raw ?? {});
    throw new PipelineError(`config key ${["stages", stage.name, issue.field].filter(Boolean).join(".")}: ${issue.message}`);
  }
  return parsed.data;
}

/** An input file as the engine read it: decoded for the stage, hashed as bytes for the cache key. */
type ReadFile = ExternalFile & { bytesSha256: string };

async function readFiles(baseDir: string, paths: string[], optional: ReadonlySet<string> = new Set()): Promise<ReadFile[]> {
  const files: ReadFile[] = [];
  const read = async (file: string, as: string): Promise<ReadFile> => {
    const bytes = await readFile(file);
    const { text, invalid } = decodeStrict(bytes);
    return { path: as, text, ...(invalid.length ? { invalid, bytes } : {}), bytesSha256: sha256(bytes) };
  };
  for (const path of [...new Set(paths)].sort()) {
    const absolute = resolve(baseDir, path);
    if (!existsSync(absolute)) {
      if (optional.has(path)) continue;
      throw new PipelineError(`input file not found: ${path} (resolved to ${absolute})`);
    }
    if (statSync(absolute).isDirectory()) {
      for (const name of (await readdir(absolute)).sort()) {
        if (statSync(join(absolute, name)).isFile()) files.push(await read(join(absolute, name), join(path, name)));
      }
    } else files.push(await read(absolute, path));
  }
  return files;
}

/** The declared inputs' records, each checked against the schema the stage declared for it. */
async function readInputs(store: ArtifactStore, stage: AnyStage): Promise<Record<string, unknown[]>> {
  const inputs: Record<string, unknown[]> = {};
  for (const [arg, spec] of inputsOf(stage)) {
    const { records } = await store.readRecords(spec.stage, spec.name);
    inputs[arg] = records.map((record, index) => {
      const parsed = spec.schema.safeParse(record);
      if (!parsed.success)
        throw new PipelineError(`${store.artifactPath(spec.stage, spec.name)} line ${index + 1}: ${describeFirstIssue(parsed.error, record)}`);
      return parsed.data;
    });
  }
  return inputs;
}

function outputsIntact(store: ArtifactStore, stage: AnyStage, entry: LockEntry, baseDir: string): boolean {
  for (const name of [...stage.outputs.map((o) => o.name), REJECTS]) {
    if (store.hashArtifact(stage.name, name) !== entry.outputs[name]) return false;
  }
  for (const [path, hash] of Object.entries(entry.published)) {
    const absolute = resolve(baseDir, path);
    if (!existsSync(absolute) || sha256(readFileSync(absolute)) !== hash) return false;
  }
  // A published directory holds exactly what was published: an extra file is a change too.
  for (const dir of entry.published_dirs) {
    const expected = Object.keys(entry.published)
      .filter((p) => p.startsWith(`${dir}/`))
      .map((p) => p.slice(dir.length + 1))
      .sort();
    const actual = listTree(resolve(baseDir, dir)).filter((p) => p !== PUBLISH_MARKER);
    if (actual.join("\0") !== expected.join("\0")) return false;
  }
  return true;
}

/** Everything a stage's result depends on, hashed: it runs again when any of it changes. */
interface StageKey {
  key: string;
  code: string;
  configHash: string;
  inputHashes: Record<string, string>;
  fileHashes: Record<string, string>;
  /** What the stage's records' cached results depend on besides the records themselves. */
  recordKeyBase: unknown;
  files: ReadFile[];
  profiles?: ProfileSet;
}

/**
 * The repository profiles, every one valid: an invalid profile stops every stage that reads
 * profiles, naming each bad file and field, instead of leaving its repository to a default (a
 * clone from github.com) or to a reject per record that hides the cause.
 */
function validProfiles(files: ExternalFile[], dir: string): ProfileSet & { dir: string } {
  const loaded = loadProfiles(files);
  if (loaded.errors.size)
    throw new PipelineError(
      `${loaded.errors.size} invalid repository profile(s) in ${dir}: ${[...loaded.errors.values()].join("; ")} (fix ${loaded.errors.size === 1 ? "it" : "them"}, or move ${loaded.errors.size === 1 ? "it" : "them"} out of ${dir}: no stage that reads profiles runs until then)`,
    );
  return { ...loaded, dir };
}

async function stageKey(store: ArtifactStore, run: RunResources, stage: AnyStage, config: unknown): Promise<StageKey> {
  const uses = (name: SettingName) => stage.settings?.includes(name) ?? false;
  const configHash = hashValue(Object.fromEntries(Object.entries(config as Record<string, unknown>).filter(([key]) => !stage.volatileConfig?.includes(key))));
  const code = codeVersion(stage.version, stage.module);
  const lock = store.readLock();
  const inputHashes: Record<string, string> = {};
  for (const [, spec] of inputsOf(stage)) {
    const hash = store.hashArtifact(spec.stage, spec.name);
    if (hash === undefined || !lock.stages[spec.stage]) throw new PipelineError(`input ${spec.stage}/${spec.name} is missing: run stage '${spec.stage}' first`);
    inputHashes[`${spec.stage}/${spec.name}`] = hash;
  }
  const declared = stage.externalFiles?.(config) ?? [];
  const paths = declared.map((f) => (typeof f === "string" ? f : f.path));
  const optional = new Set(declared.flatMap((f) => (typeof f === "string" ? [] : [f.path])));
  const files = await readFiles(run.baseDir, paths, optional);
  const profileFiles = uses("profiles") ? await readFiles(run.baseDir, [run.settings.profiles_dir]) : [];
  // Hashes of the bytes on disk: an edit that decoding would hide (an invalid byte) is still a change.
  const fileHashes: Record<string, string> = Object.fromEntries([...files, ...profileFiles].map((f) => [f.path, f.bytesSha256]));
  for (const path of optional) if (!existsSync(resolve(run.baseDir, path))) fileHashes[path] = "absent";
  const execution = Object.fromEntries(Object.entries(run.settings.execution).filter(([k]) => !(VOLATILE_EXECUTION_KEYS as readonly string[]).includes(k)));
  const settings = { execution: uses("execution") ? execution : null, session: uses("session") ? run.settings.session : null };
  const seed = stage.usesSeed ? run.seed : null;
  const recordConfig = stage.recordConfig ? hashValue(stage.recordConfig(config) ?? null) : configHash;
  const recordKeyBase = { code, config: recordConfig, settings, seed };
  // The stage's own key holds the whole config (the stage runs again on any change); a record's, only what changes it.
  const key = hashValue({ stage: stage.name, ...recordKeyBase, config: configHash, inputs: inputHashes, files: fileHashes });
  return {
    key,
    code,
    configHash,
    inputHashes,
    fileHashes,
    recordKeyBase,
    files,
    ...(uses("profiles") ? { profiles: validProfiles(profileFiles, run.settings.profiles_dir) } : {}),
  };
}

/** Published files and directories of one stage run, for its lock entry. */
class Publications {
  readonly files: Record<string, string> = {};
  readonly dirs: string[] = [];
  readonly notes: string[] = [];
}

function stageContext(
  run: RunResources,
  stage: AnyStage,
  config: unknown,
  key: StageKey,
  tally: RecordTally,
  published: Publications,
  previous: LockEntry | undefined,
  force: boolean,
  store: ArtifactStore,
): StageContext<unknown> {
  const log = run.log.child(stage.name);
  const undeclared = (name: SettingName): never => {
    throw new PipelineError(`stage ${stage.name} uses the '${name}' settings without declaring them (StageDefinition.settings)`);
  };
  const uses = (name: SettingName) => stage.settings?.includes(name) ?? false;
  const scratchDir = () => run.workspace.scratch;
  const resolvePath = (path: string) => resolve(run.baseDir, path);
  const resources = key.profiles && new TaskResources(key.profiles, () => run.workspace.mirrors, resolvePath);
  return {
    stage: stage.name,
    config,
    seed: run.seed,
    benchmark: run.benchmark,
    log,
    files: key.files,
    mirrors: run.workspace.mirrors,
    get profiles() {
      return key.profiles ?? undeclared("profiles");
    },
    get resources() {
      return resources ?? undeclared("profiles");
    },
    get execution() {
      return uses("execution") ? run.settings.execution : undeclared("execution");
    },
    executor: () => (uses("execution") ? run.workspace.executor() : undeclared("execution")),
    get session() {
      return uses("session") ? run.settings.session : undeclared("session");
    },
    scratchDir,
    checkout: (mirror, commit, patches) => run.workspace.checkout(mirror, commit, patches),
    resolvePath,
    publishDirectory: async (dir, files) => {
      const absolute = resolve(run.baseDir, dir);
      const rel = relative(run.baseDir, absolute);
      // Only what an earlier run of this stage published there may be replaced.
      const before = new Set(
        Object.keys(previous?.published ?? {})
          .filter((p) => p.startsWith(`${rel}/`))
          .map((p) => p.slice(rel.length + 1)),
      );
      await replaceDirectoryAtomic(absolute, files, (existing) => existing.every((p) => before.has(p)));
      for (const [path, content] of files) published.files[`${rel}/${path}`] = sha256(content);
      published.dirs.push(rel);
    },
    metric: (values) => store.appendMetric(stage.name, values),
    note: (text) => void published.notes.push(text),
    layout: run.workspace.layout,
    saveLog: (name, text) => run.workspace.saveLog(stage.name, name, text),
    github: (settings) => openGithubClient(settings, { baseDir: run.baseDir, layout: run.workspace.layout, log }),
    reject(reject) {
      // A record already counted by mapRecords (rejected after its work) is not counted twice.
      if (!tally.seenIds.has(reject.record_id)) tally.processed++;
      const parsed = Reject.parse({ ...reject, stage: stage.name });
      tally.rejects.push(parsed);
      if (TRANSIENT_REASONS.has(parsed.reason)) tally.transient.add(parsed);
    },
    mapRecords: (records, map) => mapRecords({ stage: stage.name, store, progress: run.progress, keyBase: key.recordKeyBase, force, tally }, records, map),
  };
}

/** Each output's records, validated and sorted; a record the stage built wrongly is a bug, rejected by name. */
function validateOutputs(stage: AnyStage, produced: Record<string, unknown[]>, tally: RecordTally): Map<string, unknown[]> {
  const validated = new Map<string, unknown[]>();
  for (const spec of stage.outputs) {
    const records = produced[spec.name];
    if (!records) throw new PipelineError(`stage ${stage.name} produced no '${spec.name}' output`);
    const valid: unknown[] = [];
    for (const record of records) {
      const parsed = spec.schema.safeParse(record);
      if (parsed.success) {
        valid.push(parsed.data);
        continue;
      }
      let id = "(unknown)";
      try {
        id = String(spec.key(record));
      } catch {
        // a record too broken to name
      }
      const bug: Reject = {
        stage: stage.name,
        record_id: id,
        reason: "internal_error",
        field: firstIssue(parsed.error, record).field,
        message: `output ${spec.name} record ${id}: ${describeFirstIssue(parsed.error, record)}`,
      };
      tally.rejects.push(bug);
      tally.transient.add(bug);
    }
    valid.sort((a, b) => compareKeys(spec.key(a), spec.key(b)));
    const duplicate = valid.find((r, i) => i > 0 && spec.key(r) === spec.key(valid[i - 1]));
    if (duplicate) throw new PipelineError(`stage ${stage.name} produced two '${spec.name}' records with key ${spec.key(duplicate)}`);
    validated.set(spec.name, valid);
  }
  return validated;
}

/**
 * Runs one stage, or says it is up to date. A stage with transient failures (or a bug) is
 * incomplete: the next run does it again instead of calling it up to date, and its partial
 * outputs replace the last complete ones only with --keep-going (or when there are none), so
 * nothing good is lost to a passing fault.
 */
export async function runStage(
  store: ArtifactStore,
  run: RunResources,
  stage: AnyStage,
  rawConfig: unknown,
  force: boolean,
  keepGoing: boolean,
  /** Run the stage even though its inputs look unchanged (a source outside the pipeline changed), its records' caches still used. */
  recheck = false,
): Promise<StageOutcome> {
  const log = run.log.child(stage.name);
  const config = parseStageConfig(stage, rawConfig);
  const key = await stageKey(store, run, stage, config);
  const previous = store.readLock().stages[stage.name];
  // A record that met a source lacking file contents is looked at again (record-map.ts): the
  // source may have been completed since, which none of the stage's inputs shows.
  const incompleteSources = previous?.counts.by_reason.incomplete_source ?? 0;
  if (incompleteSources && !force && !recheck) log.info(`${incompleteSources} record(s) met an incomplete source last time: looking again`);
  if (!force && !recheck && !incompleteSources && previous && previous.key === key.key && outputsIntact(store, stage, previous, run.baseDir)) {
    log.info("up to date: inputs, config, settings and code unchanged; no work done");
    const listed = stage.gate?.list ? (await store.readRecords(stage.name, REJECTS)).records.map((r) => listedLine(Reject.parse(r))) : [];
    return {
      stage: stage.name,
      status: "up_to_date",
      ...previous.counts,
      reused: previous.counts.in,
      ...(previous.notes.length ? { notes: previous.notes } : {}),
      ...(listed.length ? { listed } : {}),
    };
  }
  const tally = new RecordTally();
  const published = new Publications();
  const ctx = stageContext(run, stage, config, key, tally, published, previous, force, store);
  const validated = validateOutputs(stage, await stage.run(ctx, await readInputs(store, stage)), tally);
  const rejects = tally.rejects.sort((a, b) => compareKeys(a.record_id, b.record_id) || compareKeys(a.reason, b.reason) || compareKeys(a.message, b.message));
  const byReason: Record<string, number> = {};
  for (const r of rejects) byReason[r.reason] = (byReason[r.reason] ?? 0) + 1;
  const counts = { in: tally.processed, out: [...validated.values()].reduce((n, v) => n + v.length, 0), rejected: rejects.length, by_reason: byReason };
  const incomplete = tally.transient.size > 0;
  const transientLines = [...tally.transient].sort((a, b) => compareKeys(a.record_id, b.record_id)).map((r) => `${r.reason}: ${r.message}`);
  if (incomplete) {
    log.warn(`${tally.transient.size} record(s) failed for reasons that may not recur; nothing of theirs is cached and the stage will run again next time:`);
    for (const line of transientLines.slice(0, 5)) log.warn(`  ${line}`);
  }
  // Re-read the lock: an earlier stage of this same run may have written it.
  const fresh = store.readLock();
  const kept = fresh.stages[stage.name];
  if (incomplete && !keepGoing && kept) {
    fresh.stages[stage.name] = { ...kept, key: "" };
    log.warn(`the outputs of its last complete run are kept (${relative(process.cwd(), store.artifactPath(stage.name, ""))}*)`);
  } else {
    const outputs: Record<string, string> = {};
    for (const [name, valid] of validated) outputs[name] = await store.writeRecords(stage.name, name, valid);
    outputs[REJECTS] = await store.writeRecords(stage.name, REJECTS, rejects);
    fresh.stages[stage.name] = {
      key: incomplete ? "" : key.key,
      code: key.code,
      config: key.configHash,
      inputs: key.inputHashes,
      files: key.fileHashes,
      outputs,
      published: published.files,
      published_dirs: published.dirs.sort(),
      counts,
      notes: published.notes,
    };
  }
  await store.writeLock(fresh);
  if (rejects.length) log.info(`${rejects.length} record(s) rejected; see ${relative(process.cwd(), store.artifactPath(stage.name, REJECTS))}`);
  return {
    stage: stage.name,
    status: incomplete ? "incomplete" : "ran",
    ...counts,
    reused: tally.reused,
    ...(incomplete ? { transient: transientLines.slice(0, 5) } : {}),
    ...(published.notes.length ? { notes: published.notes } : {}),
    ...(stage.gate?.list && rejects.length ? { listed: rejects.map(listedLine) } : {}),
  };
}
