import { spawn } from "node:child_process";
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { basename, dirname, resolve } from "node:path";
import { GIT_ENV } from "../git.ts";
import { z } from "zod";
import type { Logger } from "../logger.ts";

/** With `executor: queue`: how the coordinator serves its repositories to the workers. */
export const GitServiceSettings = z.strictObject({
  /** host:port to listen on; the default (loopback, any port) reaches workers of this machine only. */
  listen: z.string().default("127.0.0.1:0"),
  /** The base URL the workers reach it at, where that is not http://LISTEN (a name, a proxy with TLS). */
  url: z.string().url().optional(),
  /** The environment variable holding the token every fetch must carry (required off loopback). */
  token_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
    .optional(),
  /**
   * `local`: the repositories whose clone source is a path of this machine (a bundle, the demo
   * corpus) are served; workers clone network URLs themselves. `all`: every repository is served
   * from the coordinator's mirror (workers need no access to GitHub).
   */
  serve: z.enum(["local", "all"]).default("local"),
});
export type GitServiceSettings = z.infer<typeof GitServiceSettings>;
export const DEFAULT_GIT_SERVICE: GitServiceSettings = { listen: "127.0.0.1:0", serve: "local" };

/**
 * The coordinator's repositories served read-only over git's smart HTTP protocol, so that workers
 * on other hosts clone what the coordinator has (its mirrors of local paths, `--mirrors` bundles,
 * the demo corpus) from a URL: a job never carries a path of the coordinator's file system.
 *
 * Only fetches are served (git-upload-pack); a push (git-receive-pack) and the "dumb" protocol's
 * file reads are refused. Each repository is served under a name the service gives it, never the
 * path it lives at. With a token, every request must carry it (`Authorization: Bearer TOKEN`, or
 * Basic with the token as password): git sends it from `http.extraHeader`, which workers set from
 * their own environment, so the token is never on the queue.
 *
 * The protocol work is git's own (`git http-backend`, as CGI): the service decides who may fetch
 * which repository and passes the request through.
 */
export interface GitServiceOptions {
  /** host:port to listen on (port 0: any free one). */
  listen: string;
  /** The base URL workers reach the service at (default: http://LISTEN, with the port it got). */
  url?: string;
  /** Required of every request when set. */
  token?: string;
  log: Logger;
}

export class GitService {
  private readonly served = new Map<string, string>();
  private readonly byDirectory = new Map<string, string>();
  /** Fetches answered and refused (for tests, bench and the run's closing line). */
  readonly counts = { fetches: 0, refused: 0 };

  private constructor(
    private readonly server: Server,
    readonly url: string,
    private readonly token: string | undefined,
  ) {}

  static async start(options: GitServiceOptions): Promise<GitService> {
    const { host, port } = parseListen(options.listen);
    if (!options.token && !isLoopback(host))
      throw new Error(
        `the git service would serve the coordinator's repositories on ${options.listen} without a token: set execution.queue.git_service.token_env to a variable holding one (the workers get the same token in theirs)`,
      );
    let service: GitService | undefined;
    const server = createServer((req, res) => {
      service!.handle(req, res).catch((error: Error) => {
        options.log.warn(`git service: ${req.method} ${req.url}: ${error.message}`);
        if (!res.headersSent) res.writeHead(500).end();
        else res.destroy();
      });
    });
    await new Promise<void>((ok, fail) => {
      server.once("error", (error: NodeJS.ErrnoException) =>
        fail(new Error(`the git service cannot listen on ${options.listen}: ${error.code === "EADDRINUSE" ? "the address is in use" : error.message}`)),
      );
      server.listen(port, host, () => ok());
    });
    const bound = server.address() as AddressInfo;
    const url = (options.url ?? `http://${bound.family === "IPv6" ? `[${bound.address}]` : bound.address}:${bound.port}`).replace(/\/+$/, "");
    service = new GitService(server, url, options.token);
    return service;
  }

