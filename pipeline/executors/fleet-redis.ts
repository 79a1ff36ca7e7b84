import { Redis } from "ioredis";
import { TransientFailure } from "../failures.ts";
import { WORKER_PATTERN, WorkerInfo } from "./queue-protocol.ts";

/** The fleet's Redis: a connection that says in one line why it cannot be had, and the workers it knows. */

/** How long connecting to Redis may take before the run gives up with a message. */
const CONNECT_TIMEOUT_MS = 5000;

/** Opens a Redis connection, or says in one line why it cannot (within CONNECT_TIMEOUT_MS). */
export async function connectRedis(url: string, forWorker = false): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: forWorker ? null : 1,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    redis.disconnect();
    throw new TransientFailure(`cannot reach Redis at ${redactUrl(url)} (waited at most ${CONNECT_TIMEOUT_MS / 1000} s): ${(error as Error).message}`);
  }
  // From here on a dropped connection is retried (a Redis restart must not end a long run).
  redis.options.retryStrategy = (times) => Math.min(times * 200, 2000);
  return redis;
}

export const redactUrl = (url: string) => url.replace(/\/\/[^@/]*@/, "//***@");

/** The workers that announced themselves and have not gone silent. */
export async function liveWorkers(redis: Redis, prefix: string): Promise<WorkerInfo[]> {
  return (await announcedWorkers(redis, prefix)).filter((w) => !w.out_of_service);
}

/** Every worker that announced itself and has not gone silent, in service or not. */
export async function announcedWorkers(redis: Redis, prefix: string): Promise<WorkerInfo[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", WORKER_PATTERN(prefix), "COUNT", 100);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== "0");
  const values = keys.length ? await redis.mget(...keys.sort()) : [];
  return values.flatMap((v) => {
    const parsed = v ? WorkerInfo.safeParse(JSON.parse(v)) : undefined;
    return parsed?.success ? [parsed.data] : [];
  });
}
