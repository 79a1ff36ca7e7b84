import type { Logger } from "../logger.ts";
import { RunAbort, TransientFailure } from "../failures.ts";
import { RunTimedOut } from "./types.ts";

export const MAX_INFRASTRUCTURE_RETRIES = 2;

/**
 * A transient failure that persisted through every retry: the record it met is rejected for now
 * (`reason`), and that reject is never cached, so the next run tries again.
 */
export class RetriesExhausted extends Error {
  override name = "RetriesExhausted";
  constructor(
    readonly reason: "timeout" | "infrastructure_fault",
    message: string,
  ) {
    super(message);
  }
}

/** Pauses before the first and second retry: an engine that is restarting needs a moment. */
export const DEFAULT_INFRASTRUCTURE_BACKOFF_MS = [15_000, 30_000];

/**
 * Runs `attempt`, re-running it after a transient failure (an engine fault, a killed run, a full
 * disk met by a build, a timeout) at most twice, after a pause each time; says how many re-runs it
 * took. When it persists, the reject is not cacheable: the next run tries again.
 */
export async function withInfrastructureRetries<T>(
  what: string,
  log: Logger,
  attempt: () => Promise<T>,
  backoffMs: readonly number[] = DEFAULT_INFRASTRUCTURE_BACKOFF_MS,
): Promise<{ value: T; retries: number }> {
  for (let retries = 0; ; retries++) {
    try {
      return { value: await attempt(), retries };
    } catch (error) {
      // Retrying what stops the whole run would only delay the stop.
      if (!(error instanceof TransientFailure) || error instanceof RunAbort) throw error;
      if (retries === MAX_INFRASTRUCTURE_RETRIES) {
        throw new RetriesExhausted(error instanceof RunTimedOut ? "timeout" : "infrastructure_fault", `${what}: ${error.message} (after ${retries} retries)`);
      }
      const pause = backoffMs[retries] ?? backoffMs.at(-1) ?? 0;
      log.warn(
        `${what}: ${error instanceof RunTimedOut ? "timed out" : "infrastructure fault"}, retrying in ${pause / 1000}s (${retries + 1}/${MAX_INFRASTRUCTURE_RETRIES}): ${error.message}`,
      );
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
