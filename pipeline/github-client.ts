import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { RequestError } from "@octokit/request-error";
import { Octokit } from "@octokit/rest";
import { writeFileAtomic } from "./atomic.ts";
import { canonicalJson, sha256 } from "./canonical.ts";
import { TransientFailure } from "./failures.ts";
import type { Logger } from "./logger.ts";

/**
 * A 200 whose JSON body was cut short reaches octokit as a string (it falls back to the raw text).
 * Applied before the retry plugin, this turns such a body into a 502 that the retry plugin retries
 * like any server error, so a broken body is never returned, cached or replayed.
 */
function completeJsonBodies(octokit: { hook: Octokit["hook"] }): void {
  octokit.hook.wrap("request", async (request, options) => {
    const response = await request(options);
    const type = String(response.headers["content-type"] ?? "");
    if (/json/i.test(type) && (typeof response.data === "string" || response.data === undefined)) {
      throw new RequestError(`the response body of ${options.method} ${options.url} is not complete JSON (${String(response.data ?? "").length} characters received); it may have been cut short`, 502, { request: options as never, response: response as never });
    }
    return response;
  });
}

const ClientWithPlugins = Octokit.plugin(completeJsonBodies, throttling, retry);
export type GithubClient = InstanceType<typeof ClientWithPlugins>;

export interface GithubClientOptions {
  baseUrl: string;
  token?: string;
  /** The on-disk HTTP cache; it is also the recording that `offline` replays. */
  cacheDir: string;
  offline?: boolean;
  log: Logger;
  /**
   * Milliseconds per second of retry backoff after a failure; tests shorten it. Rate-limit waits
   * always follow the server's reset time and Retry-After, in real seconds.
   */
  waitUnitMs?: number;
  maxRetries?: number;
}

export interface RequestCounts {
  /** Requests sent with If-None-Match. */
  conditional: number;
  /** Requests sent without it (nothing cached yet). */
  unconditional: number;
  /** Conditional requests GitHub answered with 304 (free against the rate limit). */
  notModified: number;
  /** Answered from the recording without any request (offline). */
  replayed: number;
}

interface CachedResponse {
  key: string;
  status: number;
  etag?: string;
  link?: string;
  data: unknown;
}

/** An offline run met a request the recording lacks: not a property of the input, so never cached. */
export class OfflineMiss extends TransientFailure {
  override name = "OfflineMiss";
}

/** Replaces the token wherever it might appear in a message. */
export function redact(text: string, token?: string): string {
  return token ? text.split(token).join("[REDACTED]") : text;
}

/**
 * An Octokit with the throttling and retry plugins (no hand-written retry loops) and an on-disk
 * conditional-request cache: every GET is sent with the ETag of its last answer, a 304 is served
 * from the cache, and `offline` answers from the cache alone. Cache files hold the request's
 * path and the response, never a header of the request, so the token is never written.
 */
