import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseDocument } from "yaml";
import { buildDemoCorpus, type CorpusResult } from "../../demo/build.ts";
import { demoCorpus } from "./demo-corpus.ts";
import { FakeGithub } from "../../demo/github-server.ts";
import { Project, type ProjectRun } from "../../pipeline/project/project.ts";
import { PipelineSettings } from "../../pipeline/engine/settings.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { silentProgress } from "../../pipeline/progress.ts";
import { BUILT_STAGES } from "../../stages/index.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));

export interface DemoCopy {
  corpus: CorpusResult;
  options: ProjectRun;
  workDir: string;
  configPath: string;
  server: FakeGithub;
}

/**
 * The README's demo, set up inside `dir` instead of the clone: data/demo is copied with its paths
 * pointed at `dir/out`, the corpus is copied there from the one every caller shares (built anew
 * with `freshCorpus`; used as it is from `corpusDir`), its GitHub API is served on a free loopback
 * port, and engine options for the config are returned. Stop the server.
 */
export async function prepareDemoCopy(
  dir: string,
  options: { corpusDir?: string; freshCorpus?: boolean; mine?: Record<string, unknown>; rateWindowMs?: number } = {},
): Promise<DemoCopy> {
  cpSync(join(root, "data", "demo"), join(dir, "demo"), { recursive: true });
  const corpusDir = options.corpusDir ?? join(dir, "out", "demo-corpus");
  const plan = join(dir, "demo", "corpus.yaml");
  const corpus = await (options.freshCorpus ? buildDemoCorpus(plan, corpusDir) : demoCorpus(plan, corpusDir));
  const server = new FakeGithub({ recordsDir: join(corpusDir, "github"), rateWindowMs: options.rateWindowMs });
  const apiUrl = await server.start();
  const configPath = join(dir, "demo", "pipeline.yaml");
  mkdirSync(join(dir, "audits"), { recursive: true });
  cpSync(join(root, "audits", "decisions.yaml"), join(dir, "audits", "decisions.yaml"));
  let config = readFileSync(configPath, "utf8")
    .replaceAll("../../.switch-swe/demo", "../out/demo")
    .replaceAll("../../audits/", "../audits/")
    .replaceAll("../../manifests/", "../manifests/")
    .replace("http://127.0.0.1:47623", apiUrl);
  if (options.mine) {
    // Set (or, given null, remove) keys of the mine stage's github settings.
    const doc = parseDocument(config);
    for (const [key, value] of Object.entries(options.mine)) {
      if (value === null) doc.deleteIn(["stages", "mine", "github", key]);
      else doc.setIn(["stages", "mine", "github", key], value);
    }
    config = doc.toString();
  }
  writeFileSync(configPath, config);
  for (const name of readdirSync(join(dir, "demo", "repos"))) {
    const profile = join(dir, "demo", "repos", name);
    writeFileSync(profile, readFileSync(profile, "utf8").replace("../../../.switch-swe/demo-corpus", relative(join(dir, "demo", "repos"), corpusDir)));
  }
  return { corpus, ...openDemoConfig(configPath), configPath, server };
}

/** Engine options for a demo copy's config, quiet, with every built stage. */
export function openDemoConfig(configPath: string): { options: ProjectRun; workDir: string } {
  const { definition } = Project.open(configPath, { stages: BUILT_STAGES, log: silentLogger });
  return { options: { ...definition, stages: BUILT_STAGES, log: silentLogger, progress: silentProgress }, workDir: definition.workDir };
}

/** The same engine options with another executor (and, if given, jobs) in their execution settings. */
export function withExecution(options: ProjectRun, execution: Partial<PipelineSettings["execution"]>): ProjectRun {
  const settings = options.settings ?? PipelineSettings.parse({});
  return { ...options, settings: { ...settings, execution: { ...settings.execution, ...execution } } };
}
