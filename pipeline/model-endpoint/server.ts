/**
 * A model endpoint for tests and dry runs: an HTTP server on loopback speaking Anthropic
 * Messages, OpenAI Chat Completions and the OpenAI Responses API, whose answers come from a model
 * script (scripts.ts). It keeps its own log: every call, the usage it reported, the tool call it
 * asked for, and the whole request it received, so a run's accounting can be checked against it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { appendFileSync } from "node:fs";
import { PromptCache, promptChars } from "./prompt-cache.ts";
import { answerWith, type EndpointKnowledge, type ModelScript, type RecognisedRequest } from "./scripts.ts";
import { answerBody, answerEvents, errorBody, type Answer, type ModelCall, type Protocol, readCall, type Usage } from "./wire.ts";

/** One call, as the endpoint's log keeps it. */
export interface EndpointCall {
  n: number;
  protocol: Protocol;
  path: string;
  /** The caller's user agent (which harness), and its conversation header when it sends one. */
  user_agent: string;
  conversation_header?: string;
  model: string;
  stream: boolean;
  tools: number;
  /** The request of a session this call belongs to, as the endpoint recognised it. */
  request?: RecognisedRequest;
  status: number;
  answer?: { kind: "text"; text: string } | { kind: "tool"; name: string; arguments: Record<string, unknown> };
  error?: string;
  /** The usage reported to the caller (none for an error or a hang). */
  usage?: Usage;
  /** The request body, whole. */
  body: string;
}

export interface ModelEndpointOptions {
  script: ModelScript;
  knowledge: EndpointKnowledge;
  /** Append every call to this JSON Lines file as well. */
  logFile?: string;
  port?: number;
}

/** Tokens of a text as the endpoint counts them: a fixed four characters each, at least one. */
const tokens = (chars: number) => Math.max(1, Math.ceil(chars / 4));

/**
 * The usage of one call: input from what was sent, of which cached the whole tokens of the prefix
 * an earlier call sent too (`sharedChars`, from the endpoint's prompt cache); output from the answer.
 */
export function usageOf(call: ModelCall, answer: Answer, sharedChars: number): Usage {
  const total = tokens(promptChars(call));
  const cached = Math.min(total, Math.floor(sharedChars / 4));
  const output = tokens(answer.kind === "text" ? answer.text.length : JSON.stringify(answer.arguments).length);
  return { input: total - cached, cachedInput: cached, output };
}

function protocolOf(path: string): Protocol | undefined {
  if (/\/messages$/.test(path)) return "anthropic";
  if (/\/chat\/completions$/.test(path)) return "chat";
  if (/\/responses$/.test(path)) return "responses";
  return undefined;
}

export class ModelEndpoint {
  readonly calls: EndpointCall[] = [];
  /** Failures of the endpoint itself (a script that threw): answered with 500, and kept here. */
  readonly internalErrors: string[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly cache = new PromptCache();
  private ids = 0;

  private constructor(
    private readonly server: Server,
    private readonly options: ModelEndpointOptions,
    readonly url: string,
  ) {}

  /** Starts the endpoint on 127.0.0.1 (port 0: any free one); `url` is its root (Anthropic's base URL; OpenAI clients add /v1). */
  static async start(options: ModelEndpointOptions): Promise<ModelEndpoint> {
    let endpoint: ModelEndpoint | undefined;
    // A fault of the endpoint's own is answered (500, its message) and kept in the log's place,
    // never left as a call that hangs the harness until its budget.
    const server = createServer((req, res) =>
      endpoint!.handle(req, res).catch((error: Error) => {
        endpoint!.internalErrors.push(error.message);
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { type: "api_error", message: `the model endpoint failed: ${error.message}` } }));
      }),
    );
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
    });
    const address = server.address() as { port: number };
    endpoint = new ModelEndpoint(server, options, `http://127.0.0.1:${address.port}`);
    server.on("connection", (socket) => {
      endpoint!.sockets.add(socket);
      socket.on("close", () => endpoint!.sockets.delete(socket));
    });
    return endpoint;
  }

  /** Stops it, dropping connections held open (a hanging call's). */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private record(entry: EndpointCall): void {
    this.calls.push(entry);
    if (this.options.logFile) appendFileSync(this.options.logFile, JSON.stringify(entry) + "\n");
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const path = (req.url ?? "/").split("?")[0]!;
    const protocol = req.method === "POST" ? protocolOf(path) : undefined;
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(value));
    };
    if (path.endsWith("/messages/count_tokens")) return json(200, { input_tokens: tokens(body.length) });
    if (req.method === "GET" && path.endsWith("/models"))
      return json(200, { object: "list", data: [{ id: "switch-swe-scripted", object: "model", created: 0, owned_by: "switch-swe" }] });
    if (!protocol) return json(req.method === "HEAD" || path === "/" ? 200 : 404, {});
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(body) as Record<string, unknown>;
    } catch {
      return json(400, errorBody(protocol, "invalid_request_error", "the body is not JSON"));
    }
    const call = readCall(protocol, parsed);
    const n = this.calls.length + 1;
    const entry: EndpointCall = {
      n,
      protocol,
      path,
      user_agent: String(req.headers["user-agent"] ?? ""),
      ...(req.headers["x-claude-code-session-id"] ? { conversation_header: String(req.headers["x-claude-code-session-id"]) } : {}),
      model: call.model,
      stream: call.stream,
      tools: call.tools.length,
      status: 0,
      body,
    };
    const outcome = answerWith(this.options.script, call, this.options.knowledge);
    if ("hang" in outcome) {
      // Never answered: the caller waits until it gives up, or the endpoint closes.
      this.record({ ...entry, status: -1 });
      return;
    }
    if ("error" in outcome) {
      // Overloaded is the provider's moment (529 on Anthropic's API, 503 on OpenAI's); a bad request is the caller's.
      const status = outcome.error === "overloaded" ? (protocol === "anthropic" ? 529 : 503) : 400;
      const type = outcome.error === "overloaded" ? (protocol === "anthropic" ? "overloaded_error" : "server_error") : "invalid_request_error";
      const message = outcome.error === "overloaded" ? "Overloaded" : "The request cannot be served: the scripted model failed after doing some work";
      this.record({ ...entry, ...(outcome.request ? { request: outcome.request } : {}), status, error: type });
      return json(status, errorBody(protocol, type, message));
    }
    // Read and kept in the same turn of the event loop: calls are cached in the order they arrive.
    const usage = usageOf(call, outcome.answer, this.cache.sharedChars(call));
    this.cache.remember(call);
    const ids = { message: `msg_${String(++this.ids).padStart(6, "0")}`, toolCall: `call_${String(this.ids).padStart(6, "0")}` };
    this.record({ ...entry, ...(outcome.request ? { request: outcome.request } : {}), status: 200, answer: outcome.answer, usage });
    if (!call.stream) return json(200, answerBody(call, outcome.answer, usage, ids));
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const event of answerEvents(call, outcome.answer, usage, ids)) res.write(event);
    res.end();
  }
}