  /**
   * The URL a repository directory (bare or not) is fetched at. Its name is the directory's own
   * name, made unique by a hash of where it lives when two directories share a name.
   */
  serve(directory: string): string {
    const dir = resolve(directory);
    let name = this.byDirectory.get(dir);
    if (!name) {
      const plain = basename(dir)
        .replace(/[^A-Za-z0-9._-]/g, "_")
        .replace(/^\.+/, "_");
      name = this.served.has(plain) ? `${createHash("sha256").update(dir).digest("hex").slice(0, 12)}-${plain}` : plain;
      this.served.set(name, dir);
      this.byDirectory.set(dir, name);
    }
    return `${this.url}/${name}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }

  private authorised(req: IncomingMessage): boolean {
    if (!this.token) return true;
    const header = req.headers.authorization ?? "";
    let given: string | undefined;
    if (/^Bearer /i.test(header)) given = header.slice(7).trim();
    else if (/^Basic /i.test(header)) given = Buffer.from(header.slice(6).trim(), "base64").toString("utf8").split(":").slice(1).join(":");
    if (given === undefined) return false;
    const a = createHash("sha256").update(given).digest();
    const b = createHash("sha256").update(this.token).digest();
    return timingSafeEqual(a, b);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://service");
    const match = /^\/([^/]+)\/(info\/refs|git-upload-pack|git-receive-pack)$/.exec(url.pathname);
    const refuse = (status: number, text: string, headers: Record<string, string> = {}) => {
      this.counts.refused++;
      req.resume();
      res.writeHead(status, { "content-type": "text/plain", ...headers }).end(text + "\n");
    };
    if (!this.authorised(req)) return refuse(401, "this git service wants its token", { "www-authenticate": 'Basic realm="switch-swe"' });
    const dir = match ? this.served.get(match[1]!) : undefined;
    if (!match || !dir) return refuse(404, "no such repository here");
    const service = match[2] === "info/refs" ? url.searchParams.get("service") : match[2];
    if (service !== "git-upload-pack") return refuse(403, "this git service is read-only: it serves fetches (git-upload-pack) only");
    if (match[2] === "info/refs" && req.method !== "GET") return refuse(405, "GET only");
    if (match[2] === "git-upload-pack" && req.method !== "POST") return refuse(405, "POST only");
    if (match[2] === "git-upload-pack") this.counts.fetches++;
    await this.backend(req, res, dir, `/${basename(dir)}/${match[2]}`, url.search.slice(1));
  }

  /** One request through `git http-backend` (CGI): its headers and status, then its body, streamed. */
  private backend(req: IncomingMessage, res: ServerResponse, dir: string, pathInfo: string, query: string): Promise<void> {
    const env: Record<string, string> = {
      ...GIT_ENV,
      GIT_PROJECT_ROOT: dirname(dir),
      GIT_HTTP_EXPORT_ALL: "1",
      PATH_INFO: pathInfo,
      QUERY_STRING: query,
      REQUEST_METHOD: req.method ?? "GET",
      CONTENT_TYPE: req.headers["content-type"] ?? "",
      REMOTE_ADDR: req.socket.remoteAddress ?? "",
      // A worker asks for the commit a job names; it need not be at a ref's tip.
      GIT_CONFIG_COUNT: "2",
      GIT_CONFIG_KEY_0: "uploadpack.allowAnySHA1InWant",
      GIT_CONFIG_VALUE_0: "true",
      GIT_CONFIG_KEY_1: "http.receivepack",
      GIT_CONFIG_VALUE_1: "false",
    };
    if (req.headers["content-length"]) env.CONTENT_LENGTH = String(req.headers["content-length"]);
    if (req.headers["content-encoding"]) env.HTTP_CONTENT_ENCODING = String(req.headers["content-encoding"]);
    if (req.headers["git-protocol"]) env.GIT_PROTOCOL = String(req.headers["git-protocol"]);
    return new Promise((ok, fail) => {
      const child = spawn("git", ["http-backend"], { env, stdio: ["pipe", "pipe", "pipe"] });
      let head = Buffer.alloc(0);
      let started = false;
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
      child.stdout.on("data", (chunk: Buffer) => {
        if (started) {
          res.write(chunk);
          return;
        }
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf("\r\n\r\n");
        const endLf = end < 0 ? head.indexOf("\n\n") : -1;
        if (end < 0 && endLf < 0) return;
        const cut = end >= 0 ? end : endLf;
        const headers: Record<string, string> = {};
        let status = 200;
        for (const line of head.subarray(0, cut).toString("latin1").split(/\r?\n/)) {
          const colon = line.indexOf(":");
          if (colon < 0) continue;
          const key = line.slice(0, colon).trim();
          const value = line.slice(colon + 1).trim();
          if (key.toLowerCase() === "status") status = Number.parseInt(value, 10) || 200;
          else headers[key] = value;
        }
        started = true;
        res.writeHead(status, headers);
        res.write(head.subarray(cut + (end >= 0 ? 4 : 2)));
      });
      child.on("error", fail);
      child.on("close", (code) => {
        if (!started) {
          if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
          res.end(`git http-backend failed (exit ${code}): ${stderr.trim()}\n`);
        } else res.end();
        ok();
      });
      child.stdin.on("error", () => undefined);
      req.pipe(child.stdin);
    });
  }
}

function parseListen(listen: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(listen);
  if (!m) throw new Error(`the git service's listen address '${listen}' is not host:port (say 0.0.0.0:9419, or 127.0.0.1:0 for any free port)`);
  return { host: m[1]!.replace(/^\[|\]$/g, ""), port: Number(m[2]) };
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

/**
 * The environment a git command fetching from a git service runs with: the token as an HTTP
 * header, in git's environment-borne config (never on a command line another user could read).
 */
export function gitServiceAuthEnv(token: string | undefined): Record<string, string> {
  if (!token) return {};
  return { GIT_CONFIG_COUNT: "1", GIT_CONFIG_KEY_0: "http.extraHeader", GIT_CONFIG_VALUE_0: `Authorization: Bearer ${token}` };
}
