import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { RequestError } from "@octokit/request-error";
import { writeFileAtomic } from "./atomic.ts";
import { canonicalJson, sha256 } from "./canonical.ts";
import { TransientFailure } from "./failures.ts";
import { redact } from "./github-plugins.ts";
import type { Logger } from "./logger.ts";

/**
 * The GitHub client's recording: every GET's answer on disk with its ETag (sent again as
 * If-None-Match, a 304 served from it), GraphQL answers keyed by what they depend on, what is
 * gone (404, 410), and the repositories GitHub redirected. It is also what `offline` replays.
 */

/** What the recording needs of the client's options. */
export interface RecordingOptions {
  baseUrl: string;
  token?: string;
  /** The on-disk HTTP cache; it is also the recording that `offline` replays. */
  cacheDir: string;
  offline?: boolean;
  log: Logger;
  /** Hours a recorded 404 stays the answer before it is asked again (something that did not exist may since). */
  recheckMissingHours?: number;
}

/** Requests sent (each attempt, retries included, counted where it leaves: countSentRequests) and answers taken from the recording. */
export interface RequestCounts {
  /** REST requests sent with If-None-Match. */
  conditional: number;
  /** REST requests sent without it (nothing cached yet). */
  unconditional: number;
  /** Conditional requests GitHub answered with 304 (free against the rate limit). */
  notModified: number;
  /** Answered from the recording without any request (offline, or a recorded 404 / 410). */
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

type HookRequest = (options: HookOptions) => Promise<{ status: number; url: string; headers: Record<string, string | undefined>; data: unknown }>;
type HookOptions = Record<string, unknown> & { headers: Record<string, string> };

/**
 * The cache behind every GET: one file per request path (the query sorted), holding the answer
 * and its ETag; a 404 or 410 is recorded as an answer too.
 */
export class ConditionalGets {
  private readonly renamed: RenamedRepositories;
  private readonly base: string;

  constructor(
    private readonly options: RecordingOptions,
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
    // (Requests are counted where they are sent, retries included: countSentRequests.)
    const headers = requestOptions.headers;
    if (cached?.etag) headers["if-none-match"] = cached.etag;
    else delete headers["if-none-match"];
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

  constructor(private readonly options: RecordingOptions) {}

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
export function cachedGraphql(
  octokit: { graphql: (query: string, variables: Record<string, unknown>) => Promise<unknown> },
  options: RecordingOptions,
  counts: RequestCounts,
  fileOf: (key: string) => string,
): CachedGraphql {
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
