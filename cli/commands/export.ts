import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { type Command, Option } from "commander";
import { createLogger } from "../../pipeline/logger.ts";
import { DEFAULT_HARBOR_ADAPTERS } from "../../pipeline/export/harbor-agents.ts";
import { exportHarbor } from "../../pipeline/export/harbor.ts";
import { OpenedBenchmark } from "../../pipeline/project/benchmark.ts";
import { BUILT_STAGES } from "../../stages/index.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "../io.ts";
import { positiveWholeNumber } from "../numeric-options.ts";

export function registerExport(program: Command, io: Io, exit: ExitCode): void {
  const exporter = program.command("export").description("an emitted benchmark in another runner's format");
  exporter
    .command("harbor")
    .description(
      "an emitted benchmark as a Harbor dataset: one task per session and condition, with the session agent that delivers its requests (docs/HARBOR.md)",
    )
    .requiredOption("-c, --config <file>", "the pipeline config that built the benchmark (sessions, held-out assets, profiles)")
    .option("--out <dir>", "the dataset's directory, replaced whole if it holds an earlier export (default: <emit.out_dir>-harbor)")
    .option("--sessions <ids>", "only these sessions, comma-separated (default: every session of the benchmark)")
    .addOption(new Option("--conditions <which>", "which conditions become tasks").choices(["control", "switched", "both"]).default("both"))
    .option(
      "--agents <files>",
      "the adapters the session agent may drive, comma-separated",
      DEFAULT_HARBOR_ADAPTERS.map((a) => join("data", "agents", a)).join(","),
    )
    .option(
      "--base-image <image>",
      "the images' FROM (default: switch-swe's base image of the recipe's Debian suite, e.g. switch-swe-base:bookworm; debian:bookworm for a cloud builder)",
    )
    .option("--ca-bundle <file>", "a CA bundle the image builds trust to reach PyPI (behind a TLS-intercepting proxy)")
    .option("--agent-user <name:uid>", "the user the agent runs as in the container", "agent:1000")
    .addOption(
      new Option(
        "--verifier-network <mode>",
        "the verifier's network: none, as verify's containers; public where Harbor cannot enforce none (its local Docker environment needs its egress-control images from Docker Hub)",
      )
        .choices(["no-network", "public"])
        .default("no-network"),
    )
    .option("--poll-seconds <n>", "seconds between looks at the focus checkout during a return to it", positiveWholeNumber, 1)
    .option("--heldout <dir>", "held-out assets directory (default: the config's emit.heldout_dir)")
    .addHelpText(
      "after",
      "\nExample:\n  switch-swe export harbor -c data/demo/pipeline.yaml --out manifests/demo-harbor\n  harbor run -p manifests/demo-harbor/tasks -a oracle",
    )
    .action(
      exit.act(async (opts) => {
        requirePath("--config", opts.config, "file");
        requirePath("--ca-bundle", opts.caBundle, "file");
        requirePath("--heldout", opts.heldout, "directory");
        const user = /^([a-z_][a-z0-9_-]*):(\d+)$/.exec(opts.agentUser);
        if (!user || user[2] === "0") throw new UsageError(`--agent-user: a user name and a uid other than 0, as agent:1000 (given: ${opts.agentUser})`);
        const log = createLogger({ level: "info", write: (line) => io.err(line + "\n") });
        const bench = OpenedBenchmark.open(opts.config, { stages: BUILT_STAGES, log, ...(opts.heldout ? { heldoutDir: opts.heldout } : {}) });
        const out = opts.out ?? `${dirname(bench.sessionsDir)}-harbor`;
        const { tasks } = await exportHarbor(bench, {
          out,
          ...(opts.sessions ? { sessions: String(opts.sessions).split(",") } : {}),
          conditions: opts.conditions === "both" ? ["control", "switched"] : [opts.conditions],
          adapters: String(opts.agents)
            .split(",")
            .filter(Boolean)
            .map((f) => resolve(f)),
          images: { ...(opts.baseImage ? { baseImage: opts.baseImage } : {}), ...(opts.caBundle ? { caBundle: readFileSync(opts.caBundle, "utf8") } : {}) },
          agentUser: { name: user[1]!, uid: Number(user[2]) },
          pollSeconds: opts.pollSeconds,
          verifierNetwork: opts.verifierNetwork,
          log,
        }).finally(() => bench.close());
        io.out(`wrote ${tasks.length} Harbor task(s) to ${resolve(out)}\n`);
        return 0;
      }),
    );
}
