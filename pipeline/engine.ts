import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { z } from "zod";
import { listTree, PUBLISH_MARKER, recoverPublishedDirectory, removeStaleTempFiles, replaceDirectoryAtomic, writeFileAtomic } from "./atomic.ts";
import { hashValue, sha256 } from "./canonical.ts";
import { codeVersion } from "./code-version.ts";
import { acquireRunLock, removeLeftovers, RunLockError } from "./leftovers.ts";
import { decodeStrict } from "./decode.ts";
import { transientCause } from "./failures.ts";
import { describeFirstIssue, firstIssue } from "./validation.ts";
import { MirrorCache } from "./git.ts";
import { createGithubClient, readToken } from "./github-client.ts";
import type { Logger } from "./logger.ts";
import type { Progress } from "./progress.ts";
import { Reject, STAGE_ORDER, type StageName } from "./schemas/common.ts";
import type { ExternalFile, InputRef, MapOptions, StageContext, StageDefinition } from "./stage.ts";
import { RecordError } from "./stage.ts";
import { ArtifactStore, type LockEntry } from "./store.ts";

export interface EngineOptions {
  workDir: string;
  /** Relative paths in stage configs are resolved against this (the config file's directory). */
  baseDir: string;
  stages: StageDefinition<any>[];
  /** Raw per-stage config, validated here by each stage's schema. */
  stageConfigs: Partial<Record<StageName, unknown>>;
  seed: string;
  /** The benchmark's name (the config's `name`). */
  name?: string;
  log: Logger;
  progress: Progress;
}

export interface RunOptions {
  force?: boolean;
  /**
   * Run later stages even after a stage had transient failures. Off by default: a stage that
   * could not do all its work must not let later stages publish a smaller benchmark over a good one.
   */
  keepGoing?: boolean;
  /** Run every stage, forcing this one and all after it. */
  from?: StageName;
  /** Run this stage alone, from the artifacts already in the work directory. */
  only?: StageName;
}

/** `incomplete`: the stage ran, but some records failed for reasons that may not recur (see failures.ts). */
export type StageStatus = "ran" | "incomplete" | "up_to_date" | "failed" | "not_built";

export interface StageSummary {
  stage: StageName;
  status: StageStatus;
  in: number;
  out: number;
  rejected: number;
  /** Rejects counted by reason, for the run's summary. */
  by_reason?: Record<string, number>;
  /** Set for a gate stage: what it checks, so the summary states its verdict even with no rejects. */
  gate?: string;
  seconds: number;
  /** Records whose cached result was reused inside a stage that ran. */
  reused: number;
  /** The first few transient failures of an incomplete stage, for the summary. */
  transient?: string[];
  error?: string;
}

export interface RunSummary {
  ok: boolean;
  stages: StageSummary[];
}

export class PipelineError extends Error {
  override name = "PipelineError";
}

const REJECTS = "rejects";
/** Reasons that a stage reports through ctx.reject for failures that may not recur. */
const TRANSIENT_REASONS: ReadonlySet<string> = new Set(["internal_error", "infrastructure_fault", "transient_failure"]);

/** The stage graph, in SPEC §2 order; unknown or duplicate stages are a programming error. */
export function orderStages(stages: StageDefinition<any>[]): StageDefinition<any>[] {
  const byName = new Map(stages.map((s) => [s.name, s]));
  if (byName.size !== stages.length) throw new PipelineError("a stage is registered twice");
  return STAGE_ORDER.flatMap((name) => (byName.has(name) ? [byName.get(name)!] : []));
}

export async function runPipeline(options: EngineOptions, runOptions: RunOptions = {}): Promise<RunSummary> {
  const store = new ArtifactStore(options.workDir);
  let release: () => void;
  try {
    release = acquireRunLock(options.workDir);
  } catch (error) {
    if (error instanceof RunLockError) throw new PipelineError(error.message);
    throw error;
  }
  try {
    const leftovers = await removeLeftovers(options.workDir, options.log);
    if (leftovers.length) options.log.info(`removed what an interrupted run left behind: ${leftovers.join(", ")}`);
    let removed = removeStaleTempFiles(options.workDir);
    for (const entry of Object.values(store.readLock().stages)) {
      for (const dir of entry?.published_dirs ?? []) removed += recoverPublishedDirectory(resolve(options.baseDir, dir)) + removeStaleTempFiles(resolve(options.baseDir, dir));
    }
    if (removed) options.log.info(`removed ${removed} temporary file(s) left by an interrupted run`);
    return await runStages(store, options, runOptions);
  } finally {
    release();
  }
}

