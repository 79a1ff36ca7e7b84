import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { type Command, Option } from "commander";
import { createLogger } from "../../pipeline/logger.ts";
import { exportHarbor } from "../../pipeline/harbor/export.ts";
import { caBundleFromEnvironment } from "../../pipeline/harbor/images.ts";
import { loadAgent } from "../../pipeline/session/agents.ts";
import { Condition } from "../../pipeline/schemas/session.ts";
import { OpenedBenchmark } from "../../pipeline/project/benchmark.ts";
import { BUILT_STAGES } from "../../stages/index.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "../io.ts";

export function registerExport(program: Command, io: Io, exit: ExitCode): void {
  const exporter = program.command("export").description("an emitted benchmark in another runner's format");
  exporter
    .command("harbor")
    .description(
      "an emitted benchmark as a Harbor dataset: one multi-step task per session and condition, one step per request, scored by switch-swe's verify (docs/HARBOR.md)",
    )
    .requiredOption("-c, --config <file>", "the pipeline config that built the benchmark (sessions, held-out assets, profiles)")
    .option("--out <dir>", "the dataset's directory, replaced whole if it holds an earlier export (default: <emit.out_dir>-harbor)")
    .option("--sessions <ids>", "only these sessions, comma-separated (default: every session of the benchmark)")
    .addOption(new Option("--conditions <which>", "which conditions become tasks").choices([...Condition.options, "both"]).default("both"))
    .option(
      "--messages-of <agent.yaml>",
      "the agent description whose message template makes each step's instruction, as session run gives it (the shipped ones all name the repository, the checkout and the text)",
      join("data", "agents", "claude-code.yaml"),
    )
    .option(
      "--base-image <image>",
      "the images' FROM (default: switch-swe's base image of the recipe's Debian suite, e.g. switch-swe-base:bookworm; debian:bookworm for a cloud builder)",
    )
    .option(
      "--ca-bundle <file>",
      "a CA bundle the image builds trust to reach PyPI, behind a TLS-intercepting proxy (default: the file SSL_CERT_FILE, PIP_CERT or REQUESTS_CA_BUNDLE names, as the executors' builds trust)",
    )
    .option("--no-ca-bundle", "no CA bundle in the images, whatever this environment names")
    .option("--agent-user <name:uid>", "the user the agent runs as in the container", "agent:1000")
    .addOption(
      new Option(
        "--verifier-network <mode>",
        "the verifier's network: none, as verify's containers; public where Harbor cannot enforce none (its local Docker environment needs its egress-control images from Docker Hub)",
      )
        .choices(["no-network", "public"])
        .default("no-network"),
    )
    .option("--heldout <dir>", "held-out assets directory (default: the config's emit.heldout_dir)")
    .addHelpText(
      "after",
      "\nExample:\n  switch-swe export harbor -c data/demo/pipeline.yaml --out manifests/demo-harbor\n  harbor run -p manifests/demo-harbor/tasks -a oracle",
    )
    .action(
      exit.act(async (opts) => {
        requirePath("--config", opts.config, "file");
        if (typeof opts.caBundle === "string") requirePath("--ca-bundle", opts.caBundle, "file");
        requirePath("--messages-of", opts.messagesOf, "file");
        requirePath("--heldout", opts.heldout, "directory");
        const user = /^([a-z_][a-z0-9_-]*):(\d+)$/.exec(opts.agentUser);
        if (!user || user[2] === "0") throw new UsageError(`--agent-user: a user name and a uid other than 0, as agent:1000 (given: ${opts.agentUser})`);
        const log = createLogger({ level: "info", write: (line) => io.err(line + "\n") });
        const bench = OpenedBenchmark.open(opts.config, { stages: BUILT_STAGES, log, ...(opts.heldout ? { heldoutDir: opts.heldout } : {}) });
        const out = opts.out ?? `${dirname(bench.sessionsDir)}-harbor`;
        const found = opts.caBundle === undefined ? caBundleFromEnvironment() : undefined;
        if (found) log.info(`the images' builds trust ${found.file} (from ${found.variable}; --ca-bundle FILE for another, --no-ca-bundle for none)`);
        const caBundle = typeof opts.caBundle === "string" ? opts.caBundle : found?.file;
        const { tasks, sharedBytes } = await exportHarbor(bench, {
          out,
          ...(opts.sessions ? { sessions: String(opts.sessions).split(",") } : {}),
          conditions: opts.conditions === "both" ? Condition.options : [opts.conditions],
          messages: loadAgent(opts.messagesOf),
          images: { ...(opts.baseImage ? { baseImage: opts.baseImage } : {}), ...(caBundle ? { caBundle: readFileSync(caBundle, "utf8") } : {}) },
          agentUser: { name: user[1]!, uid: Number(user[2]) },
          verifierNetwork: opts.verifierNetwork,
          log,
        }).finally(() => bench.close());
        io.out(`wrote ${tasks.length} Harbor task(s) to ${resolve(out)} (${(sharedBytes / 1e6).toFixed(1)} MB stored once under shared/)\n`);
        return 0;
      }),
    );
}
