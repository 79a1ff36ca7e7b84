import { type Command, Option } from "commander";
import { OpenedBenchmark } from "../../pipeline/project/benchmark.ts";
import { createLogger } from "../../pipeline/logger.ts";
import { benchmarkKnowledge } from "../../pipeline/model-endpoint/knowledge.ts";
import { MODEL_SCRIPTS, type ModelScript } from "../../pipeline/model-endpoint/scripts.ts";
import { ModelEndpoint } from "../../pipeline/model-endpoint/server.ts";
import { BUILT_STAGES } from "../../stages/index.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "../io.ts";
import { portNumber } from "../numeric-options.ts";

export function registerModelEndpoint(program: Command, io: Io, exit: ExitCode): void {
  program
    .command("model-endpoint")
    .description("serve a scripted model on loopback (Anthropic Messages, OpenAI Chat Completions and Responses) for dry runs of agent harnesses")
    .requiredOption("-c, --config <file>", "the pipeline config that built the benchmark (its sessions and held-out assets)")
    .addOption(new Option("--script <script>", "what the model does").choices([...MODEL_SCRIPTS]).default("solve"))
    .option("--port <n>", "the port on 127.0.0.1 (0: any free one)", portNumber, 0)
    .option("--log <file>", "append every call (usage, tool call, the whole request) to this JSON Lines file")
    .option("--heldout <dir>", "the held-out assets, when not where the config's emit stage puts them")
    .addHelpText("after", "\nExample:\n  switch-swe model-endpoint -c data/demo/pipeline.yaml --script solve --port 8765 --log endpoint.jsonl")
    .action(
      exit.act(async (opts) => {
        requirePath("--config", opts.config, "file");
        const port: number = opts.port;
        const log = createLogger({ level: "info", write: (line) => io.err(line + "\n") });
        const benchmark = OpenedBenchmark.open(opts.config, { stages: BUILT_STAGES, log, ...(opts.heldout ? { heldoutDir: opts.heldout } : {}) });
        const knowledge = await benchmarkKnowledge(benchmark).finally(() => benchmark.close());
        const endpoint = await ModelEndpoint.start({ script: opts.script as ModelScript, knowledge, port, ...(opts.log ? { logFile: opts.log } : {}) });
        io.out(`${endpoint.url}\n`);
        log.info(`model endpoint (${opts.script}) serving ${knowledge.schedules.length / 2} session(s) at ${endpoint.url}; stop it with Ctrl-C`);
        await new Promise<void>((resolve) => {
          process.once("SIGINT", resolve);
          process.once("SIGTERM", resolve);
        });
        await endpoint.close();
        return 0;
      }),
    );
}