async function runStages(store: ArtifactStore, options: EngineOptions, runOptions: RunOptions): Promise<RunSummary> {
  const stages = orderStages(options.stages);
  const built = new Set(stages.map((s) => s.name));
  const summaries: StageSummary[] = [];
  const forceFromIndex = runOptions.from ? STAGE_ORDER.indexOf(runOptions.from) : Infinity;
  if (runOptions.only && !built.has(runOptions.only)) {
    throw new PipelineError(`stage '${runOptions.only}' is not built in this version of switch-swe`);
  }
  if (runOptions.from && !built.has(runOptions.from)) {
    throw new PipelineError(`stage '${runOptions.from}' is not built in this version of switch-swe`);
  }

  let failed = false;
  let stopped = false;
  for (const name of STAGE_ORDER) {
    const stage = stages.find((s) => s.name === name);
    if (runOptions.only && runOptions.only !== name) continue;
    if (!stage) {
      if (!runOptions.only) summaries.push(emptySummary(name, "not_built"));
      continue;
    }
    if (stopped) break;
    const force = Boolean(runOptions.force) || STAGE_ORDER.indexOf(name) >= forceFromIndex;
    const started = performance.now();
    try {
      const summary = await runStage(store, options, stage, force, Boolean(runOptions.keepGoing));
      summaries.push({ ...summary, seconds: (performance.now() - started) / 1000, ...(stage.gate ? { gate: stage.gate.noun } : {}) });
      if (summary.status === "incomplete") {
        failed = true;
        if (!runOptions.keepGoing) {
          stopped = true;
          options.log.warn(`${name}: stopping here; later stages keep the outputs of their last complete run (run again once the cause is gone, or pass --keep-going)`);
        }
      }
    } catch (error) {
      stopped = true;
      failed = true;
      const message = error instanceof Error ? error.message : String(error);
      options.log.error(`${name}: ${message}`);
      summaries.push({ ...emptySummary(name, "failed"), seconds: (performance.now() - started) / 1000, error: message });
    }
  }
  return { ok: !failed, stages: summaries };
}

function emptySummary(stage: StageName, status: StageStatus): StageSummary {
  return { stage, status, in: 0, out: 0, rejected: 0, seconds: 0, reused: 0 };
}

/** A stage's section of the config, validated; an error names the key. Commands outside a run use it too. */
export function parseStageConfig<C>(stage: StageDefinition<C>, raw: unknown): C {
  const parsed = stage.configSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = firstIssue(parsed.error, raw ?? {});
    throw new PipelineError(`config key ${["stages", stage.name, issue.field].filter(Boolean).join(".")}: ${issue.message}`);
  }
  return parsed.data;
}

/** An input file as the engine read it: decoded for the stage, hashed as bytes for the cache key. */
type ReadFile = ExternalFile & { bytesSha256: string };

async function readExternalFiles(options: EngineOptions, paths: string[]): Promise<ReadFile[]> {
  const files: ReadFile[] = [];
  for (const path of [...new Set(paths)].sort()) {
    const absolute = resolve(options.baseDir, path);
    if (!existsSync(absolute)) throw new PipelineError(`input file not found: ${path} (resolved to ${absolute})`);
    const read = async (file: string, as: string): Promise<ReadFile> => {
      const bytes = await readFile(file);
      const { text, invalid } = decodeStrict(bytes);
      return { path: as, text, ...(invalid.length ? { invalid } : {}), bytesSha256: sha256(bytes) };
    };
    if (statSync(absolute).isDirectory()) {
      for (const name of (await readdir(absolute)).sort()) {
        if (statSync(join(absolute, name)).isFile()) files.push(await read(join(absolute, name), join(path, name)));
      }
    } else files.push(await read(absolute, path));
  }
  return files;
}

function outputsIntact(store: ArtifactStore, stage: StageDefinition<any>, entry: LockEntry, baseDir: string): boolean {
  for (const name of [...stage.outputs.map((o) => o.name), REJECTS]) {
    if (store.hashArtifact(stage.name, name) !== entry.outputs[name]) return false;
  }
  for (const [path, hash] of Object.entries(entry.published)) {
    const absolute = resolve(baseDir, path);
    if (!existsSync(absolute) || sha256(readFileSync(absolute)) !== hash) return false;
  }
  // A published directory holds exactly what was published: an extra file is a change too.
  for (const dir of entry.published_dirs) {
    const expected = Object.keys(entry.published).filter((p) => p.startsWith(`${dir}/`)).map((p) => p.slice(dir.length + 1)).sort();
    const actual = listTree(resolve(baseDir, dir)).filter((p) => p !== PUBLISH_MARKER);
    if (actual.join("\0") !== expected.join("\0")) return false;
  }
  return true;
}

