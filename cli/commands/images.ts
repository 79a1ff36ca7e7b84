import { BUILT_STAGES } from "../../stages/index.ts";
import { tmpdir } from "node:os";
import type { Command } from "commander";
import { dockerEngine } from "../../pipeline/executors/docker-engine.ts";
import { buildBaseImage } from "../../pipeline/executors/docker.ts";
import { listImages, pruneImages } from "../../pipeline/executors/image-inventory.ts";
import { createLogger } from "../../pipeline/logger.ts";
import { type ExitCode, type Io, requirePath } from "../io.ts";
import { buildPipelineImages } from "../../pipeline/project/environment-images.ts";
import { Project } from "../../pipeline/project/project.ts";

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
        io.out(
          `built ${await buildBaseImage({ suite: opts.suite, mirror: opts.mirror, log: createLogger({ write: (line) => io.err(line + "\n") }), workDir: tmpdir() })}\n`,
        );
        return 0;
      }),
    );
  images
    .command("build")
    .description("build the environment image of every split task of a pipeline (qualify builds them on demand too)")
    .requiredOption("-c, --config <file>", "pipeline config whose split stage has run")
    .addHelpText("after", "\nExample:\n  switch-swe images build --config data/demo/pipeline.yaml")
    .action(
      exit.act(async (opts) => {
        requirePath("--config", opts.config, "file");
        const project = Project.open(opts.config, { stages: BUILT_STAGES, log: createLogger({ write: (line) => io.err(line + "\n") }) });
        try {
          await buildPipelineImages(project, (image) =>
            io.out(
              `${image.built ? "built" : "present"} ${image.tag}  ${image.repo}${image.baseCommit ? ` at ${image.baseCommit.slice(0, 12)}` : ""}  as of ${image.asOf ?? "today"}\n`,
            ),
          );
        } finally {
          await project.close();
        }
        return 0;
      }),
    );
  images
    .command("list")
    .description("list switch-swe's base and environment images")
    .addHelpText("after", "\nExample:\n  switch-swe images list")
    .action(
      exit.act(async () => {
        for (const image of await listImages(dockerEngine())) io.out(`${image.tag}  ${(image.size / 2 ** 20).toFixed(0)} MiB  ${image.repo ?? ""}\n`);
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
        const removed = await pruneImages(dockerEngine(), Boolean(opts.all));
        io.out(removed.map((t) => `removed ${t}\n`).join("") || "nothing to remove\n");
        return 0;
      }),
    );
}
