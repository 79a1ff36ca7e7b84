import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { writeFileAtomic } from "../atomic.ts";
import { baseRevision, freshCheckout } from "../checkouts/checkout.ts";
import { createExecutor } from "../executors/index.ts";
import type { Executor } from "../executors/types.ts";
import { writingTo } from "../failures.ts";
import { MirrorCache } from "../git.ts";
import type { Logger } from "../logger.ts";
import type { ExecutionSettings } from "./settings.ts";

/**
 * The one owner of a work directory: its mirrors (`git/`), scratch checkouts (`scratch/`), logs
 * (`logs/`), environments (`envs/`, through the executor) and the executor itself, made on first
 * use from the execution settings and closed with the workspace. The engine builds every stage's
 * context from one; every command that works outside a run (qualify --task, verify, session run
 * and run-all, fidelity, repo check, requalify) opens the same. A write it makes that meets a
 * full disk says so naming the path (NoSpaceLeft), the one way the project says it.
 */
export class Workspace {
  readonly dir: string;
  readonly mirrors: MirrorCache;
  private made?: Promise<Executor>;

  private constructor(
    dir: string,
    readonly execution: ExecutionSettings,
    readonly log: Logger,
    private readonly scratchName: string,
  ) {
    this.dir = resolve(dir);
    this.mirrors = new MirrorCache(join(this.dir, "git"));
  }

  /**
   * Opens (creating it) the work directory at `dir`, with these execution settings. A command
   * working beside a run (verify, a session) keeps its scratch checkouts in a directory of its own,
   * which a run starting meanwhile does not clear.
   */
  static open(dir: string, execution: ExecutionSettings, log: Logger, options: { scratch?: string } = {}): Workspace {
    writingTo(dir, () => mkdirSync(dir, { recursive: true }));
    return new Workspace(dir, execution, log, options.scratch ?? "scratch");
  }

  /** The directory scratch checkouts are made in (created). */
  get scratch(): string {
    const dir = join(this.dir, this.scratchName);
    writingTo(dir, () => mkdirSync(dir, { recursive: true }));
    return dir;
  }

  /** The executor of the execution settings, made once; a failure to make it is tried again next time. */
  executor(): Promise<Executor> {
    if (!this.made) {
      this.made = createExecutor(this.execution, { workDir: this.dir, log: this.log });
      this.made.catch(() => (this.made = undefined));
    }
    return this.made;
  }

  /** A fresh checkout of `commit` from a mirror, patched, under scratch/. */
  checkout(mirror: string, commit: string, patches: { name: string; text: string }[]) {
    return freshCheckout(mirror, commit, patches, this.scratch);
  }

  /** A base revision of a mirror, checked out on demand under scratch/ (for an environment's revision layer). */
  baseRevision(mirror: string, commit: string) {
    return baseRevision(mirror, commit, this.scratch);
  }

  /** Keeps a log under logs/<group>/; returns its path. */
  async saveLog(group: string, name: string, text: string): Promise<string> {
    const path = join(this.dir, "logs", group, `${name.replace(/[^\w.-]/g, "_")}.log`);
    await writeFileAtomic(path, text);
    return path;
  }

  /** Releases what the executor holds open (the queue's connections). */
  async close(): Promise<void> {
    const executor = await this.made?.catch(() => undefined);
    await executor?.close?.();
    this.made = undefined;
  }
}
