import { join } from "node:path";
import { type Command, Option } from "commander";
import type { Project } from "../../pipeline/project/project.ts";
import { buildDemoCorpus } from "../../demo/build.ts";
import { FakeGithub } from "../../demo/github-server.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "../io.ts";
import { positiveWholeNumber } from "../numeric-options.ts";
import { openRunProject, runProject } from "../run-config.ts";

/**
 * Serves the demo corpus's GitHub records on the loopback address the config's mine.github.api_url
 * names, so the config (and with it every cache key) stays the same from run to run.
 */
async function serveDemoApi(io: Io, project: Project, recordsDir: string): Promise<FakeGithub | undefined> {
  const configPath = project.configPath;
  const apiUrl = (project.stageConfigs.mine as { github?: { api_url?: string } } | undefined)?.github?.api_url;
  if (!apiUrl) return undefined;
  const url = new URL(apiUrl);
  if (url.hostname !== "127.0.0.1" && url.hostname !== "localhost")
    throw new UsageError(`the demo serves its GitHub records on loopback only; ${configPath}: key stages.mine.github.api_url is ${apiUrl}`);
  const server = new FakeGithub({ recordsDir });
  try {
    await server.start(Number(url.port));
  } catch (error) {
    throw new UsageError(
      `cannot serve the demo's GitHub API on ${apiUrl} (${(error as Error).message}); free the port or change stages.mine.github.api_url in ${configPath}`,
    );
  }
  io.err(`demo GitHub API: serving ${recordsDir} on ${server.url}\n`);
  return server;
}

export function registerDemo(program: Command, io: Io, exit: ExitCode): void {
  program
    .command("demo")
    .description("build the bundled demo corpus (real git repositories and their records) and run the pipeline over it")
    .option("--corpus <file>", "corpus description", "data/demo/corpus.yaml")
    .option("--out <dir>", "where to build the corpus", ".switch-swe/demo-corpus")
    .option("-c, --config <file>", "pipeline config to run over it", "data/demo/pipeline.yaml")
    .option("--force", "redo every stage, ignoring caches")
    .option("--keep-going", "run later stages even after a stage had failures that may not recur (the run still exits 1)")
    .option("-q, --quiet", "print only warnings, errors and the summary")
    .addOption(new Option("--executor <kind>", "the execution settings' executor for this run: docker, local or auto").choices(["auto", "docker", "local"]))
    .option("--jobs <n>", "tasks worked on at once", positiveWholeNumber)
    .addHelpText("after", "\nExample:\n  switch-swe demo\n  switch-swe demo --executor local")
    .action(
      exit.act(async (opts) => {
        requirePath("--corpus", opts.corpus, "file");
        requirePath("--config", opts.config, "file");
        const corpus = await buildDemoCorpus(opts.corpus, opts.out);
        io.err(
          `demo corpus: ${corpus.records} pull requests in ${corpus.repositories.join(", ")} (${corpus.built ? "built" : "already built"}) at ${corpus.dir}\n`,
        );
        const project = openRunProject(io, opts.config, Boolean(opts.quiet), { executor: opts.executor, jobs: opts.jobs });
        const server = await serveDemoApi(io, project, join(corpus.dir, "github")).catch(async (error) => {
          await project.close();
          throw error;
        });
        try {
          // A corpus built anew is a GitHub API with other answers: mine lists it again (each pull request still cached by what GitHub says of it).
          const recheck = corpus.built ? (["mine"] as const) : [];
          return await runProject(io, project, { force: opts.force, keepGoing: opts.keepGoing, recheck: [...recheck] }, Boolean(opts.quiet));
        } finally {
          await server?.stop();
        }
      }),
    );
}
