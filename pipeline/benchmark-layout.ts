import { isAbsolute, join, relative, resolve } from "node:path";
import { z } from "zod";

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

/** The files of the released directory, by their path inside it: what emit publishes there. */
export const RELEASED = {
  /** One line per task the benchmark uses (SPEC §2.10). */
  manifest: "manifest.jsonl",
  /** The sessions' directory, its list of sessions (the fixed denominators) and one file per session. */
  sessions: "sessions",
  sessionIndex: "sessions/index.json",
  session: (sessionId: string) => `sessions/${RELEASED.sessionFileName(sessionId)}`,
  /** A session's file as the list names it: relative to the sessions' directory. */
  sessionFileName: (sessionId: string) => `${sessionId}.json`,
  /** The CSV tables (sessions, tasks, locality_pairs, requests). */
  table: (name: string) => `tables/${name}.csv`,
  profileJson: "profile.json",
  profileCsv: "profile.csv",
  /** The JSON Schemas of the artifacts users in other languages read. */
  schema: (fileName: string) => `schema/${fileName}`,
} as const;

/**
 * Every path of an emitted benchmark, named once. emit writes it, and verify, session run and
 * run-all, report and the scripted model endpoint read it: they ask this for the path, no other
 * module spells a file of it (test/pipeline/architecture.test.ts looks for spellings elsewhere).
 *
 *   <out_dir>/manifest.jsonl            the tasks the benchmark uses
 *   <out_dir>/sessions/index.json       the sessions, the fixed denominators of report
 *   <out_dir>/sessions/<session>.json   each session's specification
 *   <out_dir>/tables/<name>.csv         sessions, tasks, locality_pairs, requests
 *   <out_dir>/profile.json, profile.csv the benchmark's profile
 *   <out_dir>/schema/<name>.schema.json the artifacts' JSON Schemas
 *   <heldout_dir>/<task>.json           each task's held-out verifier assets
 */
export class BenchmarkLayout {
  readonly outDir: string;
  readonly heldoutDir: string;

  constructor(outDir: string, heldoutDir: string) {
    this.outDir = resolve(outDir);
    this.heldoutDir = resolve(heldoutDir);
  }

  /** The layout a config's emit section names (relative to the config's directory); `heldoutDir` given on a command line wins. */
  static of(baseDir: string, locations: BenchmarkLocations, heldoutDir?: string): BenchmarkLayout {
    return new BenchmarkLayout(resolve(baseDir, locations.out_dir), heldoutDir ? resolve(heldoutDir) : resolve(baseDir, locations.heldout_dir));
  }

  /** The same benchmark's released files read from another directory (`run-all --manifest DIR`), its held-out assets where they were. */
  releasedAt(outDir: string): BenchmarkLayout {
    return new BenchmarkLayout(outDir, this.heldoutDir);
  }

  get manifest(): string {
    return join(this.outDir, RELEASED.manifest);
  }

  get sessionsDir(): string {
    return join(this.outDir, RELEASED.sessions);
  }

  get sessionIndex(): string {
    return BenchmarkLayout.sessionIndexIn(this.sessionsDir);
  }

  /** The list of sessions in a sessions directory given on its own (`report --sessions DIR`). */
  static sessionIndexIn(sessionsDir: string): string {
    return join(sessionsDir, RELEASED.sessionIndex.slice(RELEASED.sessions.length + 1));
  }

  /** A session's file, by the name the list gives it. */
  sessionFile(listedFile: string): string {
    return join(this.sessionsDir, listedFile);
  }

  /** A task's held-out asset. */
  heldout(taskId: string): string {
    return join(this.heldoutDir, BenchmarkLayout.heldoutFileName(taskId));
  }

  static heldoutFileName(taskId: string): string {
    return `${taskId}.json`;
  }

  /**
   * Where the held-out assets go inside the released directory (relative to it: emit publishes
   * them in its one swap), or undefined when heldout_dir lies outside it (a directory of its own).
   */
  get heldoutInsideRelease(): string | undefined {
    const inside = relative(this.outDir, this.heldoutDir);
    return inside.startsWith("..") || isAbsolute(inside) ? undefined : inside;
  }
}
