import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { GITHUB_LIST_CAPS } from "../pipeline/github-plugins.ts";
import { GraphqlFake } from "./github-graphql.ts";
import { basicError, PULL_ONLY_FIELDS } from "./github-shapes.ts";
import type { RepoRecords } from "./records.ts";

/** A fault to inject into the next `count` matching requests. */
export type Fault =
  | { kind: "server_error"; count: number; status?: 500 | 502 | 503; path?: RegExp }
  | { kind: "reset"; count: number; path?: RegExp }
  | { kind: "slow"; count: number; delayMs: number; path?: RegExp }
  | { kind: "truncate"; count: number; path?: RegExp }
  /** A whole 200 answer (its length matching) whose JSON text stops halfway: what a broken proxy sends. */
  | { kind: "cut_json"; count: number; path?: RegExp }
  /** GitHub sends Retry-After with most secondary limits, not all: without it, clients wait at least a minute. */
  | { kind: "secondary_rate_limit"; count: number; retryAfterSeconds?: number; path?: RegExp }
  /** A secondary limit answered 429 instead of 403, as GitHub documents it may be. */
  | { kind: "too_many_requests"; count: number; retryAfterSeconds?: number; path?: RegExp }
  /** GitHub's older wording of a secondary limit (abuse detection): a 403 with Retry-After that does not say "secondary rate". */
  | { kind: "abuse_detection"; count: number; retryAfterSeconds: number; path?: RegExp }
  | { kind: "not_found"; count: number; path?: RegExp }
  /**
   * GitHub's answer to a fine-grained or app token without access to the resource: 403 with the
   * recorded body "Resource not accessible by integration", quota left in the X-RateLimit-*
   * headers, no Retry-After, and X-Accepted-GitHub-Permissions naming what the token would need.
   */
  | { kind: "not_accessible"; count: number; permissions?: string; path?: RegExp }
  /** A hung proxy or load balancer: the connection is accepted and nothing is ever answered. */
  | { kind: "hang"; count: number; path?: RegExp }
  /** The status line and headers, half the body, then nothing more on an open connection. */
  | { kind: "stall_body"; count: number; path?: RegExp };

export interface RequestLogEntry {
  method: string;
  path: string;
  status: number;
  conditional: boolean;
  authorized: boolean;
  /** When the request arrived (performance.now(), milliseconds): for benchmarks of what a client does between requests. */
  received_ms: number;
  fault?: Fault["kind"];
  /** With `captureResponses`: what was answered, for checking it against GitHub's published description. */
  response?: { headers: Record<string, string>; body: string };
  /** GraphQL requests: the query document and its variables. */
  graphql?: { query: string; variables: Record<string, unknown> };
}

export interface FakeGithubOptions {
  /** Directory of `<owner>__<name>.json` record files written by the demo corpus builder. */
  recordsDir: string;
  /** Primary rate limit per window (default 5000 an hour, as for a token). */
  rateLimit?: number;
  rateWindowMs?: number;
  /** Keep each answer's headers and body in the request log. */
  captureResponses?: boolean;
  /**
   * How many items a list returns at most, over all its pages: GitHub's pulls.listCommits stops at
   * 250 commits and pulls.listFiles at 3,000 files, without saying so.
   */
  listCaps?: { commits?: number; files?: number };
  /** Old names of repositories, each redirected (301) to the repository it names now, as GitHub does after a rename or transfer. */
  renamed?: Record<string, string>;
}

const DOCS = "https://docs.github.com/rest";
const GRAPHQL_AUTH_DOCS = "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql";

/**
 * A local GitHub API over the demo corpus's records. REST: GitHub's paths, object shapes (checked
 * against GitHub's OpenAPI description by the contract test), pagination with `Link` URLs in
 * GitHub's `/repositories/{id}/...` form, the list caps, ETag / If-None-Match → 304, X-RateLimit-*
 * headers, a primary rate limit (403 with a reset time), 410 for deleted issues and 301 for
 * transferred ones (the issue only: its comments and timeline answer 404 at the old address, as
 * on GitHub), and injectable faults (5xx bursts, connection resets, slow bodies, truncated
 * JSON, secondary rate limits as 403 or 429, with or without Retry-After). GraphQL: `POST /graphql`
 * executed against GitHub's published schema, for authenticated requests only, as on GitHub.
 * For the demo and for tests; it binds to loopback only.
 */