async function runStage(
  store: ArtifactStore,
  options: EngineOptions,
  stage: StageDefinition<any>,
  force: boolean,
  keepGoing = false,
): Promise<Omit<StageSummary, "seconds">> {
  const log = options.log.child(stage.name);
  const config = parseStageConfig(stage, options.stageConfigs[stage.name]);
  const configHash = hashValue(Object.fromEntries(Object.entries(config as Record<string, unknown>).filter(([key]) => !stage.volatileConfig?.includes(key))));
  const code = codeVersion(stage.version, stage.module);

  const lock = store.readLock();
  const inputHashes: Record<string, string> = {};
  for (const ref of stage.inputs) {
    const hash = store.hashArtifact(ref.stage, ref.name);
    if (hash === undefined || !lock.stages[ref.stage]) {
      throw new PipelineError(`input ${ref.stage}/${ref.name} is missing: run stage '${ref.stage}' first`);
    }
    inputHashes[`${ref.stage}/${ref.name}`] = hash;
  }
  const files = await readExternalFiles(options, stage.externalFiles?.(config) ?? []);
  // Hashes of the bytes on disk: an edit that decoding would hide (an invalid byte) is still a change.
  const fileHashes = Object.fromEntries(files.map((f) => [f.path, f.bytesSha256]));
  const seedKey = stage.usesSeed ? options.seed : null;
  const key = hashValue({ stage: stage.name, code, config: configHash, inputs: inputHashes, files: fileHashes, seed: seedKey });

  const previous = lock.stages[stage.name];
  if (!force && previous && previous.key === key && outputsIntact(store, stage, previous, options.baseDir)) {
    log.info("up to date: inputs, config and code unchanged; no work done");
    return { stage: stage.name, status: "up_to_date", ...previous.counts, reused: previous.counts.in };
  }

  const inputs = new Map<string, unknown[]>();
  for (const ref of stage.inputs) {
    inputs.set(`${ref.stage}/${ref.name}`, await readValidatedInput(store, options.stages, ref));
  }

  const rejects: Reject[] = [];
  /** Rejects that may not recur: they make the stage incomplete instead of being results. */
  const transient = new Set<Reject>();
  const published: Record<string, string> = {};
  const publishedDirs: string[] = [];
  let processed = 0;
  let reused = 0;
  const seenIds = new Set<string>();
  const ctx: StageContext<unknown> = {
    stage: stage.name,
    config,
    seed: options.seed,
    benchmark: options.name ?? "benchmark",
    log,
    files,
    mirrors: new MirrorCache(join(options.workDir, "git")),
    resolvePath: (path) => resolve(options.baseDir, path),
    workPath: (name) => join(options.workDir, name),
    publish: async (path, content) => {
      const absolute = resolve(options.baseDir, path);
      await writeFileAtomic(absolute, content);
      published[relative(options.baseDir, absolute)] = sha256(content);
    },
    publishDirectory: async (dir, files) => {
      const absolute = resolve(options.baseDir, dir);
      const rel = relative(options.baseDir, absolute);
      // Only what an earlier run of this stage published there may be replaced.
      const before = new Set(Object.keys(previous?.published ?? {}).filter((p) => p.startsWith(`${rel}/`)).map((p) => p.slice(rel.length + 1)));
      await replaceDirectoryAtomic(absolute, files, (existing) => existing.every((p) => before.has(p)));
      for (const [path, content] of files) published[`${rel}/${path}`] = sha256(content);
      publishedDirs.push(rel);
    },
    metric: (values) => {
      mkdirSync(join(options.workDir, "logs"), { recursive: true });
      appendFileSync(join(options.workDir, "logs", "metrics.jsonl"), JSON.stringify({ stage: stage.name, ...values }) + "\n");
    },
    github: ({ baseUrl, offline, tokenFile, waitUnitMs }) => {
      const token = readToken(process.env, tokenFile ? resolve(options.baseDir, tokenFile) : undefined);
      const cacheDir = join(options.workDir, "http-cache", new URL(baseUrl).hostname.replace(/[^\w.-]/g, "_"));
      return { ...createGithubClient({ baseUrl, token, cacheDir, offline, log, waitUnitMs }), token };
    },
    input<T>(ref: InputRef): T[] {
      const records = inputs.get(`${ref.stage}/${ref.name}`);
      if (!records) throw new PipelineError(`stage ${stage.name} did not declare input ${ref.stage}/${ref.name}`);
      return records as T[];
    },
    reject(reject) {
      // A record already counted by mapRecords (rejected after its work) is not counted twice.
      if (!seenIds.has(reject.record_id)) processed++;
      const parsed = Reject.parse({ ...reject, stage: stage.name });
      rejects.push(parsed);
      if (TRANSIENT_REASONS.has(parsed.reason)) transient.add(parsed);
    },
    async mapRecords<T, R>(records: readonly T[], map: MapOptions<T, R>): Promise<R[]> {
      options.progress.start(stage.name, records.length);
      const results: R[][] = new Array(records.length);
      const recordRejects: (Reject | undefined)[] = new Array(records.length);
      let next = 0;
      const worker = async () => {
        while (next < records.length) {
          const index = next++;
          const record = records[index]!;
          const id = map.id(record);
          seenIds.add(id);
          const cacheKey = hashValue({ stage: stage.name, code, config: configHash, seed: seedKey, record, dependsOn: map.dependsOn?.(record) ?? null });
          const useCache = map.cache !== false;
          const cached = force || !useCache ? undefined : ((await store.readRecordCache(stage.name, cacheKey)) as CachedRecord<R> | undefined);
          if (cached) {
            reused++;
            results[index] = cached.results;
            recordRejects[index] = cached.reject;
          } else {
            const outcome = await runRecord(stage.name, id, record, map);
            results[index] = outcome.results;
            recordRejects[index] = outcome.reject;
            if (!outcome.cacheable && outcome.reject) transient.add(outcome.reject);
            if (outcome.cacheable && useCache) await store.writeRecordCache(stage.name, cacheKey, { results: outcome.results, reject: outcome.reject });
          }
          processed++;
          options.progress.tick(id);
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, map.concurrency ?? 1) }, worker));
      options.progress.done();
      for (const reject of recordRejects) if (reject) rejects.push(reject);
      return results.flat();
    },
  };

  const produced = await stage.run(ctx);
  const validated = new Map<string, unknown[]>();
  let out = 0;
  for (const spec of stage.outputs) {
    const records = produced[spec.name];
    if (!records) throw new PipelineError(`stage ${stage.name} produced no '${spec.name}' output`);
    const valid: unknown[] = [];
    for (const record of records) {
      const parsed = spec.schema.safeParse(record);
      if (parsed.success) valid.push(parsed.data);
      else {
        // A record the stage built wrongly is a stage bug; it is rejected by name, the rest is written.
        const issue = firstIssue(parsed.error, record);
        const id = safeKey(spec, record);
        const bug: Reject = { stage: stage.name, record_id: id, reason: "internal_error", field: issue.field, message: `output ${spec.name} record ${id}: ${describeFirstIssue(parsed.error, record)}` };
        rejects.push(bug);
        transient.add(bug);
      }
    }
    valid.sort((a, b) => compareKeys(spec.key(a), spec.key(b)));
    const duplicate = valid.find((r, i) => i > 0 && spec.key(r) === spec.key(valid[i - 1]));
    if (duplicate) throw new PipelineError(`stage ${stage.name} produced two '${spec.name}' records with key ${spec.key(duplicate)}`);
    validated.set(spec.name, valid);
    out += valid.length;
  }
  rejects.sort((a, b) => compareKeys(a.record_id, b.record_id) || compareKeys(a.reason, b.reason) || compareKeys(a.message, b.message));
  const byReason: Record<string, number> = {};
  for (const r of rejects) byReason[r.reason] = (byReason[r.reason] ?? 0) + 1;
  const counts = { in: processed, out, rejected: rejects.length, by_reason: byReason };

  // Rejects that may not recur (a bug, a full disk, an engine or network failure) leave the stage
  // incomplete: the next run does it again instead of calling it up to date, and the run stops
  // before any later stage builds on it. Its partial outputs replace the last complete ones only
  // with --keep-going (or when there are none): nothing good is lost to a passing fault.
  const incomplete = transient.size > 0;
  const transientLines = [...transient].sort((a, b) => compareKeys(a.record_id, b.record_id)).map((r) => `${r.reason}: ${r.message}`);
  if (incomplete) {
    log.warn(`${transient.size} record(s) failed for reasons that may not recur; nothing of theirs is cached and the stage will run again next time:`);
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
    fresh.stages[stage.name] = { key: incomplete ? "" : key, code, config: configHash, inputs: inputHashes, files: fileHashes, outputs, published, published_dirs: publishedDirs.sort(), counts };
  }
  await store.writeLock(fresh);
  if (rejects.length) log.info(`${rejects.length} record(s) rejected; see ${relative(process.cwd(), store.artifactPath(stage.name, REJECTS))}`);
  return { stage: stage.name, status: incomplete ? "incomplete" : "ran", ...counts, reused, ...(incomplete ? { transient: transientLines.slice(0, 5) } : {}) };
}

