import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Logger } from "../logger.ts";
import type { RequestUsage } from "../schemas/agent.ts";

/** How long the relay may take to say it listens before the run gives up on it. */
const START_SECONDS = 60;

/** A running context relay (an adapter's `context_relay`): the URL the harness is given, its auxiliary calls' usage, and its end. */
export interface RunningContextRelay {
  url: string;
  /** The usage of the auxiliary calls made since the last time this was asked (null: none). */
  takeUsage: () => Promise<RequestUsage | null>;
  close: () => Promise<void>;
}

/** One line of the relay's usage log: an auxiliary call, its tokens as OpenCode prints a model call's. */
function usageOfLine(line: string): RequestUsage | undefined {
  try {
    const event = JSON.parse(line) as { auxiliary?: unknown; part?: { tokens?: { input?: number; output?: number; cache?: { read?: number } } } };
    if (typeof event.auxiliary !== "string") return undefined;
    const tokens = event.part?.tokens ?? {};
    return { input_tokens: tokens.input ?? 0, cached_input_tokens: tokens.cache?.read ?? 0, output_tokens: tokens.output ?? 0, model_calls: 1, tool_calls: 0 };
  } catch {
    return undefined; // a line being written as it is read is read whole next time
  }
}

/**
 * Starts an adapter's context relay in front of the run's model endpoint (`upstream`): the
 * relay program (TypeScript, run through tsx with this Node) keeps its state, usage and decisions
 * in `dir` and its messages in `logFile`. The harness is then given the relay's URL for the
 * model's; every auxiliary call the relay makes is added to the request during which it was made.
 */
export async function startContextRelay(
  relay: { program: string; mode: "router" | "rcm" },
  upstream: string,
  dir: string,
  logFile: string,
  log: Logger,
): Promise<RunningContextRelay> {
  await mkdir(dir, { recursive: true });
  // tsx, which runs switch-swe's own sources, runs the relay's (a file URL: --import takes one).
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm")).href;
  const child = spawn(process.execPath, ["--import", tsx, relay.program, "--upstream", upstream, "--mode", relay.mode, "--dir", dir], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const messages = createWriteStream(logFile, { flags: "a" });
  child.stderr!.pipe(messages);
  const url = await listening(child, relay.program, logFile).catch((error) => {
    child.kill("SIGKILL");
    throw error;
  });
  log.info(`context relay (${relay.mode}) at ${url}, in front of ${upstream}`);
  const usageFile = join(dir, "usage.jsonl");
  let read = 0;
  return {
    url,
    takeUsage: async () => {
      const text = await readFile(usageFile, "utf8").catch(() => "");
      const complete = text.slice(read, text.lastIndexOf("\n") + 1);
      read += complete.length;
      const calls = complete.split("\n").flatMap((line) => usageOfLine(line) ?? []);
      if (!calls.length) return null;
      return calls.reduce((sum, u) => ({
        input_tokens: sum.input_tokens + u.input_tokens,
        cached_input_tokens: (sum.cached_input_tokens ?? 0) + (u.cached_input_tokens ?? 0),
        output_tokens: sum.output_tokens + u.output_tokens,
        model_calls: (sum.model_calls ?? 0) + (u.model_calls ?? 0),
        tool_calls: 0,
      }));
    },
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      }
      messages.end();
    },
  };
}

/** The URL a relay says it listens on, or why it never did (its exit, or START_SECONDS of silence). */
function listening(child: ChildProcess, program: string, logFile: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(
      () => reject(new Error(`the context relay ${program} did not start within ${START_SECONDS}s (its messages: ${logFile})`)),
      START_SECONDS * 1000,
    );
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const url = /^listening (\S+)/m.exec(out)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve(url);
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the context relay ${program} ended (${signal ?? `exit ${code}`}) before it listened (its messages: ${logFile})`));
    });
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`the context relay ${program} could not start: ${error.message}`));
    });
  });
}
