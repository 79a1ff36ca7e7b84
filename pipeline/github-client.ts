import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Bottleneck from "bottleneck";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { RequestError } from "@octokit/request-error";
import { Octokit } from "@octokit/rest";
import { writeFileAtomic } from "./atomic.ts";
import { completeJsonBodies, fetchWithTimeLimit, GithubUnreachable, nameSecondaryLimits, rateLimitFailure, stopWhenUnreachable } from "./github-plugins.ts";
import { canonicalJson, sha256 } from "./canonical.ts";
import { TransientFailure } from "./failures.ts";
import type { Logger } from "./logger.ts";

const ClientWithPlugins = Octokit.plugin(completeJsonBodies, nameSecondaryLimits, stopWhenUnreachable, throttling, retry);
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
  /** Seconds to wait after a secondary rate limit that came without Retry-After (GitHub: at least 60). */
  secondaryFallbackSeconds?: number;
  /**
   * Milliseconds between GraphQL requests. The throttling plugin sends GraphQL one at a time, a
   * second apart, as GitHub asks of POST requests; a local API needs no such spacing.
   */
  graphqlSpacingMs?: number;
  /** Hours a recorded 404 stays the answer before it is asked again (something that did not exist may since). */
  recheckMissingHours?: number;
  /** Seconds each request may take to answer, and then to send its whole body (DEFAULT_TIMEOUT_SECONDS). */
  timeoutSeconds?: number;
}

/**
 * A request's time limit. GitHub answers within a few seconds, large lists included; a request
 * still waiting after this is hung, and HUNG_AFTER of them stop the run (about 1.5 minutes).
 */
export const DEFAULT_TIMEOUT_SECONDS = 30;

export interface RequestCounts {
  /** Requests sent with If-None-Match. */
  conditional: number;
  /** Requests sent without it (nothing cached yet). */
  unconditional: number;
  /** Conditional requests GitHub answered with 304 (free against the rate limit). */
  notModified: number;
  /** Answered from the recording without any request (offline). */
  replayed: number;
  /** GraphQL queries sent (GitHub's GraphQL API has no ETags, so none is conditional). */
  graphql: number;
  /** GraphQL answers reused from the recording because what they describe has not changed since. */
  graphqlReused: number;
}

/** A GraphQL answer: its data, and the errors GitHub reported next to it (NOT_FOUND parts). */
export interface GraphqlAnswer {
  data: Record<string, unknown>;
  errors: { type?: string; path?: (string | number)[]; message: string }[];
}

/** Asks a GraphQL query, or reuses the recorded answer while `freshness` is unchanged. */
export type CachedGraphql = (query: string, variables: Record<string, unknown>, freshness: string) => Promise<GraphqlAnswer>;

interface CachedResponse {
  key: string;
  status: number;
  etag?: string;
  link?: string;
  data: unknown;
  /** When a 404 was recorded: it is the answer, with no request, until it is older than `recheckMissingHours`. */
  recorded_at?: string;
}

/** An offline run met a request the recording lacks: not a property of the input, so never cached. */
export class OfflineMiss extends TransientFailure {
  override name = "OfflineMiss";
}

/** Replaces the token wherever it might appear in a message. */
export function redact(text: string, token?: string): string {
  return token ? text.split(token).join("[REDACTED]") : text;
}

