import { tmpdir } from "node:os";
import type { Command } from "commander";
import Docker from "dockerode";
import { BUILT_STAGES } from "../../../stages/index.ts";
import { loadConfig } from "../../config.ts";
import { environmentsForTasks } from "../../domain/execution.ts";
import { loadProfilesDir } from "../../domain/profiles.ts";
import { buildBaseImage, DockerExecutor } from "../../executors/docker.ts";
import { listImages, pruneImages } from "../../executors/images.ts";
import { createLogger } from "../../logger.ts";
import { Candidate } from "../../schemas/candidate.ts";
import type { StageName } from "../../schemas/common.ts";
import { SplitChange } from "../../schemas/split.ts";
import { ArtifactStore } from "../../store.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "../io.ts";

/** Builds the environment image of every split task of a pipeline, as qualify would on demand. */
async function buildImages(io: Io, configPath: string): Promise<number> {
  requirePath("--config", configPath, "file");
  const loaded = loadConfig(configPath, BUILT_STAGES);
  const store = new ArtifactStore(loaded.workDir);
  const read = async (stage: StageName, name: string) =>
    (await store.readRecords(stage, name).catch(() => {
      throw new UsageError(`${store.artifactPath(stage, name)} is missing: run 'switch-swe run --config ${configPath}' up to split first`);
    })).records;
  const splits = (await read("split", "splits")).map((r) => SplitChange.parse(r));
  const candidates = new Map((await read("mine", "candidates")).map((r) => Candidate.parse(r)).map((c) => [c.id, c]));
  const { profiles } = loadProfilesDir(loaded.config.profiles_dir, loaded.baseDir);
  const environments = [...new Map([...environmentsForTasks(splits, candidates, profiles).values()].map((e) => [e.key, e])).values()];
  const executor = new DockerExecutor(new Docker(), createLogger({ write: (line) => io.err(line + "\n") }));
  for (const env of environments) {
    const { built } = await executor.ensureEnvironment(env);
    io.out(`${built ? "built" : "present"} ${DockerExecutor.imageTag(env)}  ${env.repo}  as of ${env.asOf ?? "today"}\n`);
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
