import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import Bottleneck from "bottleneck";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { Octokit } from "@octokit/rest";
import {
  ApiOutage,
  backOffUntilOutage,
  completeJsonBodies,
  fetchWithTimeLimit,
  forbiddenFailure,
  GithubUnreachable,
  nameSecondaryLimits,
  rateLimitFailure,
  redact,
  stopWhenUnreachable,
} from "./github-plugins.ts";
import { type CachedGraphql, cachedGraphql, ConditionalGets, type RecordingOptions, type RequestCounts } from "./github-recording.ts";
import type { Logger } from "./logger.ts";
import type { WorkLayout } from "./work-layout.ts";

const ClientWithPlugins = Octokit.plugin(completeJsonBodies, nameSecondaryLimits, stopWhenUnreachable, throttling, backOffUntilOutage, retry);
export type GithubClient = InstanceType<typeof ClientWithPlugins>;

export interface GithubClientOptions extends RecordingOptions {
  /**
   * Milliseconds per second of retry backoff after a failure; tests shorten it. Rate-limit waits
   * always follow the server's reset time and Retry-After, in real seconds.
   */
  waitUnitMs?: number;
  maxRetries?: number;
  /** Seconds to wait after a secondary rate limit that came without Retry-After (GitHub: at least 60). */
  secondaryFallbackSeconds?: number;
  /**
   * Milliseconds between GraphQL requests. The throttling plugin sends GraphQL one at a time, a
   * second apart, as GitHub asks of POST requests; a local API needs no such spacing.
   */
  graphqlSpacingMs?: number;
  /** Seconds each request may take to answer, and then to send its whole body (DEFAULT_TIMEOUT_SECONDS). */
  timeoutSeconds?: number;
}

/**
 * A request's time limit. GitHub answers within a few seconds, large lists included; a request
 * still waiting after this is hung, and HUNG_AFTER of them stop the run (about 1.5 minutes).
 */
export const DEFAULT_TIMEOUT_SECONDS = 30;

/**
 * Retries of a request GitHub rate-limits, each after the wait GitHub asks for (its reset time, or
 * Retry-After, or secondary_wait_seconds): at most four requests and three waits (with GitHub's
 * usual minute, about three minutes) before the request is a transient failure. GitHub asks
 * clients that keep meeting a secondary limit to stop after a fixed number of retries, since
 * requests sent while limited can get the integration banned; the records already mined are kept.
 */
const RATE_LIMIT_RETRIES = 3;

function rateLimitWait(log: Logger, kind: string, retryAfter: number, request: { method: string; url: string }, retryCount: number): boolean {
  if (retryCount >= RATE_LIMIT_RETRIES) {
    log.warn(`GitHub ${kind} on ${request.method} ${request.url} again after ${RATE_LIMIT_RETRIES} retries: not retried`);
    return false;
  }
  log.warn(`GitHub ${kind} on ${request.method} ${request.url}: waiting ${retryAfter}s, then retry ${retryCount + 1} of ${RATE_LIMIT_RETRIES}`);
  return true;
}

/** The client with its plugins: throttling (rate limits, GraphQL spacing), retries, a quiet log. */
function newClient(options: GithubClientOptions, outage: ApiOutage, counts: RequestCounts): GithubClient {
  return new ClientWithPlugins({
    baseUrl: options.baseUrl,
    auth: options.token,
    userAgent: "switch-swe",
    throttle: {
      write: new Bottleneck.Group({ maxConcurrent: 1, minTime: options.graphqlSpacingMs ?? 1000 }),
      retryAfterBaseValue: 1000,
      // GitHub: without Retry-After, wait at least a minute before retrying a secondary limit.
      fallbackSecondaryRateRetryAfter: options.secondaryFallbackSeconds ?? 60,
      // Each warning says what happens next: a wait and a retry, or no retry.
      onRateLimit: (retryAfter: number, request: { method: string; url: string }, _client: unknown, retryCount: number) =>
        rateLimitWait(options.log, "rate limit", retryAfter, request, retryCount),
      onSecondaryRateLimit: (retryAfter: number, request: { method: string; url: string }, _client: unknown, retryCount: number) =>
        rateLimitWait(options.log, "secondary rate limit", retryAfter, request, retryCount),
    },
    // The retry plugin retries at once; its backoff is backOffUntilOutage's, which an outage ends.
    retry: { retries: options.maxRetries ?? 4, retryAfterBaseValue: 0 },
    outage,
    retryBackoffMs: options.waitUnitMs ?? 1000,
    request: { fetch: countSentRequests(counts, fetchWithTimeLimit(options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS, globalThis.fetch, outage)) },
    log: {
      debug: () => {},
      info: () => {},
      warn: (m: string) => options.log.warn(redact(m, options.token)),
      // The request log calls every non-2xx answer an error; a 304 is the cache working, and a
      // retried failure is said by the retry plugin's own warning. Only the final failure matters.
      error: (m: string) => (/ - 304 with id /.test(m) ? undefined : options.log.debug(redact(m, options.token))),
    },
  } as ConstructorParameters<typeof ClientWithPlugins>[0]);
}