interface CachedRecord<R> {
  results: R[];
  reject?: Reject;
}

async function runRecord<T, R>(stage: StageName, id: string, record: T, map: MapOptions<T, R>): Promise<CachedRecord<R> & { cacheable: boolean }> {
  try {
    const value = await map.work(record);
    const results = value === undefined ? [] : Array.isArray(value) ? value : [value];
    return { results, cacheable: true };
  } catch (error) {
    const where = map.where?.(record) ?? {};
    if (error instanceof RecordError) {
      const reject = Reject.parse({ stage, record_id: id, reason: error.reason, message: error.message, ...where, ...error.where });
      const partial = error.partial === undefined ? [] : [error.partial as R];
      return { results: partial, reject, cacheable: error.cacheable };
    }
    const cause = transientCause(error);
    if (cause !== undefined) return { results: [], reject: { stage, record_id: id, reason: "transient_failure", message: `${id}: ${cause}`, ...where }, cacheable: false };
    const message = error instanceof Error ? error.message : String(error);
    // Unexpected errors are not cached either: a bug that a fix should retry.
    return { results: [], reject: { stage, record_id: id, reason: "internal_error", message: `${id}: ${message}`, ...where }, cacheable: false };
  }
}

function safeKey(spec: { key: (r: any) => string }, record: unknown): string {
  try {
    return String(spec.key(record));
  } catch {
    return "(unknown)";
  }
}

