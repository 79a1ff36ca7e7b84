import { mkdirSync } from "node:fs";
import type Docker from "dockerode";
import { writeFileAtomic } from "../atomic.ts";
import { baseRevision, freshCheckout } from "../checkouts/checkout.ts";
import { writingTo } from "../failures.ts";
import { MirrorCache } from "../git.ts";
import type { Logger } from "../logger.ts";
import { type ScratchKind, WorkLayout } from "../work-layout.ts";
import { dockerEngine } from "./docker-engine.ts";
import { createExecutor, type ExecutorSettings } from "./index.ts";
import type { Executor } from "./types.ts";

/** An executor asked for by kind, whatever the settings choose: `images build` and an agent's environment image need Docker's. */
export type ExecutorKind = "settings" | "docker";

/**
 * What a command works with in one work directory: its mirrors (`git/`), scratch checkouts, logs,
 * environments (`envs/`, through the executor), one executor per kind, made on first use from the
 * execution settings and closed with the workspace, and the process's Docker handle. Only the
 * project opens one (`check:deps` keeps it so): the engine builds every stage's context from it,
 * and every command working outside a run (qualify task, images build, verify, the session
 * runner, fidelity) gets the same one. A write it makes that meets a full disk says so naming the
 * path (NoSpaceLeft), the one way the project says it.
 */
export class Workspace {
  readonly mirrors: MirrorCache;
  private readonly made = new Map<ExecutorKind, Promise<Executor>>();

  private constructor(
    readonly layout: WorkLayout,
    readonly execution: ExecutorSettings,
    readonly log: Logger,
    private readonly scratchKind: ScratchKind,
  ) {
    this.mirrors = new MirrorCache(layout.mirrors);
  }

  /**
   * Opens (creating it) the work directory of `layout`, with these execution settings. A command
   * working beside a run (verify, a session) keeps its scratch checkouts apart (`beside`), where a
   * run starting meanwhile does not clear them.
   */
  static open(layout: WorkLayout, execution: ExecutorSettings, log: Logger, options: { scratch?: ScratchKind; localCopies?: string } = {}): Workspace {
    writingTo(layout.root, () => mkdirSync(layout.root, { recursive: true }));
    const workspace = new Workspace(layout, execution, log, options.scratch ?? "run");
    if (options.localCopies) workspace.mirrors.localCopies = options.localCopies;
    return workspace;
  }

  get dir(): string {
    return this.layout.root;
  }

  /** The directory scratch checkouts are made in (created). */
  get scratch(): string {
    const dir = this.layout.scratch(this.scratchKind);
    writingTo(dir, () => mkdirSync(dir, { recursive: true }));
    return dir;
  }

  /** The Docker engine's client: the process's one (dockerEngine). */
  get docker(): Docker {
    return dockerEngine();
  }

  /**
   * The executor of the execution settings (`settings`), or Docker's with the same limits and
   * sources (`docker`), each made once; a failure to make one is tried again next time.
   */
  executor(kind: ExecutorKind = "settings"): Promise<Executor> {
    // Docker's, where the settings choose Docker, is the settings' own: one executor per kind.
    if (kind === "docker" && this.execution.executor === "docker") kind = "settings";
    let made = this.made.get(kind);
    if (!made) {
      const settings: ExecutorSettings = kind === "docker" ? { ...this.execution, executor: "docker" } : this.execution;
      made = createExecutor(settings, { workDir: this.dir, log: this.log });
      this.made.set(kind, made);
      made.catch(() => this.made.delete(kind));
    }
    return made;
  }

  /** A fresh checkout of `commit` from a mirror, patched, in the scratch directory. */
  checkout(mirror: string, commit: string, patches: { name: string; text: string }[]) {
    return freshCheckout(mirror, commit, patches, this.scratch);
  }

  /** A base revision of a mirror, checked out on demand in the scratch directory (for an environment's revision layer). */
  baseRevision(mirror: string, commit: string) {
    return baseRevision(mirror, commit, this.scratch);
  }

  /** Keeps a log under logs/<group>/; returns its path. */
  async saveLog(group: string, name: string, text: string): Promise<string> {
    const path = this.layout.savedLog(group, name);
    await writeFileAtomic(path, text);
    return path;
  }

  /** Releases what the executors hold open (the queue's connections). */
  async close(): Promise<void> {
    const made = [...this.made.values()];
    this.made.clear();
    for (const executor of made) await (await executor.catch(() => undefined))?.close?.();
  }
}
