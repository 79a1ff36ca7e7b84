import { setMaxListeners } from "node:events";
import type { Octokit } from "@octokit/rest";
import { RequestError } from "@octokit/request-error";
import { RunAbort, TransientFailure } from "./failures.ts";

/**
 * The octokit plugins for what a GitHub request may meet besides an answer: a body cut short, a
 * secondary rate limit, a request that hangs, an API that cannot be reached or fails every time.
 * github-client.ts puts them into the client, before the throttling and retry plugins.
 */

/**
 * A 200 whose JSON body was cut short reaches octokit as a string (it falls back to the raw text).
 * Applied before the retry plugin, this turns such a body into a 502 that the retry plugin retries
 * like any server error, so a broken body is never returned, cached or replayed.
 */
export function completeJsonBodies(octokit: { hook: Octokit["hook"] }): void {
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
export function nameSecondaryLimits(octokit: { hook: Octokit["hook"] }): void {
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
export function fetchWithTimeLimit(seconds: number, base: typeof fetch = globalThis.fetch, outage?: ApiOutage): typeof fetch {
  return async (input, init = {}) => {
    const controller = new AbortController();
    const outer = init.signal;
    const follow = () => controller.abort(outer?.reason);
    outer?.addEventListener("abort", follow);
    // An outage declared while this request is under way ends it too: nothing waits on an API already given up.
    const stop = () => controller.abort(outage?.signal.reason);
    outage?.signal.addEventListener("abort", stop);
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
      outage?.signal.removeEventListener("abort", stop);
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
 * Whether the API can be used this run: one fact for every request of one client. Once declared,
 * every request fails with it at once, a request under way is ended, and a retry waiting out its
 * backoff stops waiting (so nothing sits idle between the fact and the run's summary).
 */
export class ApiOutage {
  private fact?: string;
  private readonly controller = new AbortController();

  constructor() {
    // Every request under way and every retry waiting listens to it: as many as the run's concurrency allows, not a leak.
    setMaxListeners(0, this.controller.signal);
  }

  /** Aborted, with GithubUnreachable as its reason, when the fact is declared. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get declared(): string | undefined {
    return this.fact;
  }

  declare(fact: string): void {
    if (this.fact) return;
    this.fact = fact;
    this.controller.abort(new GithubUnreachable(fact));
  }

  /** Throws the fact, once there is one. */
  check(): void {
    if (this.fact) throw new GithubUnreachable(this.fact);
  }

  /** Waits `ms`, or until the fact is declared, whichever comes first; then throws the fact if there is one. */
  async pause(ms: number): Promise<void> {
    this.check();
    const signal = this.controller.signal;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done);
    });
    this.check();
  }
}

/** What the outage plugins read from the client's options: the shared fact, and the retry backoff's unit. */
export interface OutageOptions {
  outage?: ApiOutage;
  /** Milliseconds per unit of the retry backoff (attempt n waits n² units before it is sent again). */
  retryBackoffMs?: number;
}

/** The API's state as the answers come: counts of failures in a row, and the fact they add up to. */
class ApiState {
  private connections = 0;
  private timeouts = 0;
  private serverErrors: number[] = [];

  constructor(private readonly outage: ApiOutage) {}

  answered(): void {
    this.connections = this.timeouts = 0;
    this.serverErrors = [];
  }

  /** Counts one failed request; declares the fact when a count reaches its limit. */
  failed(error: unknown, base: string, what: string): void {
    const status = (error as { status?: number }).status;
    if (isConnectionFailure(error)) {
      this.connections++;
      this.timeouts = isTimeout(error) ? this.timeouts + 1 : 0;
      this.serverErrors = [];
      if (this.timeouts >= HUNG_AFTER)
        this.outage.declare(
          `the GitHub API at ${base} accepts connections but does not answer: ${this.timeouts} requests in a row got no answer within the time limit (last: ${(error as Error).message}); no more requests are sent this run`,
        );
      else if (this.connections >= UNREACHABLE_AFTER)
        this.outage.declare(
          `the GitHub API at ${base} cannot be reached (${this.connections} connections failed in a row: ${(error as Error).message}); no more requests are sent this run`,
        );
    } else if (typeof status === "number" && status >= 500) {
      this.connections = this.timeouts = 0;
      this.serverErrors.push(status);
      if (this.serverErrors.length >= FAILING_AFTER) {
        const statuses = [...new Set(this.serverErrors)].sort().join(", ");
        this.outage.declare(
          `the GitHub API at ${base} is failing: it answered HTTP ${statuses} to ${this.serverErrors.length} requests in a row (last: HTTP ${status} to ${what}); no more requests are sent this run`,
        );
      }
    } else this.answered();
  }
}

/**
 * The API's state is one fact about the run, not one per request: after UNREACHABLE_AFTER failed
 * connections, HUNG_AFTER requests without an answer in time, or FAILING_AFTER server errors in a
 * row, every request (a retry of another one included) fails at once with GithubUnreachable, so
 * a run against an API that is down, hung or failing ends within a bounded time and sends
 * nothing more. Any other answer closes the counts again.
 */
export function stopWhenUnreachable(octokit: { hook: Octokit["hook"] }, options: object = {}): void {
  const outage = (options as OutageOptions).outage ?? new ApiOutage();
  const state = new ApiState(outage);
  octokit.hook.wrap("request", async (request, requestOptions) => {
    outage.check();
    const endpoint = requestOptions as { baseUrl?: string; method?: string; url?: string };
    try {
      const response = await request(requestOptions);
      state.answered();
      return response;
    } catch (error) {
      // Ended by the outage itself (another request declared it meanwhile): its fact, not one more count.
      outage.check();
      state.failed(error, new URL(String(endpoint.baseUrl ?? "https://api.github.com")).origin, `${endpoint.method ?? "GET"} ${String(endpoint.url ?? "")}`);
      outage.check();
      throw error;
    }
  });
}

/**
 * The waits between a request's attempts (n² backoff units before attempt n + 1), taken here
 * rather than by the retry plugin (which is given no wait of its own), so that an outage declared
 * meanwhile ends them: a retry waiting out its backoff against an API already known to be down
 * fails with that fact at once. Placed between the throttling plugin and the retry plugin: every
 * call that reaches it is one attempt of the retry plugin (rate-limit waits are the throttling
 * plugin's own, after GitHub's reset time or Retry-After).
 */
export function backOffUntilOutage(octokit: { hook: Octokit["hook"] }, options: object = {}): void {
  const outage = (options as OutageOptions).outage ?? new ApiOutage();
  const unit = (options as OutageOptions).retryBackoffMs ?? 1000;
  // The retry plugin sends every attempt of one request with the same options object.
  const attempts = new WeakMap<object, number>();
  octokit.hook.wrap("request", async (request, requestOptions) => {
    const before = attempts.get(requestOptions) ?? 0;
    attempts.set(requestOptions, before + 1);
    if (before > 0) await outage.pause(before ** 2 * unit);
    return request(requestOptions);
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

/**
 * A 403 that is no rate limit: GitHub refuses this token the resource. A fine-grained or app token
 * without access is answered "Resource not accessible by integration", with quota left and no
 * Retry-After; the X-Accepted-GitHub-Permissions header names what it would need. A fact about the
 * token and the resource, like a 404: never retried, never transient, and said with what to grant.
 */
export class GithubForbidden extends Error {
  override name = "GithubForbidden";
  readonly status = 403;
}

/** A 403 that rateLimitFailure did not take as a rate limit: a GithubForbidden naming the request, GitHub's words and the permission it asks. */
export function forbiddenFailure(error: unknown, request: string): GithubForbidden | undefined {
  const e = error as { status?: number; response?: { data?: unknown; headers?: Record<string, string | undefined> } };
  if (e.status !== 403 || rateLimitFailure(error, request)) return undefined;
  const said = (e.response?.data as { message?: unknown } | undefined)?.message;
  const needs = e.response?.headers?.["x-accepted-github-permissions"];
  return new GithubForbidden(
    `GitHub refuses this token ${request}: HTTP 403 "${typeof said === "string" ? said : "Forbidden"}"${needs ? ` (the token needs ${needs})` : ""}`,
  );
}

/** Replaces the token wherever it might appear in a message. */
export function redact(text: string, token?: string): string {
  return token ? text.split(token).join("[REDACTED]") : text;
}

/**
 * The most items GitHub returns from a pull request's commit list (pulls.listCommits) and file
 * list (pulls.listFiles), over all pages. It says nothing when it stops there.
 */
export const GITHUB_LIST_CAPS = { commits: 250, files: 3000 } as const;
