/**
 * The manager's auxiliary model calls (routing, memory) to the run's model endpoint: OpenAI Chat
 * Completions from the OpenCode plugin, the harness's own protocol from the relay (Anthropic
 * Messages, OpenAI Responses), each bounded in time, and each logged with its usage as an OpenCode `step_finish`
 * event in a file the session runner adds to the request's usage, so auxiliary calls count like
 * coding calls (Appendix F.3).
 */
import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";

export interface AuxiliaryModel {
  /** The API's base URL (…/v1). */
  url: string;
  model: string;
  key?: string;
  /** The protocol the calls are made in: Chat Completions (the OpenCode plugin's), or the harness's own through the relay. Default chat. */
  protocol?: "chat" | "anthropic" | "responses";
  /** Headers sent with every call (the relay sends the harness's own credentials). */
  headers?: Record<string, string>;
  /** Seconds one call may take. */
  timeoutSeconds: number;
}

export interface AuxiliaryResult {
  text: string;
  usage: { input: number; cached: number; output: number };
}

type Json = Record<string, any>;

/** One call's path, body and how its answer is read, per protocol. */
const PROTOCOLS = {
  chat: {
    path: "/chat/completions",
    body: (model: string, prompt: { system: string; user: string }) => ({
      model,
      temperature: 0,
      stream: false,
      messages: [
        { role: "system", content: prompt.system },
        { role: "user", content: prompt.user },
      ],
    }),
    read: (body: Json) => {
      const cached = body?.usage?.prompt_tokens_details?.cached_tokens ?? 0;
      const content = body?.choices?.[0]?.message?.content;
      return {
        text: typeof content === "string" ? content : "",
        usage: { input: Math.max(0, (body?.usage?.prompt_tokens ?? 0) - cached), cached, output: body?.usage?.completion_tokens ?? 0 },
      };
    },
  },
  anthropic: {
    path: "/messages",
    body: (model: string, prompt: { system: string; user: string }) => ({
      model,
      max_tokens: 8192,
      temperature: 0,
      stream: false,
      system: prompt.system,
      messages: [{ role: "user", content: prompt.user }],
    }),
    read: (body: Json) => {
      const text = (Array.isArray(body?.content) ? body.content : [])
        .filter((c: Json) => c?.type === "text")
        .map((c: Json) => String(c.text))
        .join("");
      const u = body?.usage ?? {};
      return {
        text,
        usage: { input: (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0), cached: u.cache_read_input_tokens ?? 0, output: u.output_tokens ?? 0 },
      };
    },
  },
  responses: {
    path: "/responses",
    body: (model: string, prompt: { system: string; user: string }) => ({
      model,
      stream: false,
      store: false,
      instructions: prompt.system,
      input: [{ type: "message", role: "user", content: [{ type: "input_text", text: prompt.user }] }],
    }),
    read: (body: Json) => {
      const text = (Array.isArray(body?.output) ? body.output : [])
        .filter((o: Json) => o?.type === "message")
        .flatMap((o: Json) => (Array.isArray(o.content) ? o.content : []))
        .filter((c: Json) => c?.type === "output_text")
        .map((c: Json) => String(c.text))
        .join("");
      const cached = body?.usage?.input_tokens_details?.cached_tokens ?? 0;
      return { text, usage: { input: Math.max(0, (body?.usage?.input_tokens ?? 0) - cached), cached, output: body?.usage?.output_tokens ?? 0 } };
    },
  },
};

export async function callAuxiliary(model: AuxiliaryModel, prompt: { system: string; user: string }): Promise<AuxiliaryResult> {
  const protocol = PROTOCOLS[model.protocol ?? "chat"];
  const response = await fetch(`${model.url.replace(/\/+$/, "")}${protocol.path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(model.key ? { authorization: `Bearer ${model.key}` } : {}), ...model.headers },
    body: JSON.stringify(protocol.body(model.model, prompt)),
    signal: AbortSignal.timeout(model.timeoutSeconds * 1000),
  });
  const body = (await response.json().catch(() => undefined)) as Json | undefined;
  if (!response.ok) throw new Error(`the auxiliary model answered HTTP ${response.status}${body?.error?.message ? `: ${body.error.message}` : ""}`);
  return protocol.read(body ?? {});
}

/** One auxiliary call's usage, appended as OpenCode reports a model call (`run --format json`'s step_finish). */
export function logUsage(file: string, sessionID: string, kind: "router" | "memory", usage: AuxiliaryResult["usage"]): void {
  mkdirSync(dirname(file), { recursive: true });
  const event = {
    type: "step_finish",
    sessionID,
    auxiliary: kind,
    part: { type: "step-finish", tokens: { input: usage.input, output: usage.output, reasoning: 0, cache: { read: usage.cached, write: 0 } } },
  };
  appendFileSync(file, JSON.stringify(event) + "\n");
}

/**
 * A request's routing decision, appended to the same file when the request is assigned: how it
 * was decided (the checkout it names, the router model, or a fallback to the full history), so a
 * run's results can say how its requests were routed. The session runner reads it with the usage.
 */
export function logRouting(file: string, sessionID: string, request: string, decision: { by: "reference" | "router" | "fallback"; confidence: number }): void {
  mkdirSync(dirname(file), { recursive: true });
  appendFileSync(file, JSON.stringify({ type: "routing", sessionID, request, by: decision.by, confidence: decision.confidence }) + "\n");
}