export class FakeGithub {
  private server?: Server;
  private readonly repos = new Map<string, RepoRecords>();
  private readonly reposById = new Map<number, RepoRecords>();
  private readonly graphqlFake: GraphqlFake;
  private readonly caps: { commits: number; files: number };
  private readonly capture: boolean;
  private graphqlUsed = 0;
  private readonly faults: Fault[] = [];
  readonly log: RequestLogEntry[] = [];
  private used = 0;
  private windowStart = Date.now();
  private readonly limit: number;
  private readonly windowMs: number;
  private readonly renamed: Map<string, string>;

  constructor(options: FakeGithubOptions) {
    for (const file of readdirSync(options.recordsDir)
      .filter((f) => f.endsWith(".json"))
      .sort()) {
      const records = JSON.parse(readFileSync(join(options.recordsDir, file), "utf8")) as RepoRecords;
      this.repos.set(String(records.repository.full_name).toLowerCase(), records);
      this.reposById.set(Number(records.repository.id), records);
    }
    this.graphqlFake = new GraphqlFake(this.repos);
    this.caps = { ...GITHUB_LIST_CAPS, ...options.listCaps };
    this.capture = options.captureResponses ?? false;
    this.limit = options.rateLimit ?? 5000;
    this.windowMs = options.rateWindowMs ?? 3600_000;
    this.renamed = new Map(Object.entries(options.renamed ?? {}).map(([from, to]) => [from.toLowerCase(), to.toLowerCase()]));
  }

  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    // A port already taken is an error event, not an exception: it rejects here, so the caller can say so.
    await new Promise<void>((resolve, reject) => {
      this.server!.once("error", reject);
      this.server!.listen(port, "127.0.0.1", () => {
        this.server!.off("error", reject);
        resolve();
      });
    });
    return this.url;
  }

  get url(): string {
    const address = this.server!.address() as AddressInfo;
    return `http://127.0.0.1:${address.port}`;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  /** Drops every fault not yet spent. */
  clearFaults(): void {
    this.faults.length = 0;
  }

  inject(...faults: Fault[]): void {
    this.faults.push(...faults.map((f) => ({ ...f })));
  }

  /** Uses up the primary rate limit, as if other clients of the same token had. */
  exhaustRateLimit(): void {
    this.rollWindow();
    this.used = this.limit;
  }

  private rollWindow(): void {
    if (Date.now() - this.windowStart >= this.windowMs) {
      this.windowStart = Date.now();
      this.used = 0;
      this.graphqlUsed = 0;
    }
  }

  private takeFault(path: string): Fault | undefined {
    const index = this.faults.findIndex((f) => f.count > 0 && (!f.path || f.path.test(path)));
    if (index < 0) return undefined;
    const fault = this.faults[index]!;
    fault.count--;
    if (fault.count === 0) this.faults.splice(index, 1);
    return fault;
  }

  private rateHeaders(resource: "core" | "graphql" = "core"): Record<string, string> {
    const reset = Math.ceil((this.windowStart + this.windowMs) / 1000);
    const used = resource === "core" ? this.used : this.graphqlUsed;
    return {
      "x-ratelimit-limit": String(this.limit),
      "x-ratelimit-remaining": String(Math.max(0, this.limit - used)),
      "x-ratelimit-reset": String(reset),
      "x-ratelimit-used": String(used),
      "x-ratelimit-resource": resource,
    };
  }

  /** `GET /rate_limit`: what is left of each resource (asking costs nothing, as on GitHub). */
  private rateLimitStatus(): unknown {
    this.rollWindow();
    const reset = Math.ceil((this.windowStart + this.windowMs) / 1000);
    const core = { limit: this.limit, remaining: Math.max(0, this.limit - this.used), reset, used: this.used };
    const graphql = { limit: this.limit, remaining: Math.max(0, this.limit - this.graphqlUsed), reset, used: this.graphqlUsed };
    return { resources: { core, graphql, search: { limit: 30, remaining: 30, reset, used: 0 } }, rate: core };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname;
    const entry: RequestLogEntry = {
      method: req.method ?? "GET",
      path: path + url.search,
      status: 0,
      conditional: Boolean(req.headers["if-none-match"]),
      authorized: Boolean(req.headers.authorization),
      received_ms: performance.now(),
    };
    this.log.push(entry);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      entry.status = status;
      const text = body === undefined ? "" : JSON.stringify(body);
      const all = { "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(text)), ...headers };
      if (this.capture) entry.response = { headers: all, body: text };
      res.writeHead(status, all);
      res.end(text);
    };
    const requestBody = req.method === "POST" ? await readBody(req) : "";

    if (path === "/rate_limit") return send(200, this.rateLimitStatus(), this.rateHeaders());

    const fault = this.takeFault(path);
    if (fault) entry.fault = fault.kind;
    if (this.answerFault(fault, req, entry, send, path === "/graphql" ? "graphql" : "core")) return;

    if (path === "/graphql") return this.handleGraphql(req, entry, requestBody, send);

    this.rollWindow();
    if (this.used >= this.limit) {
      return send(
        403,
        basicError(
          "API rate limit exceeded for user ID 1001. If you reach out to GitHub Support for help, please include the request ID.",
          `${DOCS}/overview/rate-limits-for-the-rest-api`,
          403,
        ),
        this.rateHeaders(),
      );
    }

    const resolved = fault?.kind === "not_found" ? undefined : this.route(path, url.searchParams);
    if (!resolved) {
      this.used++;
      return send(404, basicError("Not Found", DOCS, 404), this.rateHeaders());
    }
    if ("status" in resolved) {
      this.used++;
      return send(resolved.status, resolved.body, { ...(resolved.location ? { location: resolved.location } : {}), ...this.rateHeaders() });
    }
    await this.answerResource(req, res, entry, resolved, fault);
  }

  /** Answers a request a fault takes (a reset connection, a server error, a secondary limit): true when it did. */
  private answerFault(fault: Fault | undefined, req: IncomingMessage, entry: RequestLogEntry, send: Send, resource: "core" | "graphql"): boolean {
    if (fault?.kind === "hang") {
      // never answered: the socket stays open until the client gives up (or the server stops)
      entry.status = -2;
      return true;
    }
    if (fault?.kind === "reset") {
      entry.status = -1;
      req.socket.destroy();
      return true;
    }
    if (fault?.kind === "server_error") {
      send(fault.status ?? 502, { message: "Server Error" });
      return true;
    }
    if (fault?.kind === "secondary_rate_limit" || fault?.kind === "too_many_requests") {
      const wait: Record<string, string> = fault.retryAfterSeconds === undefined ? {} : { "retry-after": String(fault.retryAfterSeconds) };
      const status = fault.kind === "too_many_requests" ? 429 : 403;
      send(
        status,
        basicError(
          "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.",
          `${DOCS}/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits`,
          status,
        ),
        { ...wait, ...this.rateHeaders(resource) },
      );
      return true;
    }
    if (fault?.kind === "not_accessible") {
      // As recorded from api.github.com for GET pulls/N (its documentation_url and a status string).
      send(
        403,
        { message: "Resource not accessible by integration", documentation_url: "https://docs.github.com/rest/pulls/pulls#get-a-pull-request", status: "403" },
        { "x-accepted-github-permissions": fault.permissions ?? "pull_requests=read", ...this.rateHeaders(resource) },
      );
      return true;
    }
    if (fault?.kind === "abuse_detection") {
      send(
        403,
        basicError(
          "You have triggered an abuse detection mechanism. Please wait a few minutes before you try again.",
          `${DOCS}/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits`,
          403,
        ),
        { "retry-after": String(fault.retryAfterSeconds), ...this.rateHeaders(resource) },
      );
      return true;
    }
    return false;
  }

  /** A resource's answer: 304 to a matching ETag (free, as on GitHub), else 200 with its body. */
  private async answerResource(
    req: IncomingMessage,
    res: ServerResponse,
    entry: RequestLogEntry,
    resolved: { body: unknown; link?: string },
    fault: Fault | undefined,
  ): Promise<void> {
    const { body, link } = resolved;
    const text = JSON.stringify(body);
    const etag = `W/"${createHash("sha256").update(text).digest("hex").slice(0, 40)}"`;
    const headers: Record<string, string> = { etag, ...(link ? { link } : {}) };
    if (req.headers["if-none-match"] === etag) {
      // Conditional hits cost nothing against the rate limit, as on GitHub.
      entry.status = 304;
      const all = { ...headers, ...this.rateHeaders() };
      if (this.capture) entry.response = { headers: all, body: "" };
      res.writeHead(304, all);
      res.end();
      return;
    }
    this.used++;
    Object.assign(headers, this.rateHeaders());
    entry.status = 200;
    const head = { "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(text)), ...headers };
    if (this.capture) entry.response = { headers: head, body: text };
    await this.writeBody(req, res, head, text, fault);
  }

  /** A 200's body, whole, or broken the way the injected fault says. */
  private async writeBody(req: IncomingMessage, res: ServerResponse, head: Record<string, string>, text: string, fault: Fault | undefined): Promise<void> {
    if (fault?.kind === "truncate") {
      res.writeHead(200, head);
      res.write(text.slice(0, Math.floor(text.length / 2)));
      req.socket.destroy();
      return;
    }
    if (fault?.kind === "cut_json") {
      const cut = text.slice(0, Math.floor(text.length / 2));
      res.writeHead(200, { ...head, "content-length": String(Buffer.byteLength(cut)) });
      res.end(cut);
      return;
    }
    if (fault?.kind === "stall_body") {
      res.writeHead(200, head);
      res.write(text.slice(0, Math.floor(text.length / 2)));
      return;
    }
    if (fault?.kind === "slow") {
      res.writeHead(200, head);
      const third = Math.ceil(text.length / 3);
      for (let i = 0; i < 3; i++) {
        res.write(text.slice(i * third, (i + 1) * third));
        await new Promise((r) => setTimeout(r, fault.delayMs));
      }
      res.end();
      return;
    }
    res.writeHead(200, head);
    res.end(text);
  }

  /** `POST /graphql`: authenticated only (GitHub answers 401 without a token), its own rate-limit resource. */
  private async handleGraphql(req: IncomingMessage, entry: RequestLogEntry, text: string, send: Send): Promise<void> {
    if (req.method !== "POST") return send(404, basicError("Not Found", DOCS, 404));
    if (!req.headers.authorization) return send(401, { message: "This endpoint requires you to be authenticated.", documentation_url: GRAPHQL_AUTH_DOCS });
    let body: { query?: unknown; variables?: unknown };
    try {
      body = JSON.parse(text);
    } catch {
      return send(400, { message: "Problems parsing JSON", documentation_url: "https://docs.github.com/graphql" });
    }
    entry.graphql = { query: String(body.query), variables: (body.variables ?? {}) as Record<string, unknown> };
    this.rollWindow();
    if (this.graphqlUsed >= this.limit) {
      return send(200, { errors: [{ type: "RATE_LIMITED", message: "API rate limit exceeded for user ID 1001." }] }, this.rateHeaders("graphql"));
    }
    this.graphqlUsed++;
    const reset = new Date(Math.ceil((this.windowStart + this.windowMs) / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
    const answer = await this.graphqlFake.execute(body, {
      limit: this.limit,
      remaining: Math.max(0, this.limit - this.graphqlUsed),
      used: this.graphqlUsed,
      resetAt: reset,
    });
    return send(200, answer, this.rateHeaders("graphql"));
  }

  private route(path: string, query: URLSearchParams): { body: unknown; link?: string } | { status: 301 | 410; body: unknown; location?: string } | undefined {
    // GitHub's pagination links name the repository by id: /repositories/{id}/...
    const match = /^\/repos\/([^/]+)\/([^/]+)(?:\/(.*))?$/.exec(path) ?? /^\/repositories\/(\d+)()(?:\/(.*))?$/.exec(path);
    if (!match) return undefined;
    const records = match[2] === "" ? this.reposById.get(Number(match[1])) : this.repos.get(`${match[1]}/${match[2]}`.toLowerCase());
    const newName = match[2] === "" ? undefined : this.renamed.get(`${match[1]}/${match[2]}`.toLowerCase());
    if (!records && newName && this.repos.has(newName)) {
      // A renamed repository: every path under its old name answers 301 to /repositories/{id}/..., as on GitHub.
      const location = `${this.url}/repositories/${this.repos.get(newName)!.repository.id}${match[3] ? `/${match[3]}` : ""}${query.size ? `?${query.toString()}` : ""}`;
      return { status: 301, body: { message: "Moved Permanently", url: location, documentation_url: `${DOCS}/repos/repos#get-a-repository` }, location };
    }
    if (!records) return undefined;
    const repoId = Number(records.repository.id);
    const rest = match[3] ?? "";
    if (rest === "") return { body: records.repository };
    const list = (items: unknown[] | undefined, cap?: number) =>
      items ? this.paginate(`/repositories/${repoId}/${rest}`, query, cap === undefined ? items : items.slice(0, cap)) : undefined;
    let m: RegExpExecArray | null;
    if (rest === "pulls") {
      const state = query.get("state") ?? "open";
      const direction = query.get("direction") ?? (query.get("sort") === "created" || !query.get("sort") ? "desc" : "desc");
      let pulls = Object.values(records.pulls).filter((p) => state === "all" || p.state === state);
      pulls = pulls.sort((a, b) => (String(a.created_at) < String(b.created_at) ? -1 : 1));
      if (direction === "desc") pulls.reverse();
      // List entries omit the single-PR-only fields, as GitHub's do.
      return list(pulls.map((p) => Object.fromEntries(Object.entries(p).filter(([k]) => !(PULL_ONLY_FIELDS as readonly string[]).includes(k)))));
    }
    if ((m = /^pulls\/(\d+)$/.exec(rest))) return records.pulls[m[1]!] ? { body: records.pulls[m[1]!] } : undefined;
    if ((m = /^pulls\/(\d+)\/(commits|files|reviews|comments)$/.exec(rest))) {
      if (!records.pulls[m[1]!]) return undefined;
      const key = { commits: "pull_commits", files: "pull_files", reviews: "reviews", comments: "review_comments" }[m[2] as "commits"] as keyof RepoRecords;
      const cap = m[2] === "commits" ? this.caps.commits : m[2] === "files" ? this.caps.files : undefined;
      return list(((records[key] as Record<string, unknown[]>)[m[1]!] ?? []) as unknown[], cap);
    }
    if ((m = /^issues\/(\d+)(\/comments|\/timeline)?$/.exec(rest))) {
      const number = Number(m[1]);
      if (records.deleted.includes(number)) return { status: 410, body: basicError("This issue was deleted", `${DOCS}/issues/issues#get-an-issue`, 410) };
      const moved = records.transferred[number];
      // GitHub redirects a transferred issue itself, not its comments or timeline: those are 404.
      if (moved && m[2]) return undefined;
      if (moved) {
        const target = this.repos.get(moved.repo.toLowerCase());
        const location = `${this.url}/repositories/${target?.repository.id}/issues/${moved.number}${query.size ? `?${query.toString()}` : ""}`;
        return { status: 301, body: { message: "Moved Permanently", url: location, documentation_url: `${DOCS}/issues/issues#get-an-issue` }, location };
      }
      if (!records.issues[number]) return undefined;
      if (!m[2]) return { body: records.issues[number] };
      return list((m[2] === "/comments" ? records.issue_comments : records.timelines)[number] ?? []);
    }
    return undefined;
  }

  private paginate(path: string, query: URLSearchParams, items: unknown[]): { body: unknown; link?: string } {
    const perPage = Math.min(100, Math.max(1, Number(query.get("per_page") ?? 30) || 30));
    const page = Math.max(1, Number(query.get("page") ?? 1) || 1);
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const body = items.slice((page - 1) * perPage, page * perPage);
    const href = (p: number) => {
      const q = new URLSearchParams(query);
      q.set("per_page", String(perPage));
      q.set("page", String(p));
      return `<${this.url}${path}?${q.toString()}>`;
    };
    const links: string[] = [];
    if (page > 1) links.push(`${href(page - 1)}; rel="prev"`);
    if (page < last) links.push(`${href(page + 1)}; rel="next"`, `${href(last)}; rel="last"`);
    if (page > 1) links.push(`${href(1)}; rel="first"`);
    return { body, link: links.length ? links.join(", ") : undefined };
  }
}

/** Answers a request with a JSON body (or none) and the headers given. */
type Send = (status: number, body: unknown, headers?: Record<string, string>) => void;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
