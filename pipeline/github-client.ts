import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Bottleneck from "bottleneck";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import { RequestError } from "@octokit/request-error";
import { Octokit } from "@octokit/rest";
import { writeFileAtomic } from "./atomic.ts";
import { canonicalJson, sha256 } from "./canonical.ts";
import { RunAbort, TransientFailure } from "./failures.ts";
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
      throw new RequestError(
        `the response body of ${options.method} ${options.url} is not complete JSON (${String(response.data ?? "").length} characters received); it may have been cut short`,
        502,
        { request: options as never, response: response as never },
      );
    }
    return response;
  });
}

/**
 * GitHub's secondary (abuse) limits come as a 403 or 429 with Retry-After, in words that vary
 * ("You have exceeded a secondary rate limit", "You have triggered an abuse detection mechanism",
 * or none at all). The throttling plugin waits out only the ones that say "secondary rate": this
 * names every such answer so, so it waits Retry-After and retries it instead of failing the run.
 */
function nameSecondaryLimits(octokit: { hook: Octokit["hook"] }): void {
  octokit.hook.wrap("request", async (request, options) => {
    try {
      return await request(options);
    } catch (error) {
      const e = error as { status?: number; message: string; response?: { headers?: Record<string, string | undefined> } };
      const retryAfter = e.response?.headers?.["retry-after"];
      if ((e.status === 403 || e.status === 429) && retryAfter !== undefined && !/\bsecondary rate\b/i.test(e.message)) {
        e.message = `${e.message} (a secondary rate limit: Retry-After ${retryAfter} s)`;
      }
      throw error;
    }
  });
}

/** A request that got no answer (or no whole body) within the time limit: the API hangs. */
export class NoAnswerInTime extends Error {
  override name = "NoAnswerInTime";
  /** So that the connection checks, and transientCause, read it as the network's moment. */
  readonly code = "ETIMEDOUT";
}

/**
 * `fetch` with a time limit on each phase of an exchange: the connection and the answer's status
 * and headers within `seconds`, then the whole body within `seconds` more (read here, so a body
 * that stalls halfway is caught too). An API that accepts connections and never answers costs
 * one time limit per attempt, never undici's five minutes.
 */
export function fetchWithTimeLimit(seconds: number, base: typeof fetch = globalThis.fetch): typeof fetch {
  return async (input, init = {}) => {
    const controller = new AbortController();
    const outer = init.signal;
    const follow = () => controller.abort(outer?.reason);
    outer?.addEventListener("abort", follow);
    const method = String(init.method ?? "GET").toUpperCase();
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const limit = (what: string) =>
      setTimeout(
        () => controller.abort(new NoAnswerInTime(`no ${what} from ${method} ${url} within ${seconds} s (the API accepts the connection but does not answer)`)),
        seconds * 1000,
      );
    let timer = limit("answer");
    try {
      const response = await base(input, { ...init, signal: controller.signal });
      clearTimeout(timer);
      timer = limit("whole body");
      const empty = method === "HEAD" || response.status === 204 || response.status === 205 || response.status === 304;
      const body = empty ? null : await response.arrayBuffer();
      const whole = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
      // the address it came from after redirects: a renamed repository's new home is read from it
      Object.defineProperty(whole, "url", { value: response.url });
      return whole;
    } catch (error) {
      if (controller.signal.reason instanceof NoAnswerInTime) throw controller.signal.reason;
      throw error;
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", follow);
    }
  };
}

/** Errors of the connection itself (nothing answered in time, or at all): the server is down, out of reach, or hung. */
function isConnectionFailure(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (
      typeof code === "string" &&
      /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ENETUNREACH|EHOSTUNREACH|ETIMEDOUT|UND_ERR_SOCKET|UND_ERR_CONNECT_TIMEOUT|UND_ERR_HEADERS_TIMEOUT|UND_ERR_BODY_TIMEOUT)$/.test(
        code,
      )
    )
      return true;
  }
  return (error as { status?: number }).status === 500 && /fetch failed|other side closed|socket hang up/i.test(String((error as Error).message));
}

function isTimeout(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) if (e instanceof NoAnswerInTime) return true;
  return false;
}

/**
 * GitHub cannot be used this run (unreachable, hung, or failing every request): said once, and
 * every later request fails with it at once. The stage stops taking records (RunAbort): nothing
 * of it is cached, and the next run takes up where this one stopped.
 */
export class GithubUnreachable extends RunAbort {
  override name = "GithubUnreachable";
}

