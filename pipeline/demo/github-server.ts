import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { RepoRecords } from "./records.ts";

/** A fault to inject into the next `count` matching requests. */
export type Fault =
  | { kind: "server_error"; count: number; status?: 500 | 502 | 503; path?: RegExp }
  | { kind: "reset"; count: number; path?: RegExp }
  | { kind: "slow"; count: number; delayMs: number; path?: RegExp }
  | { kind: "truncate"; count: number; path?: RegExp }
  /** A whole 200 answer (its length matching) whose JSON text stops halfway: what a broken proxy sends. */
  | { kind: "cut_json"; count: number; path?: RegExp }
  | { kind: "secondary_rate_limit"; count: number; retryAfterSeconds: number; path?: RegExp }
  | { kind: "not_found"; count: number; path?: RegExp };

export interface RequestLogEntry {
  method: string;
  path: string;
  status: number;
  conditional: boolean;
  authorized: boolean;
  fault?: Fault["kind"];
}

export interface FakeGithubOptions {
  /** Directory of `<owner>__<name>.json` record files written by the demo corpus builder. */
  recordsDir: string;
  /** Primary rate limit per window (default 5000 an hour, as for a token). */
  rateLimit?: number;
  rateWindowMs?: number;
}

const DOCS = "https://docs.github.com/rest";

/**
 * A local GitHub REST API over the demo corpus's records: GitHub's paths, field names, pagination
 * (per_page, page, Link headers), ETag / If-None-Match → 304, X-RateLimit-* headers, a primary
 * rate limit (403 with a reset time) and injectable faults (5xx bursts, connection resets, slow
 * bodies, truncated JSON, secondary rate limits with Retry-After). For the demo and for tests;
 * it binds to loopback only.
 */
export class FakeGithub {
  private server?: Server;
  private readonly repos = new Map<string, RepoRecords>();
  private readonly faults: Fault[] = [];
  readonly log: RequestLogEntry[] = [];
  private used = 0;
  private windowStart = Date.now();
  private readonly limit: number;
  private readonly windowMs: number;