export function createGithubClient(options: GithubClientOptions): { octokit: GithubClient; counts: RequestCounts } {
  const counts: RequestCounts = { conditional: 0, unconditional: 0, notModified: 0, replayed: 0 };
  const unit = options.waitUnitMs ?? 1000;
  const octokit = new ClientWithPlugins({
    baseUrl: options.baseUrl,
    auth: options.token,
    userAgent: "switch-swe",
    throttle: {
      retryAfterBaseValue: 1000,
      fallbackSecondaryRateRetryAfter: 60,
      onRateLimit: (retryAfter: number, request: { method: string; url: string }, _client: unknown, retryCount: number) => {
        options.log.warn(`GitHub rate limit reached on ${request.method} ${request.url}; waiting ${retryAfter}s for the reset (retry ${retryCount + 1})`);
        return retryCount < 3;
      },
      onSecondaryRateLimit: (retryAfter: number, request: { method: string; url: string }, _client: unknown, retryCount: number) => {
        options.log.warn(`GitHub secondary rate limit on ${request.method} ${request.url}; waiting ${retryAfter}s (retry ${retryCount + 1})`);
        return retryCount < 3;
      },
    },
    retry: { retries: options.maxRetries ?? 4, retryAfterBaseValue: unit },
    log: {
      debug: () => {},
      info: () => {},
      warn: (m: string) => options.log.warn(redact(m, options.token)),
      // The request log calls every non-2xx answer an error; a 304 is the cache working, and a
      // retried failure is said by the retry plugin's own warning. Only the final failure matters.
      error: (m: string) => (/ - 304 with id /.test(m) ? undefined : options.log.debug(redact(m, options.token))),
    },
  } as ConstructorParameters<typeof ClientWithPlugins>[0]);

  const pathOf = (url: string) => {
    const parsed = new URL(url, "http://base.invalid");
    const query = [...parsed.searchParams].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `${parsed.pathname.replace(new URL(options.baseUrl).pathname.replace(/\/$/, ""), "") || "/"}${query.length ? "?" + new URLSearchParams(query).toString() : ""}`;
  };
  const fileOf = (key: string) => join(options.cacheDir, key.slice(0, 2), `${key}.json`);

  octokit.hook.wrap("request", async (request, requestOptions) => {
    const endpoint = octokit.request.endpoint(requestOptions as never) as { method: string; url: string };
    if (endpoint.method !== "GET") return request(requestOptions);
    const key = sha256(`GET ${pathOf(endpoint.url)}`);
    const file = fileOf(key);
    const cached = readCached(file);
    const base = options.baseUrl.replace(/\/$/, "");
    const replay = (c: CachedResponse) => ({ status: 200, url: endpoint.url, headers: { ...(c.etag ? { etag: c.etag } : {}), ...(c.link ? { link: c.link.replaceAll("<{base}", `<${base}`) } : {}) }, data: c.data });
    if (options.offline) {
      if (!cached) throw new OfflineMiss(`offline: GET ${pathOf(endpoint.url)} is not in the recording ${options.cacheDir}; run once online to record it`);
      counts.replayed++;
      return replay(cached) as never;
    }
    // before-after-hook binds inner hooks to this same options object: change it in place.
    const headers = requestOptions.headers as Record<string, string>;
    if (cached?.etag) {
      headers["if-none-match"] = cached.etag;
      counts.conditional++;
    } else {
      delete headers["if-none-match"];
      counts.unconditional++;
    }
    try {
      const response = await request(requestOptions);
      if (!isJsonDocument(response.data)) throw new RequestError(`the response body of GET ${pathOf(endpoint.url)} is not a JSON document; not cached`, 502, { request: requestOptions as never, response: response as never });
      const link = response.headers.link?.split(base).join("{base}");
      // Links name the server; stored without it so a recording replays against any base URL.
      const entry: CachedResponse = { key: `GET ${pathOf(endpoint.url)}`, status: response.status, etag: response.headers.etag, link, data: response.data };
      await writeFileAtomic(file, canonicalJson(entry));
      return response;
    } catch (error) {
      if (cached && (error as { status?: number }).status === 304) {
        counts.notModified++;
        return replay(cached) as never;
      }
      if (error instanceof Error) error.message = redact(error.message, options.token);
      throw error;
    }
  });
  return { octokit, counts };
}

/** Every GitHub API answer the miner reads is a JSON object or array. */
function isJsonDocument(data: unknown): boolean {
  return data !== null && typeof data === "object" && !(data instanceof ArrayBuffer);
}

/**
 * A cache entry, if it is whole: an unreadable file or one holding a broken body (written by an
 * older version) is treated as absent, so the next request is unconditional and replaces it.
 */
function readCached(file: string): CachedResponse | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const entry = JSON.parse(readFileSync(file, "utf8")) as CachedResponse;
    return isJsonDocument(entry.data) ? entry : undefined;
  } catch {
    return undefined;
  }
}

export function readToken(env: NodeJS.ProcessEnv, tokenFile?: string): string | undefined {
  if (tokenFile) return readFileSync(tokenFile, "utf8").trim();
  return env.GITHUB_TOKEN || undefined;
}
