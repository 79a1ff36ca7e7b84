import type { z } from "zod";
import type { Reject, RejectReason, StageName } from "../schemas/common.ts";
import type { MirrorCache } from "../git.ts";
import type { GithubClientSettings, OpenedGithubClient } from "../github-client.ts";
import type { ExternalFile } from "../decode.ts";
import type { ProfileSet } from "../profiles/load.ts";
import type { TaskResources } from "../profiles/resources.ts";
import type { CheckoutOrigin } from "../checkouts/checkout.ts";
import type { Executor } from "../executors/types.ts";
import type { Logger } from "../logger.ts";
import type { WorkLayout } from "../work-layout.ts";
import type { ExecutionSettings, SessionSettings, SettingName } from "./settings.ts";

/** An artifact a stage writes: a list of records, one JSON object per line, sorted by `key`. */
export interface OutputSpec<T = unknown> {
  name: string;
  schema: z.ZodType<T>;
  /** Records are written sorted by this key, so output order never depends on scheduling. */
  key: (record: T) => string;
}

/**
 * An artifact a stage reads, with the schema its records must satisfy. The engine checks, when the
 * pipeline is built, that an earlier stage writes exactly this artifact with this schema, and
 * hands the stage the validated records as the argument of the same name.
 */
export interface InputSpec<T = unknown> {
  stage: StageName;
  name: string;
  schema: z.ZodType<T>;
}

/** Declares one input of a stage: `input("mine", "candidates", Candidate)`. */
export function input<T>(stage: StageName, name: string, schema: z.ZodType<T>): InputSpec<T> {
  return { stage, name, schema };
}

/** The records a stage receives for its declared inputs, typed by their schemas. */
export type InputRecords<I> = { [K in keyof I]: I[K] extends InputSpec<infer T> ? T[] : never };

export type { ExternalFile } from "../decode.ts";

/**
 * Thrown by a stage for one bad record. The engine records it as a reject with this reason and
 * goes on with the other records.
 */
export class RecordError extends Error {
  constructor(
    readonly reason: RejectReason,
    message: string,
    readonly where: { field?: string; file?: string; line?: number } = {},
    /** False for rejects that may not recur (an infrastructure fault): recorded, but retried next run. */
    readonly cacheable = true,
    /**
     * What the record still produced although it is rejected (an audit record, a validation
     * report): returned by mapRecords and cached with the reject, so nothing is kept on the side.
     */
    readonly partial?: unknown,
  ) {
    super(message);
    this.name = "RecordError";
  }
}

export interface MapOptions<T, R> {
  /** Names the record in rejects and progress. */
  id: (record: T) => string;
  /** Anything besides the record itself that its result depends on (a profile, a file's hash). */
  dependsOn?: (record: T) => unknown;
  concurrency?: number;
  /** Off for work too cheap to be worth a cache file per record. */
  cache?: boolean;
  /** Where the record came from, for rejects (file and line of the input). */
  where?: (record: T) => { file?: string; line?: number };
  work: (record: T) => Promise<R | R[] | undefined> | R | R[] | undefined;
}