  constructor(options: FakeGithubOptions) {
    for (const file of readdirSync(options.recordsDir).filter((f) => f.endsWith(".json")).sort()) {
      const records = JSON.parse(readFileSync(join(options.recordsDir, file), "utf8")) as RepoRecords;
      this.repos.set(String(records.repository.full_name).toLowerCase(), records);
    }
    this.limit = options.rateLimit ?? 5000;
    this.windowMs = options.rateWindowMs ?? 3600_000;
  }

  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(port, "127.0.0.1", resolve));
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

  private rateHeaders(): Record<string, string> {
    const reset = Math.ceil((this.windowStart + this.windowMs) / 1000);
    return {
      "x-ratelimit-limit": String(this.limit),
      "x-ratelimit-remaining": String(Math.max(0, this.limit - this.used)),
      "x-ratelimit-reset": String(reset),
      "x-ratelimit-used": String(this.used),
      "x-ratelimit-resource": "core",
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname;
    const entry: RequestLogEntry = { method: req.method ?? "GET", path: path + url.search, status: 0, conditional: Boolean(req.headers["if-none-match"]), authorized: Boolean(req.headers.authorization) };
    this.log.push(entry);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      entry.status = status;
      const text = body === undefined ? "" : JSON.stringify(body);
      res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), ...headers });
      res.end(text);
    };

    if (path === "/rate_limit") {
      this.rollWindow();
      const core = { limit: this.limit, remaining: Math.max(0, this.limit - this.used), reset: Math.ceil((this.windowStart + this.windowMs) / 1000), used: this.used };
      return send(200, { resources: { core }, rate: core }, this.rateHeaders());
    }

    const fault = this.takeFault(path);
    if (fault) entry.fault = fault.kind;
    if (fault?.kind === "reset") {
      entry.status = -1;
      req.socket.destroy();
      return;
    }
    if (fault?.kind === "server_error") return send(fault.status ?? 502, { message: "Server Error" });
    if (fault?.kind === "secondary_rate_limit") {
      return send(403, { message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", documentation_url: `${DOCS}/overview/rate-limits-for-the-rest-api` }, { "retry-after": String(fault.retryAfterSeconds), ...this.rateHeaders() });
    }

    this.rollWindow();
    if (this.used >= this.limit) {
      return send(403, { message: "API rate limit exceeded for user ID 1001.", documentation_url: `${DOCS}/overview/rate-limits-for-the-rest-api` }, this.rateHeaders());
    }

    const resolved = fault?.kind === "not_found" ? undefined : this.route(path, url.searchParams);
    if (!resolved) {
      this.used++;
      return send(404, { message: "Not Found", documentation_url: DOCS, status: "404" }, this.rateHeaders());
    }
    const { body, link } = resolved;
    const text = JSON.stringify(body);
    const etag = `W/"${createHash("sha256").update(text).digest("hex").slice(0, 40)}"`;
    const headers: Record<string, string> = { etag, ...(link ? { link } : {}) };
    if (req.headers["if-none-match"] === etag) {
      // Conditional hits cost nothing against the rate limit, as on GitHub.
      entry.status = 304;
      res.writeHead(304, { ...headers, ...this.rateHeaders() });
      res.end();
      return;
    }
    this.used++;
    Object.assign(headers, this.rateHeaders());
    entry.status = 200;
    if (fault?.kind === "truncate") {
      res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), ...headers });
      res.write(text.slice(0, Math.floor(text.length / 2)));
      req.socket.destroy();
      return;
    }
    if (fault?.kind === "cut_json") {
      const cut = text.slice(0, Math.floor(text.length / 2));
      res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(cut), ...headers });
      res.end(cut);
      return;
    }
    if (fault?.kind === "slow") {
      res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), ...headers });
      const third = Math.ceil(text.length / 3);
      for (let i = 0; i < 3; i++) {
        res.write(text.slice(i * third, (i + 1) * third));
        await new Promise((r) => setTimeout(r, fault.delayMs));
      }
      res.end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), ...headers });
    res.end(text);
  }

  private route(path: string, query: URLSearchParams): { body: unknown; link?: string } | undefined {
    const match = /^\/repos\/([^/]+)\/([^/]+)(?:\/(.*))?$/.exec(path);
    if (!match) return undefined;
    const records = this.repos.get(`${match[1]}/${match[2]}`.toLowerCase());
    if (!records) return undefined;
    const rest = match[3] ?? "";
    if (rest === "") return { body: records.repository };
    const list = (items: unknown[] | undefined) => (items ? this.paginate(path, query, items) : undefined);
    let m: RegExpExecArray | null;
    if (rest === "pulls") {
      const state = query.get("state") ?? "open";
      const direction = query.get("direction") ?? (query.get("sort") === "created" || !query.get("sort") ? "desc" : "desc");
      let pulls = Object.values(records.pulls).filter((p) => state === "all" || p.state === state);
      pulls = pulls.sort((a, b) => (String(a.created_at) < String(b.created_at) ? -1 : 1));
      if (direction === "desc") pulls.reverse();
      // List entries omit the single-PR-only fields, as GitHub's do.
      return list(pulls.map(({ merged: _merged, commits: _c, additions: _a, deletions: _d, changed_files: _f, ...p }) => p));
    }
    if ((m = /^pulls\/(\d+)$/.exec(rest))) return records.pulls[m[1]!] ? { body: records.pulls[m[1]!] } : undefined;
    if ((m = /^pulls\/(\d+)\/(commits|files|reviews|comments)$/.exec(rest))) {
      if (!records.pulls[m[1]!]) return undefined;
      const key = { commits: "pull_commits", files: "pull_files", reviews: "reviews", comments: "review_comments" }[m[2] as "commits"] as keyof RepoRecords;
      return list(((records[key] as Record<string, unknown[]>)[m[1]!] ?? []) as unknown[]);
    }
    if ((m = /^issues\/(\d+)$/.exec(rest))) return records.issues[m[1]!] ? { body: records.issues[m[1]!] } : undefined;
    if ((m = /^issues\/(\d+)\/(comments|timeline)$/.exec(rest))) {
      if (!records.issues[m[1]!]) return undefined;
      return list((m[2] === "comments" ? records.issue_comments : records.timelines)[m[1]!] ?? []);
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
    if (page < last) links.push(`${href(page + 1)}; rel="next"`, `${href(last)}; rel="last"`);
    if (page > 1) links.push(`${href(1)}; rel="first"`, `${href(page - 1)}; rel="prev"`);
    return { body, link: links.length ? links.join(", ") : undefined };
  }
}
