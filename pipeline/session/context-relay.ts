import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Logger } from "../logger.ts";
import type { RequestUsage, RoutingDecisions } from "../schemas/agent.ts";
import { readAttempt, readRouting } from "./usage.ts";

/** How long the relay may take to say it listens before the run gives up on it. */
const START_SECONDS = 60;

/** What a context manager logged since the last time it was asked: its auxiliary calls' usage and its routing decisions (null: none). */
export interface ContextManagerLog {
  usage: RequestUsage | null;
  routing: RoutingDecisions | null;
}

/** A running context relay (an adapter's `context_relay`): the URL the harness is given, what it logs, and its end. */
export interface RunningContextRelay {
  url: string;
  /** The usage of the auxiliary calls made, and the requests routed, since the last time this was asked. */
  takeLog: () => Promise<ContextManagerLog>;
  close: () => Promise<void>;
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
    takeLog: async () => {
      const text = await readFile(usageFile, "utf8").catch(() => "");
      // Whole lines only: one being written is read whole next time.
      const complete = text.slice(read, text.lastIndexOf("\n") + 1);
      read += complete.length;
      // The relay logs each auxiliary call as OpenCode reports a model call: OpenCode's reader reads it.
      return { usage: readAttempt("opencode", complete).usage, routing: readRouting(complete) };
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
