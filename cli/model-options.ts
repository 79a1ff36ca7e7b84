import type { Command } from "commander";
import type { ModelTarget } from "../pipeline/session/types.ts";
import { isLoopbackUrl } from "../pipeline/session/model-relay.ts";
import { DEFAULT_TOOLS_DIR } from "../pipeline/session/agents.ts";
import { UsageError } from "./io.ts";

/** The options that point a harness at a model endpoint, and say where installed harnesses are. */
export function withModelOptions(command: Command): Command {
  return command
    .option("--model-url <url>", "point an agent whose adapter has model_endpoint at this model endpoint (e.g. switch-swe model-endpoint's)")
    .option("--model-key-env <name>", "the environment variable holding the endpoint's key (never written anywhere; a loopback endpoint needs none)")
    .option("--model <name>", "the model's name, for adapters that pass one")
    .option("--tools-dir <dir>", "where switch-swe agents install put the harnesses", DEFAULT_TOOLS_DIR);
}

/** The model endpoint and tools directory of the runner's options. */
export function modelTarget(opts: { modelUrl?: string; modelKeyEnv?: string; model?: string; toolsDir: string }): { model?: ModelTarget; toolsDir: string } {
  if (!opts.modelUrl) {
    if (opts.modelKeyEnv || opts.model) throw new UsageError("--model-key-env and --model need --model-url");
    return { toolsDir: opts.toolsDir };
  }
  let url: URL;
  try {
    url = new URL(opts.modelUrl);
  } catch {
    throw new UsageError(`--model-url: not a URL: '${opts.modelUrl}'`);
  }
  const loopback = isLoopbackUrl(url.href);
  const key = opts.modelKeyEnv ? process.env[opts.modelKeyEnv] : undefined;
  if (opts.modelKeyEnv && !key) throw new UsageError(`--model-key-env: the variable ${opts.modelKeyEnv} is not set`);
  if (!key && !loopback) throw new UsageError("--model-url is not on loopback: name the variable holding its key with --model-key-env");
  // A loopback endpoint (switch-swe model-endpoint) takes any key; harnesses refuse to start without one.
  return { model: { url: opts.modelUrl, key: key ?? "switch-swe-loopback", ...(opts.model ? { name: opts.model } : {}) }, toolsDir: opts.toolsDir };
}