/** Failed connections in a row, with no answer between, after which the API is taken as unreachable. */
const UNREACHABLE_AFTER = 5;
/** Requests in a row that got no answer within the time limit, after which the API is taken as hung. */
const HUNG_AFTER = 3;
/**
 * 5xx answers in a row, across requests, after which the API is taken as failing. GitHub's
 * passing bursts (a few 502s) stay under it and are retried request by request.
 */
const FAILING_AFTER = 10;

/**
 * The API's state is one fact about the run, not one per request: after UNREACHABLE_AFTER failed
 * connections, HUNG_AFTER requests without an answer in time, or FAILING_AFTER server errors in a
 * row, every request (a retry of another one included) fails at once with GithubUnreachable, so
 * a run against an API that is down, hung or failing ends within a bounded time and sends
 * nothing more. Any other answer closes the counts again.
 */
function stopWhenUnreachable(octokit: { hook: Octokit["hook"] }): void {
  let connections = 0;
  let timeouts = 0;
  let serverErrors: number[] = [];
  let fact: string | undefined;
  octokit.hook.wrap("request", async (request, options) => {
    if (fact) throw new GithubUnreachable(fact);
    const base = () => new URL(String((options as { baseUrl?: string }).baseUrl ?? "https://api.github.com")).origin;
    const what = () => {
      const endpoint = options as { method?: string; url?: string };
      return `${endpoint.method ?? "GET"} ${String(endpoint.url ?? "")}`;
    };
    try {
      const response = await request(options);
      connections = timeouts = 0;
      serverErrors = [];
      return response;
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (isConnectionFailure(error)) {
        connections++;
        timeouts = isTimeout(error) ? timeouts + 1 : 0;
        serverErrors = [];
        if (timeouts >= HUNG_AFTER && !fact)
          fact = `the GitHub API at ${base()} accepts connections but does not answer: ${timeouts} requests in a row got no answer within the time limit (last: ${(error as Error).message}); no more requests are sent this run`;
        else if (connections >= UNREACHABLE_AFTER && !fact)
          fact = `the GitHub API at ${base()} cannot be reached (${connections} connections failed in a row: ${(error as Error).message}); no more requests are sent this run`;
      } else if (typeof status === "number" && status >= 500) {
        connections = timeouts = 0;
        serverErrors.push(status);
        if (serverErrors.length >= FAILING_AFTER && !fact) {
          const statuses = [...new Set(serverErrors)].sort().join(", ");
          fact = `the GitHub API at ${base()} is failing: it answered HTTP ${statuses} to ${serverErrors.length} requests in a row (last: HTTP ${status} to ${what()}); no more requests are sent this run`;
        }
      } else {
        connections = timeouts = 0;
        serverErrors = [];
      }
      throw fact ? new GithubUnreachable(fact) : error;
    }
  });
}

/** A rate limit that GitHub kept answering after every wait the client allows: a fact of the moment, with when it lifts. */
export class GithubRateLimited extends TransientFailure {
  override name = "GithubRateLimited";
}

/**
 * A 403 or 429 that is a rate limit and outlived the throttling plugin's retries becomes
 * GithubRateLimited, naming the limit's kind and when it lifts: never an unexplained 403 (which
 * is no transient cause) and so never an internal error.
 */
export function rateLimitFailure(error: unknown, request: string): GithubRateLimited | undefined {
  const e = error as { status?: number; message?: string; response?: { headers?: Record<string, string | undefined> } };
  if (e.status !== 403 && e.status !== 429) return undefined;
  const headers = e.response?.headers ?? {};
  const retryAfter = headers["retry-after"];
  const exhausted = headers["x-ratelimit-remaining"] === "0";
  const secondary = retryAfter !== undefined || /secondary rate|abuse detection/i.test(e.message ?? "");
  if (!secondary && !exhausted && !/rate limit/i.test(e.message ?? "")) return undefined;
  const reset = Number(headers["x-ratelimit-reset"]);
  const lifts =
    secondary && retryAfter !== undefined
      ? `it asked to wait ${retryAfter} s more`
      : Number.isFinite(reset) && reset > 0
        ? `it resets at ${new Date(reset * 1000).toISOString()}`
        : "it gave no reset time";
  return new GithubRateLimited(
    `GitHub's ${secondary ? "secondary" : "primary"} rate limit (HTTP ${e.status}) still held on ${request} after every retry; ${lifts}: run again after that (finished records are kept)`,
  );
}

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

/**
 * The most items GitHub returns from a pull request's commit list (pulls.listCommits) and file
 * list (pulls.listFiles), over all pages. It says nothing when it stops there.
 */
export const GITHUB_LIST_CAPS = { commits: 250, files: 3000 } as const;

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