/** Retries of a request GitHub rate-limits, each after the wait GitHub asks for. */
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
function newClient(options: GithubClientOptions): GithubClient {
  const unit = options.waitUnitMs ?? 1000;
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
    retry: { retries: options.maxRetries ?? 4, retryAfterBaseValue: unit },
    request: { fetch: fetchWithTimeLimit(options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) },
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
  const octokit = newClient(options);
  // Outside the throttling and retry plugins: what reaches here has outlived their retries.
  octokit.hook.wrap("request", async (request, requestOptions) => {
    try {
      return await request(requestOptions);
    } catch (error) {
      const endpoint = octokit.request.endpoint(requestOptions as never) as { method: string; url: string };
      const request = redact(`${endpoint.method} ${endpoint.url}`, options.token);
      const limited = rateLimitFailure(error, request);
      if (limited) throw limited;
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

type HookRequest = (options: HookOptions) => Promise<{ status: number; url: string; headers: Record<string, string | undefined>; data: unknown }>;
type HookOptions = Record<string, unknown> & { headers: Record<string, string> };

/**
 * The cache behind every GET: one file per request path (the query sorted), holding the answer
 * and its ETag; a 404 or 410 is recorded as an answer too.
 */
class ConditionalGets {
  private readonly renamed: RenamedRepositories;
  private readonly base: string;

  constructor(
    private readonly options: GithubClientOptions,
    private readonly counts: RequestCounts,
  ) {
    this.renamed = new RenamedRepositories(options);
    this.base = options.baseUrl.replace(/\/$/, "");
  }

  pathOf(url: string): string {
    const parsed = new URL(url, "http://base.invalid");
    const query = [...parsed.searchParams].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `${parsed.pathname.replace(new URL(this.options.baseUrl).pathname.replace(/\/$/, ""), "") || "/"}${query.length ? "?" + new URLSearchParams(query).toString() : ""}`;
  }

  fileOf(key: string): string {
    return join(this.options.cacheDir, key.slice(0, 2), `${key}.json`);
  }

  async get(url: string, request: HookRequest, requestOptions: HookOptions): Promise<unknown> {
    const path = this.pathOf(url);
    const repoMatch = this.renamed.redirect(path, requestOptions);
    const file = this.fileOf(sha256(`GET ${path}`));
    const cached = readCached(file);
    if (this.options.offline) {
      if (!cached) throw new OfflineMiss(`offline: GET ${path} is not in the recording ${this.options.cacheDir}; run once online to record it`);
      this.counts.replayed++;
      return this.replay(cached, url, path, requestOptions);
    }
    // 410 Gone is permanent: a recorded one is the answer, online too, with no request. So is a
    // recorded 404 for a while (recheckMissingHours): what did not exist rarely starts to.
    const recheckMs = (this.options.recheckMissingHours ?? 168) * 3600_000;
    if (cached?.status === 410 || (cached?.status === 404 && cached.recorded_at && Date.now() - Date.parse(cached.recorded_at) < recheckMs)) {
      this.counts.replayed++;
      return this.replay(cached, url, path, requestOptions);
    }
    // before-after-hook binds inner hooks to this same options object: change it in place.
    const headers = requestOptions.headers;
    if (cached?.etag) {
      headers["if-none-match"] = cached.etag;
      this.counts.conditional++;
    } else {
      delete headers["if-none-match"];
      this.counts.unconditional++;
    }
    try {
      const response = await request(requestOptions);
      this.renamed.note(repoMatch, response.url, response.data);
      if (!isJsonDocument(response.data))
        throw new RequestError(`the response body of GET ${path} is not a JSON document; not cached`, 502, {
          request: requestOptions as never,
          response: response as never,
        });
      // Links name the server; stored without it so a recording replays against any base URL.
      const link = response.headers.link?.split(this.base).join("{base}");
      const entry: CachedResponse = { key: `GET ${path}`, status: response.status, etag: response.headers.etag, link, data: response.data };
      await writeFileAtomic(file, canonicalJson(entry));
      return response;
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (cached && status === 304) {
        this.counts.notModified++;
        return this.replay(cached, url, path, requestOptions);
      }
      await this.recordMissing(file, path, error);
      if (error instanceof Error) error.message = redact(error.message, this.options.token);
      throw error;
    }
  }

  /** Missing and deleted things are answers too: recorded, so an offline run replays them. */
  private async recordMissing(file: string, path: string, error: unknown): Promise<void> {
    const status = (error as { status?: number }).status;
    const body = (error as { response?: { data?: unknown } }).response?.data;
    if ((status === 404 || status === 410) && isJsonDocument(body)) {
      await writeFileAtomic(
        file,
        canonicalJson({
          key: `GET ${path}`,
          status,
          data: body,
          ...(status === 404 ? { recorded_at: new Date().toISOString() } : {}),
        } satisfies CachedResponse),
      );
    }
  }

  private replay(c: CachedResponse, url: string, path: string, requestOptions: HookOptions): unknown {
    if (c.status === 404 || c.status === 410) {
      const response = { status: c.status, url, headers: {}, data: c.data };
      throw new RequestError(`${(c.data as { message?: string }).message ?? "Not Found"} (recorded answer to GET ${path})`, c.status, {
        request: requestOptions as never,
        response: response as never,
      });
    }
    return {
      status: 200,
      url,
      headers: { ...(c.etag ? { etag: c.etag } : {}), ...(c.link ? { link: c.link.replaceAll("<{base}", `<${this.base}`) } : {}) },
      data: c.data,
    };
  }
}

/**
 * Repositories GitHub redirected (renamed, moved to another owner): by their old name, the
 * /repositories/{id} path their requests go to directly, instead of a 301 and a second request
 * each. A request is cached under the name it was asked by.
 */
class RenamedRepositories {
  private readonly moved = new Map<string, string>();
  private static readonly PATH = /^\/repos\/([^/]+)\/([^/?]+)(.*)$/;

  constructor(private readonly options: GithubClientOptions) {}

  /** Points a request of a moved repository at its new address (in place: the hook's options object); returns the path's parts. */
  redirect(path: string, requestOptions: Record<string, unknown>): RegExpExecArray | null {
    const match = RenamedRepositories.PATH.exec(path);
    const movedTo = match ? this.moved.get(`${match[1]}/${match[2]}`.toLowerCase()) : undefined;
    if (movedTo) {
      for (const k of Object.keys(requestOptions)) if (!["method", "headers", "request", "baseUrl", "mediaType"].includes(k)) delete requestOptions[k];
      requestOptions.url = `${this.options.baseUrl.replace(/\/$/, "")}${movedTo}${match![3]}`;
    }
    return match;
  }

  /**
   * A request under a repository's name answered from /repositories/{id}/… was redirected there:
   * the repository was renamed or moved. Remembered for the run (its later requests go there
   * directly, with no 301 each) and said once, naming the old name and the new. An issue's
   * redirect is not the repository's: it is a transfer of that issue alone.
   */
  note(match: RegExpExecArray | null, finalUrl: string | undefined, data: unknown): void {
    if (!match || !finalUrl || /^\/issues\//.test(match[3]!)) return;
    const id = /\/repositories\/(\d+)(?:\/|\?|$)/.exec(new URL(finalUrl).pathname)?.[1];
    const name = `${match[1]}/${match[2]}`.toLowerCase();
    if (!id || this.moved.has(name)) return;
    this.moved.set(name, `/repositories/${id}`);
    const now = currentName(data);
    this.options.log.warn(
      `GitHub redirects ${match[1]}/${match[2]} to ${now ?? `repository ${id}`} (renamed or moved; repository ${id}): its requests now go there directly for this run; its records keep the name ${match[1]}/${match[2]} and each notes the new one (rename it in the config and its profile to follow GitHub)`,
    );
  }
}

/** A repository's name as GitHub gives it now, from what an answer under it holds: the repository, a pull request, or a list of them. */
export function currentName(data: unknown): string | undefined {
  const first = Array.isArray(data) ? data[0] : data;
  const record = first as { full_name?: unknown; base?: { repo?: { full_name?: unknown } } } | undefined;
  const name = record?.full_name ?? record?.base?.repo?.full_name;
  return typeof name === "string" ? name : undefined;
}

/**
 * GraphQL through the same client (token, throttling, retries), recorded beside the REST answers.
 * POST has no ETag to revalidate with: an answer is keyed by the query, its variables and what it
 * depends on (`freshness`, e.g. the pull request's updated_at), and reused while they are equal.
 */
function cachedGraphql(octokit: GithubClient, options: GithubClientOptions, counts: RequestCounts, fileOf: (key: string) => string): CachedGraphql {
  return async (query, variables, freshness) => {
    const key = sha256(`POST /graphql ${canonicalJson({ query, variables, freshness })}`);
    const file = fileOf(key);
    const cached = readCached(file);
    if (cached) {
      if (options.offline) counts.replayed++;
      else counts.graphqlReused++;
      return cached.data as GraphqlAnswer;
    }
    if (options.offline)
      throw new OfflineMiss(
        `offline: the GraphQL query for ${JSON.stringify(variables)} is not in the recording ${options.cacheDir}; run once online to record it`,
      );
    counts.graphql++;
    let answer: GraphqlAnswer;
    try {
      answer = { data: (await octokit.graphql(query, variables)) as Record<string, unknown>, errors: [] };
    } catch (error) {
      const partial = error as { name?: string; data?: Record<string, unknown>; errors?: GraphqlAnswer["errors"] };
      // GitHub answers a query naming something that is gone with the rest of the data and a
      // NOT_FOUND error per missing part; any other error is a failure of the request.
      if (partial.name === "GraphqlResponseError" && partial.data && partial.errors?.every((e) => e.type === "NOT_FOUND")) {
        answer = { data: partial.data, errors: partial.errors.map((e) => ({ type: e.type, path: e.path, message: e.message })) };
      } else {
        if (error instanceof Error) error.message = redact(error.message, options.token);
        throw error;
      }
    }
    await writeFileAtomic(file, canonicalJson({ key: `POST /graphql ${JSON.stringify(variables)}`, status: 200, data: answer }));
    return answer;
  };
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
