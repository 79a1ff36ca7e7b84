import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import Docker from "dockerode";
import { environmentsForTasks } from "../../pipeline/profiles/environments.ts";
import { cloneSourceOf } from "../../pipeline/profiles/load.ts";
import { baseRevision } from "../../pipeline/checkouts/checkout.ts";
import { MirrorCache } from "../../pipeline/git.ts";
import { needsRevisionLayer } from "../../pipeline/executors/recipe-scripts.ts";
import { buildBaseImage, DockerExecutor } from "../../pipeline/executors/docker.ts";
import { listImages, pruneImages } from "../../pipeline/executors/images.ts";
import { createLogger } from "../../pipeline/logger.ts";
import { type ExitCode, type Io, requirePath } from "../io.ts";
import { readSplitArtifacts } from "../../pipeline/engine/artifacts.ts";

/** Builds the environment image of every split task of a pipeline, as qualify would on demand. */
async function buildImages(io: Io, configPath: string): Promise<number> {
  requirePath("--config", configPath, "file");
  const { config: loaded, splits, candidates, profiles } = await readSplitArtifacts(configPath);
  const envRoot = join(loaded.workDir, "envs");
  const log = createLogger({ write: (line) => io.err(line + "\n") });
  const executor = new DockerExecutor(new Docker(), log, { cacheDir: join(envRoot, "uv-cache"), logDir: join(envRoot, "build-logs"), pythonDownloads: loaded.config.execution.python_downloads });
  const { environments, unavailable } = environmentsForTasks(splits, candidates, profiles, await executor.pythonOffer());
  for (const [task, why] of unavailable) log.warn(`${task}: no environment: ${why.message}`);
  const mirrors = new MirrorCache(join(loaded.workDir, "git"));
  const scratch = join(loaded.workDir, "scratch");
  mkdirSync(scratch, { recursive: true });
  const done = new Set<string>();
  for (const split of splits) {
    const env = environments.get(split.task_id);
    const loadedProfile = profiles.get(split.repo);
    if (!env || !loadedProfile) continue;
    // One image per environment, and one per (environment, base revision) when the recipe installs from the checkout.
    const revision = needsRevisionLayer(env.recipe);
    const key = revision ? `${env.key}@${split.base_commit}` : env.key;
    if (done.has(key)) continue;
    done.add(key);
    const mirror = revision ? await mirrors.ensure(split.repo, cloneSourceOf(split.repo, loadedProfile, (p) => resolve(loaded.baseDir, p)), split.base_commit) : "";
    const { built } = await executor.ensureEnvironment(env, baseRevision(mirror, split.base_commit, scratch));
    const tag = revision ? DockerExecutor.revisionTag(env, split.base_commit) : DockerExecutor.imageTag(env);
    io.out(`${built ? "built" : "present"} ${tag}  ${env.repo}${revision ? ` at ${split.base_commit.slice(0, 12)}` : ""}  as of ${env.asOf ?? "today"}\n`);
  }
  return 0;
}

export function registerImages(program: Command, io: Io, exit: ExitCode): void {
  const images = program.command("images").description("build, list and prune the Docker images the docker executor uses");
  images
    .command("base")
    .description("build the base image from a Debian root filesystem (debootstrap + docker import; needs root)")
    .option("--suite <suite>", "Debian release: bullseye (Python 3.9), bookworm (3.11), trixie (3.13)", "bookworm")
    .option("--mirror <url>", "Debian mirror", "http://deb.debian.org/debian")
    .addHelpText("after", "\nExample:\n  switch-swe images base --suite bookworm")
    .action(
      exit.act(async (opts) => {
        io.out(`built ${await buildBaseImage({ suite: opts.suite, mirror: opts.mirror, log: createLogger({ write: (line) => io.err(line + "\n") }), workDir: tmpdir() })}\n`);
        return 0;
      }),
    );
  images
    .command("build")
    .description("build the environment image of every split task of a pipeline (qualify builds them on demand too)")
    .requiredOption("-c, --config <file>", "pipeline config whose split stage has run")
    .addHelpText("after", "\nExample:\n  switch-swe images build --config data/demo/pipeline.yaml")
    .action(exit.act(async (opts) => buildImages(io, opts.config)));
  images
    .command("list")
    .description("list switch-swe's base and environment images")
    .addHelpText("after", "\nExample:\n  switch-swe images list")
    .action(
      exit.act(async () => {
        for (const image of await listImages(new Docker())) io.out(`${image.tag}  ${(image.size / 2 ** 20).toFixed(0)} MiB  ${image.repo ?? ""}\n`);
        return 0;
      }),
    );
  images
    .command("prune")
    .description("remove environment images (they are rebuilt on demand); --all removes base images too")
    .option("--all", "remove base images as well")
    .addHelpText("after", "\nExample:\n  switch-swe images prune")
    .action(
      exit.act(async (opts) => {
        const removed = await pruneImages(new Docker(), Boolean(opts.all));
        io.out(removed.map((t) => `removed ${t}\n`).join("") || "nothing to remove\n");
        return 0;
      }),
    );
}