/** Plain code-unit order, independent of the machine's locale. */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

async function readValidatedInput(store: ArtifactStore, stages: StageDefinition<any>[], ref: InputRef): Promise<unknown[]> {
  const producer = stages.find((s) => s.name === ref.stage);
  const spec = producer?.outputs.find((o) => o.name === ref.name);
  const { records } = await store.readRecords(ref.stage, ref.name);
  if (!spec) return records;
  const schema = spec.schema as z.ZodType<unknown>;
  return records.map((record, index) => {
    const parsed = schema.safeParse(record);
    if (!parsed.success) {
      throw new PipelineError(`${store.artifactPath(ref.stage, ref.name)} line ${index + 1}: ${describeFirstIssue(parsed.error, record)}`);
    }
    return parsed.data;
  });
}

export function formatSummary(summary: RunSummary): string {
  const rows = [["stage", "status", "in", "out", "rejected", "reused", "time"]];
  for (const s of summary.stages) {
    rows.push([s.stage, s.status.replaceAll("_", " "), String(s.in), String(s.out), String(s.rejected), String(s.reused), `${s.seconds.toFixed(2)}s`]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const table = rows.map((r) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")).join("\n");
  // What could not be done this time, first: these stages run again next time.
  const unfinished = summary.stages.filter((s) => s.status === "incomplete" || s.status === "failed").map((s) =>
    s.status === "failed"
      ? `  ${s.stage}: failed: ${s.error}`
      : [`  ${s.stage}: records failed for reasons that may not recur (nothing of theirs was cached):`, ...(s.transient ?? []).map((t) => `    ${t}`)].join("\n"),
  );
  // Why records left, stage by stage; a gate's verdict is always stated, rejects or not.
  const reasons = summary.stages
    .filter((s) => s.rejected > 0 || (s.gate && (s.status === "ran" || s.status === "incomplete" || s.status === "up_to_date")))
    .map((s) => {
      const list = Object.entries(s.by_reason ?? {}).sort(([a], [b]) => (a < b ? -1 : 1)).map(([reason, n]) => `${reason} ${n}`).join(", ");
      return s.gate ? `${s.stage}: ${s.rejected} of ${s.in} ${s.gate} rejected${list ? ` (${list})` : ""}` : `${s.stage}: ${s.rejected} rejected (${list || "see its rejects.jsonl"})`;
    });
  const sections = [table];
  if (unfinished.length) sections.push(`not finished (the run exits non-zero; run it again once the cause is gone):\n${unfinished.join("\n")}`);
  if (reasons.length) sections.push(`rejects by reason:\n${reasons.map((l) => `  ${l}`).join("\n")}`);
  return sections.join("\n\n");
}

