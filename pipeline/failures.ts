import { statfsSync } from "node:fs";

/**
 * Every failure is one of two kinds, decided where it happens:
 *
 * - deterministic: a property of the input (a patch that does not apply, a requirement that does
 *   not exist on PyPI). Recorded as a reject and cached like any result.
 * - transient: a property of the moment (a full disk, an unreachable server, an engine restart,
 *   a killed process, a timeout, a truncated response). Never cached, never read as a result;
 *   the stage that met it is incomplete, later stages keep what they had, and the run exits
 *   non-zero naming it.
 */
export class TransientFailure extends Error {
  override name = "TransientFailure";
}

/**
 * A transient failure of what every record needs (no healthy worker left in the fleet, say): the
 * stage stops taking records at once, instead of meeting it (and retrying it) once per record.
 */
export class RunAbort extends TransientFailure {
  override name = "RunAbort";
}

/** The disk holding a file the run writes is full: one message for every write, naming the file. */
export class NoSpaceLeft extends TransientFailure {
  override name = "NoSpaceLeft";
  constructor(readonly path: string) {
    super(`no space left on the disk holding ${path}: free some (or point work_dir elsewhere) and run again`);
  }
}

/** Whether a write failed for want of room (ENOSPC, or a quota: EDQUOT). */
export function isNoSpace(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === "ENOSPC" || code === "EDQUOT";
}

/** Runs a write; a full disk becomes NoSpaceLeft naming `path`, anything else is rethrown as it is. */
export function writingTo<T>(path: string, write: () => T): T {
  try {
    const result = write();
    if (result instanceof Promise)
      return result.catch((error: unknown) => {
        throw isNoSpace(error) ? new NoSpaceLeft(path) : error;
      }) as T;
    return result;
  } catch (error) {
    throw isNoSpace(error) ? new NoSpaceLeft(path) : error;
  }
}

/** errno codes that describe the machine or the network, never the input. */
const TRANSIENT_CODES = new Set([
  "ENOSPC",
  "EDQUOT",
  "EIO",
  "EMFILE",
  "ENFILE",
  "ENOMEM",
  "EROFS",
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
  "ENOTFOUND",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** Words tools print for the same conditions (pip, uv, git, apt, Python's OSError). */
const TRANSIENT_TEXT =
  /No space left on device|Disk quota exceeded|\[Errno 28\]|ENOSPC|Connection refused|Connection reset by peer|Temporary failure in name resolution|Could not resolve host|Network is unreachable|Failed to establish a new connection|Read timed out|connection timed out|error sending request for url|failed to fetch|Could not connect to/i;

/** The error and the errors it wraps (`cause`), outermost first. */
function chain(error: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e: unknown = error; e && out.length < 8; e = (e as { cause?: unknown }).cause) out.push(e);
  return out;
}

/**
 * Why `error` is transient, in a few words, or undefined when it is not known to be. An error
 * that is neither known transient nor a deliberate reject is a bug; the engine does not cache
 * it either.
 */
export function transientCause(error: unknown): string | undefined {
  for (const e of chain(error)) {
    if (e instanceof TransientFailure) return e.message;
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && TRANSIENT_CODES.has(code)) return `${code}: ${(e as Error).message ?? code}`;
    // An HTTP client's answer: 5xx and 429 are the server's moment, not our input.
    const status = (e as { status?: unknown }).status;
    if (typeof status === "number" && (status >= 500 || status === 429)) return `HTTP ${status}: ${(e as Error).message}`;
    const message = (e as { message?: unknown }).message;
    if (typeof message === "string" && TRANSIENT_TEXT.test(message)) return message;
  }
  return undefined;
}

/** Below this much free space a failed build or write is taken to have failed for want of room. */
const LOW_SPACE_BYTES = 32 * 2 ** 20;

/**
 * Says so when the file system holding `dir` is (nearly) full. Tools do not always say "No space
 * left on device" (ensurepip, for one, prints only that a command failed), so a failure met on a
 * full disk is judged by the disk, not by the words.
 */
export function lowDiskSpace(dir: string): string | undefined {
  try {
    const stats = statfsSync(dir);
    const free = Number(stats.bavail) * Number(stats.bsize);
    if (free < LOW_SPACE_BYTES) return `the disk holding ${dir} has ${(free / 2 ** 20).toFixed(1)} MiB free (No space left on device?)`;
  } catch {
    // a directory we cannot inspect tells us nothing
  }
  return undefined;
}

/** True when a tool's output says it failed for a transient reason (see TRANSIENT_TEXT). */
export function outputLooksTransient(output: string): boolean {
  return TRANSIENT_TEXT.test(output);
}