export interface StageContext<C> {
  readonly stage: StageName;
  readonly config: C;
  readonly seed: string;
  /** The benchmark's name, from the config. */
  readonly benchmark: string;
  readonly log: Logger;
  /** External files the stage declared, read and hashed by the engine (a directory stands for its files). */
  readonly files: ExternalFile[];
  /** Resolves a path from the config (or from a file the config names) against the config's directory. */
  resolvePath(path: string): string;
  /** Shared bare mirrors of the target repositories, under the work directory; all git work goes through them. */
  readonly mirrors: MirrorCache;
  /**
   * The repository profiles of the pipeline's `profiles_dir` (a stage declaring the `profiles`
   * setting only), read and hashed by the engine; a bad profile is an error for its repository.
   */
  readonly profiles: ProfileSet;
  /** A repository's profile (or the one `unknown_repository` reject) and its mirror at a commit (a stage declaring `profiles` only). */
  readonly resources: TaskResources;
  /** The pipeline's execution settings (a stage declaring `execution` only). */
  readonly execution: ExecutionSettings;
  /** The executor those settings ask for, made once per run by the engine. */
  executor(): Promise<Executor>;
  /** The shape of every session (a stage declaring `session` only). */
  readonly session: SessionSettings;
  /** A scratch directory under the work directory for checkouts; a later run clears what a killed one left. */
  scratchDir(): string;
  /**
   * A fresh checkout of `commit` from a mirror, with `patches` applied in order (PatchDoesNotApply
   * names the one that does not), in the scratch directory; `dispose` removes it.
   */
  checkout(
    mirror: string,
    commit: string,
    patches: { name: string; text: string }[],
  ): Promise<{ dir: string; dispose: () => Promise<void>; origin: CheckoutOrigin }>;
  /**
   * A GitHub client (Octokit with throttling and retry) whose responses are cached, and recorded
   * for offline replay, under the work directory. The token comes from GITHUB_TOKEN or a file.
   */
  github(settings: GithubClientSettings): OpenedGithubClient;
  /**
   * Runs `work` on each record independently: a record that throws becomes a reject and the
   * others go on. Results are cached per record, so an unchanged record does no work again.
   * Everything a record produces must come back through this return value (a record rejected
   * with a RecordError's `partial` included): a cached record's work never runs, so anything
   * a work function collects on the side would be lost on a partly warm run.
   */
  mapRecords<T, R>(records: readonly T[], options: MapOptions<T, R>): Promise<R[]>;
  /**
   * Publishes a whole directory outside the work directory (the emitted benchmark, the auditors'
   * report): the one way a stage writes outside it. `dir` ends up
   * holding exactly `files` (relative path → content), nothing of an earlier run, swapped in
   * atomically; the lock file records every file, so a changed, missing or extra file makes the
   * stage run again.
   */
  publishDirectory(dir: string, files: ReadonlyMap<string, string>): Promise<void>;
  /** Appends a measurement to logs/metrics.jsonl: figures for benchmarks, kept out of artifacts. */
  metric(values: Record<string, unknown>): void;
  /** A line for the run's summary, under the stage's name (a shortfall, what a rule cost, what a model's calls cost); kept with the outputs, so that an up-to-date stage says it again. */
  note(text: string): void;
  /** The work directory's paths, for what a stage keeps between runs beside its records' cache (a model judge's answers). */
  readonly layout: WorkLayout;
  /** Saves a diagnostic log (a failed run's output) as logs/<stage>/<name>.log; returns its path. */
  saveLog(name: string, text: string): Promise<string>;
  /** Records a reject found outside mapRecords (for example a malformed input line). */
  reject(reject: Omit<Reject, "stage">): void;
}

export interface StageDefinition<C = unknown, I extends Record<string, InputSpec<any>> = Record<string, InputSpec<any>>> {
  name: StageName;
  summary: string;
  /** A command line a user can copy, shown in `--help`. */
  example: string;
  /** Bump when the stage's behaviour changes in a way its source hash would not show. */
  version: string;
  /**
   * The module that defines the stage (`import.meta.url`). Its code identity, which joins the
   * cache key, is every file this module reaches through imports (see code-version.ts).
   */
  module: string;
  configSchema: z.ZodType<C>;
  /** Config keys that change how fast the stage runs, not what it produces; kept out of the cache key. */
  volatileConfig?: string[];
  /**
   * What of the config a record's result depends on, where that is less than the whole config
   * (the default): the per-record cache key holds only this, so a change elsewhere (another
   * record listed, another concurrency or wait) reruns the stage but reuses every record.
   */
  recordConfig?: (config: C) => unknown;
  /**
   * Whether the stage draws from the benchmark seed. Only such stages have the seed in their
   * cache key: a new seed redraws sessions without redoing splits or test runs.
   */
  usesSeed?: boolean;
  /**
   * A gate (the oracle, the audit): what it checks is named by `noun`, and every run's summary
   * states how many it rejected, none included; with `list`, each reject too, with its reason.
   */
  gate?: { noun: string; list?: boolean };
  /**
   * The pipeline-level settings the stage uses (docs: the config's top level). Only these are
   * handed to it, and only these join its cache key.
   */
  settings?: readonly SettingName[];
  /** The artifacts it reads, by the name of the argument that receives them. */
  inputs: I;
  outputs: OutputSpec<any>[];
  /**
   * Files outside the work directory the stage reads (a directory stands for its files). A path
   * marked optional may be absent: it is then read as no files, and its absence joins the key,
   * so creating it later runs the stage again.
   */
  externalFiles?: (config: C) => (string | { path: string; optional: true })[];
  /** Command-line options of the stage's own command that set one of its config keys for a run. */
  flags?: StageFlag[];
  run(ctx: StageContext<C>, inputs: InputRecords<I>): Promise<Record<string, unknown[]>>;
}

/** `--runs N` on `switch-swe qualify` sets `stages.qualify.runs` for that run. */
export interface StageFlag {
  flag: string;
  description: string;
  /** The config key (of the stage's section, dotted) the flag sets. */
  key: string;
  parse?: (value: string) => unknown;
  choices?: string[];
}

/** A stage of any config and inputs: what the engine's list of stages holds. */
export type AnyStage = StageDefinition<any, any>;

/** Helps TypeScript infer the config and the inputs' types at the definition site. */
export function defineStage<C, I extends Record<string, InputSpec<any>>>(definition: StageDefinition<C, I>): StageDefinition<C, I> {
  return definition;
}

/** A stage's declared inputs, by argument name. */
export function inputsOf(stage: AnyStage): [string, InputSpec<unknown>][] {
  return Object.entries(stage.inputs as Record<string, InputSpec<unknown>>);
}
