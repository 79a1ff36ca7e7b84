import { hashValue } from "../canonical.ts";
import { RunAbort, transientCause } from "../failures.ts";
import { CommitNotInSource, IncompleteSource } from "../git.ts";
import { RetriesExhausted } from "../executors/retries.ts";
import type { Progress } from "../progress.ts";
import { Reject, type StageName } from "../schemas/common.ts";
import { RecordError, type MapOptions } from "./stage.ts";
import { UnknownRepository } from "../profiles/resources.ts";
import { EnvironmentError } from "../profiles/environments.ts";
import type { ArtifactStore } from "./store.ts";

interface CachedRecord<R> {
  results: R[];
  reject?: Reject;
}

/** What a stage's mapRecords calls found, for the stage's summary and its lock entry. */
export class RecordTally {
  processed = 0;
  reused = 0;
  readonly seenIds = new Set<string>();
  readonly rejects: Reject[] = [];
  /** Lines for the run's summary (ctx.note). */
  readonly notes: string[] = [];
  /** Rejects that may not recur: they make the stage incomplete instead of being results. */
  readonly transient = new Set<Reject>();
}

export interface RecordMapContext {
  stage: StageName;
  store: ArtifactStore;
  progress: Progress;
  /** Everything besides the record that a cached result depends on: code, config, settings, seed. */
  keyBase: unknown;
  force: boolean;
  tally: RecordTally;
}

/**
 * Runs `work` on every record, `concurrency` at a time, each independently: a record that throws
 * becomes a reject and the others go on. A record whose inputs did not change reuses its cached
 * results (and its cached deterministic reject); a transient failure or a bug is never cached.
 */
export async function mapRecords<T, R>(ctx: RecordMapContext, records: readonly T[], map: MapOptions<T, R>): Promise<R[]> {
  const { store, tally } = ctx;
  ctx.progress.start(ctx.stage, records.length);
  const results: R[][] = new Array(records.length);
  const recordRejects: (Reject | undefined)[] = new Array(records.length);
  let next = 0;
  const worker = async () => {
    while (next < records.length) {
      const index = next++;
      const record = records[index]!;
      const id = map.id(record);
      tally.seenIds.add(id);
      const cacheKey = hashValue({ stage: ctx.stage, base: ctx.keyBase, record, dependsOn: map.dependsOn?.(record) ?? null });
      const useCache = map.cache !== false;
      const cached = ctx.force || !useCache ? undefined : ((await store.readRecordCache(ctx.stage, cacheKey)) as CachedRecord<R> | undefined);
      // An incomplete source is looked at again on every run (see factReject); one cached by an older switch-swe too.
      if (cached && cached.reject?.reason !== "incomplete_source") {
        tally.reused++;
        results[index] = cached.results;
        recordRejects[index] = cached.reject;
      } else {
        const outcome = await runRecord(ctx.stage, id, record, map);
        if (outcome.abort) {
          // No record can proceed: the ones not started are left for the next run, and said so.
          const left = records.length - next;
          next = records.length;
          if (outcome.reject) outcome.reject.message += left ? ` (the stage stopped: ${left} record(s) not started)` : "";
        }
        results[index] = outcome.results;
        recordRejects[index] = outcome.reject;
        if (!outcome.cacheable && outcome.reject && !outcome.recheck) tally.transient.add(outcome.reject);
        if (outcome.cacheable && useCache) await store.writeRecordCache(ctx.stage, cacheKey, { results: outcome.results, reject: outcome.reject });
      }
      tally.processed++;
      ctx.progress.tick(id);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, map.concurrency ?? 1) }, worker));
  ctx.progress.done();
  for (const reject of recordRejects) if (reject) tally.rejects.push(reject);
  return results.flat();
}

async function runRecord<T, R>(
  stage: StageName,
  id: string,
  record: T,
  map: MapOptions<T, R>,
): Promise<CachedRecord<R> & { cacheable: boolean; abort?: boolean; recheck?: boolean }> {
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
    // A transient failure that outlived its retries: rejected for now, never cached.
    if (error instanceof RetriesExhausted)
      return {
        results: [],
        reject: Reject.parse({
          stage,
          record_id: id,
          reason: error.reason,
          message: error.message.startsWith(id) ? error.message : `${id}: ${error.message}`,
          ...where,
        }),
        cacheable: false,
      };
    const fact = factReject(error, id);
    if (fact) {
      // A source lacking file contents is completed by hand (switch-swe mirrors complete), which no
      // input of the stage shows, and is found again at the cost of one checkout: not cached.
      const recheck = error instanceof IncompleteSource;
      return { results: [], reject: Reject.parse({ stage, record_id: id, ...where, ...fact }), cacheable: !recheck, recheck };
    }
    if (error instanceof RunAbort)
      return {
        results: [],
        reject: { stage, record_id: id, reason: "transient_failure", message: `${id}: ${error.message}`, ...where },
        cacheable: false,
        abort: true,
      };
    const cause = transientCause(error);
    if (cause !== undefined)
      return { results: [], reject: { stage, record_id: id, reason: "transient_failure", message: `${id}: ${cause}`, ...where }, cacheable: false };
    const message = error instanceof Error ? error.message : String(error);
    // Unexpected errors are not cached either: a bug that a fix should retry.
    return { results: [], reject: { stage, record_id: id, reason: "internal_error", message: `${id}: ${message}`, ...where }, cacheable: false };
  }
}

/**
 * A fact about the record's repository, not a bug: no profile, no environment, a commit its clone
 * source does not have, or file contents it lacks. Remembered (cached) like any reject, but for the
 * contents, which are looked at again; the message says what to do.
 */
function factReject(error: unknown, id: string): { reason: Reject["reason"]; message: string; field?: string } | undefined {
  if (error instanceof UnknownRepository) return { reason: error.reason, message: `${id}: field ${error.field}: ${error.message}`, field: error.field };
  if (error instanceof EnvironmentError) return { reason: error.reason, message: `${id}: ${error.message}`, field: error.field };
  if (error instanceof IncompleteSource)
    return {
      reason: "incomplete_source",
      message: `${id}: ${error.message} (looked at again on every run: complete it, from a release's archive with 'switch-swe mirrors complete', and run again)`,
    };
  if (error instanceof CommitNotInSource)
    return {
      reason: "commits_not_in_git",
      message: `${id}: ${error.message} (a fact about the source's history, remembered: after updating the source, run again with --force)`,
    };
  return undefined;
}
