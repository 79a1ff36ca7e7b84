import type Docker from "dockerode";
import type { Logger } from "../logger.ts";
import { dockerEngine } from "./docker-engine.ts";
import { InfrastructureFault } from "./types.ts";

/**
 * What every container of ours needs from the engine, builds and test runs alike: its log's text,
 * its exit (or its kill at a timeout), an engine failure named as one, and a lifeline that ends it
 * with us.
 */

/**
 * The text of a container's log as Docker sends it: stdout and stderr multiplexed in frames, each
 * behind an 8-byte header (stream, 0, 0, 0, length as 4 bytes), which must not leak into messages.
 */
export function demultiplex(raw: Buffer): string {
  const chunks: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= raw.length && raw[offset]! <= 2 && raw[offset + 1] === 0 && raw[offset + 2] === 0 && raw[offset + 3] === 0) {
    const length = raw.readUInt32BE(offset + 4);
    chunks.push(raw.subarray(offset + 8, offset + 8 + length));
    offset += 8 + length;
  }
  // A TTY log (or anything else) has no frames: taken as it is.
  return (offset === 0 ? raw : Buffer.concat(chunks)).toString("utf8");
}

/** How often a running test container's state is checked besides the engine's wait answer. */
const STATE_POLL_MS = 2000;

/**
 * The container's exit status. The engine's wait request alone is not enough: a wait sent around
 * an engine restart can stay unanswered after the container has exited (seen in the fault
 * matrix's engine-restart row), so the container's state is also checked every few seconds.
 * An engine that cannot answer either way is an engine fault, surfaced by the caller.
 */
export async function exited(container: Docker.Container): Promise<{ StatusCode: number }> {
  let poll: NodeJS.Timeout | undefined;
  let settled = false;
  const polled = new Promise<{ StatusCode: number }>((resolve, reject) => {
    const check = () =>
      container.inspect().then((info) => {
        if (!info.State.Running && info.State.Status !== "created") resolve({ StatusCode: info.State.ExitCode });
        else if (!settled) poll = setTimeout(check, STATE_POLL_MS);
      }, reject);
    poll = setTimeout(check, STATE_POLL_MS);
  });
  try {
    return await Promise.race([container.wait() as Promise<{ StatusCode: number }>, polled]);
  } finally {
    settled = true;
    clearTimeout(poll);
  }
}

/**
 * An engine failure is an infrastructure fault (retried); a 4xx answer means we sent a bad
 * request, a bug that retrying would only repeat.
 */
export function engineFault(error: unknown, what: string): Error {
  const status = (error as { statusCode?: number }).statusCode;
  const message = `Docker engine error while ${what}: ${(error as Error).message}`;
  return status && status >= 400 && status < 500 ? new Error(message) : new InfrastructureFault(message);
}

export async function dockerAvailable(docker: Docker = dockerEngine()): Promise<boolean> {
  try {
    await docker.ping();
    return true;
  } catch {
    return false;
  }
}

/**
 * PID 1 of every container of ours: it runs the command ($2) and dies, with everything in the
 * container, when its standard input closes. We hold that input open through an attach for as
 * long as we wait for the container, so if we are killed (SIGKILL, OOM) the engine closes it and
 * the build or the tests stop instead of running on unwatched. A guarded run's first line of input
 * is its token ($1 = token): read here and handed to the command, the rest is the lifeline.
 * Signals to PID 1 are delivered only through a trap, hence USR1 rather than a kill.
 */
const CONTAINER_INIT = [
  "exec 3<&0 </dev/null",
  "trap 'exit 137' USR1",
  'if [ "$1" = token ]; then IFS= read -r token <&3 || exit 137; fi',
  "{ cat >/dev/null; kill -USR1 $$; } <&3 &",
  'if [ "$1" = token ]; then printf \'%s\\n\' "$token" | sh -c "$2" 3<&- & else sh -c "$2" 3<&- & fi',
  "wait $!",
].join("\n");

/** A container's command under CONTAINER_INIT, and the settings that give it a lifeline. */
export function withLifeline(command: string, mode: "token" | "plain"): Pick<Docker.ContainerCreateOptions, "Cmd" | "OpenStdin" | "StdinOnce" | "AttachStdin"> {
  return { Cmd: ["sh", "-c", CONTAINER_INIT, "switch-swe-init", mode, command], OpenStdin: true, StdinOnce: true, AttachStdin: true };
}

/** Holds a container's standard input open (its lifeline, see CONTAINER_INIT) until released. */
export async function holdLifeline(container: Docker.Container): Promise<{ release: () => void }> {
  const stream = (await container.attach({ stream: true, stdin: true, hijack: true })) as NodeJS.ReadWriteStream & { destroy(): void };
  stream.on("error", () => undefined);
  return { release: () => stream.destroy() };
}

/** Waits for a test container to exit, or kills it at its timeout. */
export async function waitOrKill(container: Docker.Container, timeoutSeconds: number): Promise<{ timedOut: boolean; exitCode: number }> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutSeconds * 1000)));
  try {
    const outcome = await Promise.race([exited(container), deadline]);
    if (outcome !== "timeout") return { timedOut: false, exitCode: outcome.StatusCode };
    await container.kill().catch(() => undefined);
    return { timedOut: true, exitCode: -1 };
  } catch (error) {
    throw engineFault(error, "waiting for a test container");
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Removes every container (running or not) labelled `label=value`: what a killed run of one work
 * directory left behind. No engine, no containers of ours; an engine that fails midway is said.
 */
export async function removeContainersLabelled(label: string, value: string, log: Logger): Promise<string[]> {
  const docker = dockerEngine();
  try {
    await docker.ping();
  } catch {
    return []; // no engine, no containers of ours
  }
  const removed: string[] = [];
  try {
    const containers = await docker.listContainers({ all: true, filters: { label: [`${label}=${value}`] } });
    for (const info of containers) {
      await docker.getContainer(info.Id).remove({ force: true });
      removed.push(`container ${info.Id.slice(0, 12)}`);
    }
  } catch (error) {
    log.warn(`could not remove test containers a killed run left behind: ${(error as Error).message}`);
  }
  return removed;
}