/**
 * An Octokit with the throttling and retry plugins (no hand-written retry loops) and an on-disk
 * conditional-request cache: every GET is sent with the ETag of its last answer, a 304 is served
 * from the cache, and `offline` answers from the cache alone. Cache files hold the request's
 * path and the response, never a header of the request, so the token is never written.
 */
export function createGithubClient(options: GithubClientOptions): { octokit: GithubClient; counts: RequestCounts; graphql: CachedGraphql } {
  const counts: RequestCounts = { conditional: 0, unconditional: 0, notModified: 0, replayed: 0, graphql: 0, graphqlReused: 0 };
  const octokit = newClient(options, new ApiOutage(), counts);
  // Outside the throttling and retry plugins: what reaches here has outlived their retries.
  octokit.hook.wrap("request", async (request, requestOptions) => {
    try {
      return await request(requestOptions);
    } catch (error) {
      const endpoint = octokit.request.endpoint(requestOptions as never) as { method: string; url: string };
      const request = redact(`${endpoint.method} ${endpoint.url}`, options.token);
      const limited = rateLimitFailure(error, request);
      if (limited) throw limited;
      const forbidden = forbiddenFailure(error, request);
      if (forbidden) throw forbidden;
      // A server error that outlived the retries says what GitHub answered, and to what.
      const failed = error as { status?: number; response?: unknown; message: string };
      if (!(error instanceof GithubUnreachable) && typeof failed.status === "number" && failed.status >= 500 && failed.response)
        failed.message = `GitHub answered HTTP ${failed.status} to ${request} after every retry (${failed.message})`;
      throw error;
    }
  });
  const cache = new ConditionalGets(options, counts);
  octokit.hook.wrap("request", async (request, requestOptions) => {
    const endpoint = octokit.request.endpoint(requestOptions as never) as { method: string; url: string };
    if (endpoint.method !== "GET") return request(requestOptions);
    return cache.get(endpoint.url, request as never, requestOptions as never) as never;
  });
  const graphql = cachedGraphql(octokit, options, counts, (key) => cache.fileOf(key));
  return { octokit, counts, graphql };
}

export function readToken(env: NodeJS.ProcessEnv, tokenFile?: string): string | undefined {
  if (tokenFile) return readFileSync(tokenFile, "utf8").trim();
  return env.GITHUB_TOKEN || undefined;
}

/**
 * Counts every request where it leaves for the network, each attempt of a retried one included,
 * so the figures say what GitHub was sent (and what its rate limit was charged), never what was
 * only asked for: a request refused because the API is already known to be down is not sent.
 */
function countSentRequests(counts: RequestCounts, send: typeof fetch): typeof fetch {
  return async (input, init = {}) => {
    const method = String(init.method ?? "GET").toUpperCase();
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const graphql = method === "POST" && url.pathname.endsWith("/graphql");
    const conditional = new Headers(init.headers as HeadersInit | undefined).has("if-none-match");
    if (graphql) counts.graphql++;
    else if (conditional) counts.conditional++;
    else counts.unconditional++;
    const response = await send(input, init);
    if (response.status === 304) counts.notModified++;
    return response;
  };
}

/** What a stage asks of a GitHub client (StageContext.github): the API, where its token is, and its waits. */
export interface GithubClientSettings {
  baseUrl: string;
  offline: boolean;
  /** Relative to the config file; without it, GITHUB_TOKEN. */
  tokenFile?: string;
  waitUnitMs?: number;
  secondaryFallbackSeconds?: number;
  timeoutSeconds?: number;
  graphqlSpacingMs?: number;
}

export type OpenedGithubClient = ReturnType<typeof createGithubClient> & { token?: string };

/** A stage's GitHub client: its token read, its recording in the work directory's cache of this API (two APIs never share answers). */
export function openGithubClient(settings: GithubClientSettings, where: { baseDir: string; layout: WorkLayout; log: Logger }): OpenedGithubClient {
  const { baseUrl, offline, tokenFile, ...waits } = settings;
  const token = readToken(process.env, tokenFile ? resolve(where.baseDir, tokenFile) : undefined);
  return { ...createGithubClient({ baseUrl, token, cacheDir: where.layout.httpCache(baseUrl), offline, log: where.log, ...waits }), token };
}
