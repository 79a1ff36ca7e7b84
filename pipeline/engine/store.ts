import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../atomic.ts";
import { canonicalJson, sha256 } from "../canonical.ts";
import { StageName } from "../schemas/common.ts";
import { WorkLayout } from "../work-layout.ts";

export const LockEntry = z.object({
  key: z.string(),
  code: z.string(),
  config: z.string(),
  inputs: z.record(z.string(), z.string()),
  files: z.record(z.string(), z.string()),
  outputs: z.record(z.string(), z.string()),
  /** Report files published outside the work directory, by path relative to the config file. */
  published: z.record(z.string(), z.string()).default({}),
  /** Directories published whole (replaced atomically), by path relative to the config file. */
  published_dirs: z.array(z.string()).default([]),
  counts: z.object({ in: z.number(), out: z.number(), rejected: z.number(), by_reason: z.record(z.string(), z.number()).default({}) }),
  /** What the stage said of its run for the run's summary (a model's cost, say), repeated while it is up to date. */
  notes: z.array(z.string()).default([]),
});
export type LockEntry = z.infer<typeof LockEntry>;

/** Which inputs produced which outputs, like DVC's lock file; the engine skips stages whose entry still matches. */
export const LockFile = z.object({
  version: z.literal(1),
  stages: z.partialRecord(StageName, LockEntry),
});
export type LockFile = z.infer<typeof LockFile>;

/** The work directory: artifacts, the per-record cache and the lock file. All writes are atomic. */
export class ArtifactStore {
  readonly layout: WorkLayout;

  constructor(root: string | WorkLayout) {
    this.layout = typeof root === "string" ? new WorkLayout(root) : root;
  }

  get root(): string {
    return this.layout.root;
  }

  get lockPath(): string {
    return this.layout.lockFile;
  }

  artifactPath(stage: StageName, name: string): string {
    return this.layout.artifact(stage, name);
  }

  readLock(): LockFile {
    if (!existsSync(this.lockPath)) return { version: 1, stages: {} };
    const parsed = LockFile.safeParse(JSON.parse(readFileSync(this.lockPath, "utf8")));
    // A lock file from another version is not trusted: everything reruns, nothing is lost.
    return parsed.success ? parsed.data : { version: 1, stages: {} };
  }

  async writeLock(lock: LockFile): Promise<void> {
    await writeFileAtomic(this.lockPath, canonicalJson(lock, 2) + "\n");
  }

  /** Appends a stage's measurement to the metrics stream: figures for benchmarks (fidelity, bench/), kept out of artifacts and of every cache key. */
  appendMetric(stage: StageName, values: Record<string, unknown>): void {
    const file = this.layout.metrics;
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, JSON.stringify({ stage, ...values }) + "\n");
  }

  /** Every measurement appended since the stream was last emptied, oldest first. */
  readMetrics(): ({ stage: StageName } & Record<string, unknown>)[] {
    if (!existsSync(this.layout.metrics)) return [];
    return readFileSync(this.layout.metrics, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { stage: StageName } & Record<string, unknown>);
  }

  /** Empties the metrics stream, so that what a measurement reads afterwards is its own run's. */
  clearMetrics(): void {
    mkdirSync(dirname(this.layout.metrics), { recursive: true });
    writeFileSync(this.layout.metrics, "");
  }

  /** Writes records as canonical JSON lines and returns the file's sha256. */
  async writeRecords(stage: StageName, name: string, records: readonly unknown[]): Promise<string> {
    const lines = records.map((r) => canonicalJson(r) + "\n");
    const text = lines.join("");
    await writeFileAtomic(this.artifactPath(stage, name), text);
    return sha256(text);
  }

  async readRecords(stage: StageName, name: string): Promise<{ records: unknown[]; sha256: string }> {
    const text = await readFile(this.artifactPath(stage, name), "utf8");
    const records = text
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as unknown);
    return { records, sha256: sha256(text) };
  }

  hashArtifact(stage: StageName, name: string): string | undefined {
    const path = this.artifactPath(stage, name);
    if (!existsSync(path)) return undefined;
    return sha256(readFileSync(path));
  }

  private cachePath(stage: StageName, key: string): string {
    return this.layout.recordCache(stage, key);
  }

  async readRecordCache(stage: StageName, key: string): Promise<unknown | undefined> {
    const path = this.cachePath(stage, key);
    if (!existsSync(path)) return undefined;
    try {
      return JSON.parse(await readFile(path, "utf8"));
    } catch {
      return undefined; // unreadable cache entries are simply recomputed
    }
  }

  async writeRecordCache(stage: StageName, key: string, value: unknown): Promise<void> {
    const path = this.cachePath(stage, key);
    await mkdir(dirname(path), { recursive: true });
    await writeFileAtomic(path, canonicalJson(value));
  }
}
