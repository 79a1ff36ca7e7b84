import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { writeFileAtomic } from "../../pipeline/atomic.ts";
import { join } from "node:path";
import { inject } from "vitest";
import { buildDemoCorpus, type CorpusResult } from "../../demo/build.ts";
import type { RunSummary } from "../../pipeline/engine/engine.ts";
import { runProjectOnce, type ProjectRun } from "../../pipeline/project/project.ts";
import { openDemoConfig, prepareDemoCopy, withExecution } from "./demo-copy.ts";
import { fileTempDir } from "./tmp.ts";
import { processAlive } from "../../pipeline/process-alive.ts";

export interface DemoRunCopy {
  /** The copy: demo/ (the config and profiles), out/ (corpus and work directory), manifests/, audits/. */
  dir: string;
  corpus: CorpusResult;
  /** The copy's engine options, with the local executor. */
  options: ProjectRun;
  workDir: string;
  configPath: string;
  /** The shared run's summary. */
  summary: RunSummary;
}

/**
 * A copy of one run of the whole demo pipeline with the local executor (the README's demo, every
 * stage), made once in a test run for the files that each needed one (the demo, audit and qualify
 * tests: several minutes of qualify and oracle each) and copied to each, which may then run stages
 * again in its copy. The first file to ask builds it while the others wait; a builder that fails
 * says why to every waiter, and one that dies is noticed. The copy keeps the run's config, so its
 * GitHub API (stopped with the build) is never asked again: a copy runs no mining.
 */
export async function demoRunCopy(): Promise<DemoRunCopy> {
  const shared = join(inject("sharedRunDir"), "demo-local");
  const summary = await builtOnce(shared);
  const dir = fileTempDir();
  cpSync(join(shared, "run"), dir, { recursive: true });
  const configPath = join(dir, "demo", "pipeline.yaml");
  const { options, workDir } = openDemoConfig(configPath);
  // The copied corpus carries its stamp: this reads it, nothing is built.
  const corpus = await buildDemoCorpus(join(dir, "demo", "corpus.yaml"), join(dir, "out", "demo-corpus"));
  return { dir, corpus, options: withExecution(options, { executor: "local" }), workDir, configPath, summary };
}

async function builtOnce(shared: string): Promise<RunSummary> {
  const summaryFile = join(shared, "summary.json");
  const failedFile = join(shared, "failed.txt");
  const pidFile = join(shared, "builder.pid");
  let builder = false;
  try {
    mkdirSync(shared);
    builder = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  if (builder) {
    writeFileSync(pidFile, String(process.pid));
    try {
      const demo = await prepareDemoCopy(join(shared, "run"));
      const summary = await runProjectOnce(withExecution(demo.options, { executor: "local" })).finally(() => demo.server.stop());
      // atomic: a waiter never reads half of it
      await writeFileAtomic(summaryFile, JSON.stringify(summary));
      return summary;
    } catch (error) {
      await writeFileAtomic(failedFile, (error as Error).stack ?? String(error));
      throw error;
    }
  }
  for (;;) {
    if (existsSync(summaryFile)) return JSON.parse(readFileSync(summaryFile, "utf8")) as RunSummary;
    if (existsSync(failedFile)) throw new Error(`the shared demo run failed in another test file:\n${readFileSync(failedFile, "utf8")}`);
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8")) : 0;
    if (pid && !processAlive(pid)) throw new Error(`the shared demo run's builder (pid ${pid}) ended without finishing it`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}
