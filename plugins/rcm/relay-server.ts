/**
 * The Resumption Context Manager between a harness and its model API, for harnesses without a
 * plugin interface (Claude Code: Anthropic Messages; Codex CLI: OpenAI Responses; any harness
 * speaking Chat Completions). The harness is pointed at the relay instead of the API; every call
 * is passed on to the API, its answer streamed back untouched. A working call (one that offers
 * tools) has its conversation routed and assembled by the same manager as the OpenCode plugin's
 * before it goes on: the request's tasks' interaction groups, shared ones, and on resumption the
 * task's state record (+RCM). Auxiliary calls (routing, memory) go to the same API, in the call's
 * protocol, with the call's own model and credentials, and are logged with their usage in the
 * state directory's usage.jsonl for the session runner to count. Other calls (titles, summaries,
 * token counts, the harness's compaction) pass untouched: native compaction is never filtered.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as WebStream } from "node:stream/web";
import type { AuxiliaryModel } from "./auxiliary.ts";
import { ResumptionContextManager, type Mode } from "./manager.ts";
import { isWorkingCall, protocolOfPath, readConversation, writeConversation } from "./wire.ts";

export interface RelayOptions {
  /** The model API's base URL, as the harness would be given it (paths are appended as the harness sends them). */
  upstream: string;
  mode: Mode;
  /** Where state, usage.jsonl and decisions.jsonl go. */
  dir: string;
  /** 0: any free port. */
  port?: number;
  /** Seconds an auxiliary call may take. */
  auxiliaryTimeoutSeconds?: number;
  warn: (message: string) => void;
}

/** Headers not passed on: the connection's own, and those the relay's fetch sets again. */
const HOP_HEADERS = new Set(["host", "connection", "content-length", "transfer-encoding", "keep-alive", "accept-encoding", "content-encoding"]);

/** The credentials a harness sent, for the auxiliary calls made on its behalf. */
const CREDENTIAL_HEADERS = ["authorization", "x-api-key", "anthropic-version", "anthropic-beta", "openai-organization", "openai-project"];

function headersOf(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers))
    if (value !== undefined && !HOP_HEADERS.has(name.toLowerCase())) headers[name] = Array.isArray(value) ? value.join(", ") : value;
  return headers;
}

async function bodyOf(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The API's base for auxiliary calls: the upstream with the path the harness's call went to, up to its protocol's endpoint. */
function auxiliaryBase(upstream: string, path: string): string {
  const prefix = path.split("?")[0]!.replace(/\/(messages|responses|chat\/completions)\/?$/, "");
  return `${upstream.replace(/\/+$/, "")}${prefix}`;
}

export class ContextRelay {
  private readonly manager: ResumptionContextManager;
  private server?: Server;
  /** Working calls are routed one at a time: a harness's parallel calls (sub-agents) share one state. */
  private turn: Promise<unknown> = Promise.resolve();
  url = "";

  constructor(private readonly options: RelayOptions) {
    this.manager = new ResumptionContextManager({ mode: options.mode, dir: options.dir, warn: options.warn });
  }

  async start(): Promise<string> {
    const server = createServer((request, response) => {
      this.handle(request, response).catch((error) => this.fail(response, 502, `the relay could not pass the call on: ${(error as Error).message}`));
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.options.port ?? 0, "127.0.0.1", () => resolve());
    });
    const address = server.address() as { port: number };
    this.url = `http://127.0.0.1:${address.port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = request.url ?? "/";
    const headers = headersOf(request);
    let body: Buffer | undefined = request.method === "GET" || request.method === "HEAD" ? undefined : await bodyOf(request);
    const protocol = request.method === "POST" ? protocolOfPath(path) : undefined;
    if (protocol && body) {
      let call: Record<string, unknown> | undefined;
      try {
        call = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
      } catch {
        call = undefined; // not JSON: the API says what is wrong with it
      }
      if (call && isWorkingCall(call)) {
        const auxiliary: AuxiliaryModel = {
          url: auxiliaryBase(this.options.upstream, path),
          model: String(call.model ?? ""),
          protocol,
          headers: Object.fromEntries(CREDENTIAL_HEADERS.filter((h) => headers[h] !== undefined).map((h) => [h, headers[h]!])),
          timeoutSeconds: this.options.auxiliaryTimeoutSeconds ?? 120,
        };
        const working = call;
        const next = this.turn.then(() => this.manager.transform(readConversation(protocol, working), auxiliary));
        this.turn = next.catch(() => undefined);
        body = Buffer.from(JSON.stringify(writeConversation(protocol, working, await next)));
      }
    }
    // A harness that gives up (its budget ran out) takes the API call with it.
    const abort = new AbortController();
    response.on("close", () => abort.abort());
    const upstream = await fetch(`${this.options.upstream.replace(/\/+$/, "")}${path}`, {
      method: request.method,
      headers,
      ...(body ? { body: new Uint8Array(body) } : {}),
      signal: abort.signal,
    });
    const answerHeaders: Record<string, string> = {};
    upstream.headers.forEach((value, name) => {
      if (!HOP_HEADERS.has(name.toLowerCase())) answerHeaders[name] = value;
    });
    response.writeHead(upstream.status, answerHeaders);
    if (!upstream.body) return void response.end();
    Readable.fromWeb(upstream.body as WebStream).pipe(response);
  }

  private fail(response: ServerResponse, status: number, message: string): void {
    this.options.warn(message);
    if (response.headersSent) return void response.destroy();
    response.writeHead(status, { "content-type": "application/json" });
    response.end(JSON.stringify({ type: "error", error: { type: "api_error", message } }));
  }
}
