/**
 * What a harness's own structured output says about one request: the tokens, model calls and tool
 * calls it incurred, whether the request failed (and whether for the infrastructure's reasons or
 * the model's), and the conversation it belongs to. Read from the harness's output, never from the
 * model endpoint: on a real provider there is no endpoint log to read.
 */
import type { RequestUsage, RoutingDecisions } from "../schemas/agent.ts";

import type { USAGE_PARSERS } from "../schemas/agent.ts";

export type UsageParser = (typeof USAGE_PARSERS)[number];

export interface AttemptReading {
  /** What the harness reported; null when its output held no usage at all. */
  usage: RequestUsage | null;
  /** Set when the harness says the request failed. `infrastructure`: the provider was overloaded or unreachable (retried); `model`: anything else (scored as it is). */
  failure?: { kind: "infrastructure" | "model"; detail: string };
  /** The conversation (session) id the harness reports. */
  conversation?: string;
  /** Whether `usage` is the conversation's running total so far (the runner takes the difference from the request before), not this attempt's. */
  cumulative?: boolean;
}

/** HTTP statuses that are the provider's moment, not the request's: overloaded, rate limited, unavailable. */
const INFRASTRUCTURE_STATUSES = new Set([408, 429, 500, 502, 503, 504, 529]);

/** Whether a harness's error is the provider's moment (overloaded, limited, unavailable, unreachable) rather than the request's. */
function providerFault(message: string, status?: number): boolean {
  return (
    (status !== undefined && INFRASTRUCTURE_STATUSES.has(status)) ||
    /\b(429|500|502|503|504|529)\b|overloaded|unavailable|rate.?limit|stream disconnected|ECONNREFUSED|connection (error|refused|reset)|timed out/i.test(
      message,
    )
  );
}

function jsonLines(output: string): Record<string, unknown>[] {
  const values: Record<string, unknown>[] = [];
  for (const line of output.split("\n")) {
    const trimmed = line.trim();
    if (!trimmed.startsWith("{")) continue;
    try {
      const value = JSON.parse(trimmed) as unknown;
      if (value && typeof value === "object" && !Array.isArray(value)) values.push(value as Record<string, unknown>);
    } catch {
      // not one of the harness's JSON lines (a warning it printed, say)
    }
  }
  return values;
}

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/**
 * Claude Code's `--output-format stream-json --verbose`: one `assistant` event per content block,
 * each carrying its API message's id (so model calls are the distinct ids, sub-agents' included),
 * tool_use blocks for tool calls, and a closing `result` event with the request's token totals,
 * `is_error` and the API's error status.
 */
function readClaudeCode(output: string): AttemptReading {
  const events = jsonLines(output);
  const messages = new Set<string>();
  const tools = new Set<string>();
  let conversation: string | undefined;
  let result: Record<string, unknown> | undefined;
  for (const event of events) {
    if (typeof event.session_id === "string") conversation = event.session_id;
    if (event.type === "result") result = event;
    if (event.type !== "assistant") continue;
    const message = event.message as { id?: unknown; content?: unknown } | undefined;
    if (typeof message?.id === "string") messages.add(message.id);
    for (const block of Array.isArray(message?.content) ? (message.content as Record<string, unknown>[]) : [])
      if (block.type === "tool_use") tools.add(typeof block.id === "string" ? block.id : `${messages.size}:${tools.size}`);
  }
  const reading: AttemptReading = { usage: null, ...(conversation ? { conversation } : {}) };
  if (!result) return { ...reading, failure: { kind: "model", detail: "the harness ended without its result event" } };
  const u = (result.usage ?? {}) as Record<string, unknown>;
  reading.usage = {
    input_tokens: num(u.input_tokens) + num(u.cache_creation_input_tokens),
    cached_input_tokens: num(u.cache_read_input_tokens),
    output_tokens: num(u.output_tokens),
    model_calls: messages.size,
    tool_calls: tools.size,
  };
  if (result.is_error === true) {
    const status = typeof result.api_error_status === "number" ? result.api_error_status : undefined;
    const text = typeof result.result === "string" ? result.result : String(result.subtype ?? "error");
    const infrastructure = providerFault(text, status);
    reading.failure = {
      kind: infrastructure ? "infrastructure" : "model",
      detail: `${status !== undefined ? `API status ${status}: ` : ""}${text}`.slice(0, 500),
    };
  }
  return reading;
}

/** Codex CLI's item types that are tool calls the model asked for. */
const CODEX_TOOL_ITEMS = new Set(["command_execution", "file_change", "mcp_tool_call", "web_search"]);

/**
 * Codex CLI's `exec --json`: `thread.started` names the conversation; `turn.completed` carries
 * the thread's token usage so far, the resumed requests before it included (measured against the
 * endpoint's log: each request's difference is its own calls' sum), and OpenAI's input tokens
 * include the cached ones; tool calls are
 * the completed command, file-change, MCP and web-search items. It says nothing of how many model
 * calls a turn made: model_calls is null. A `turn.failed` or `error` event is a failed request.
 */
function readCodex(output: string): AttemptReading {
  let conversation: string | undefined;
  let usage: RequestUsage | null = null;
  const tools = new Set<string>();
  let failure: AttemptReading["failure"];
  for (const event of jsonLines(output)) {
    if (event.type === "thread.started" && typeof event.thread_id === "string") conversation = event.thread_id;
    if (event.type === "turn.completed") {
      const u = (event.usage ?? {}) as Record<string, unknown>;
      const cached = num(u.cached_input_tokens);
      // The last turn's running total is the thread's.
      usage = {
        input_tokens: Math.max(0, num(u.input_tokens) - cached),
        cached_input_tokens: cached,
        output_tokens: num(u.output_tokens),
        model_calls: null,
        tool_calls: 0,
      };
    }
    const item = event.item as Record<string, unknown> | undefined;
    if (event.type === "item.completed" && item && CODEX_TOOL_ITEMS.has(String(item.type))) tools.add(String(item.id ?? tools.size));
    if (event.type === "turn.failed" || event.type === "error") {
      const message = String((event.error as { message?: unknown } | undefined)?.message ?? event.message ?? "failed");
      const infrastructure = providerFault(message);
      failure = { kind: infrastructure ? "infrastructure" : "model", detail: message.slice(0, 500) };
    }
  }
  if (usage) usage = { ...usage, tool_calls: tools.size };
  else if (tools.size) usage = { ...NO_USAGE, model_calls: null, tool_calls: tools.size };
  return { usage, cumulative: true, ...(failure ? { failure } : {}), ...(conversation ? { conversation } : {}) };
}

/**
 * OpenCode's `run --format json`: every event names its session (sessionID); one `step_finish`
 * per model call, with that call's tokens (input without the cache, cache reads and writes,
 * output and reasoning); one `tool_use` event per tool call; an `error` event when the request
 * failed (OpenCode still exits 0).
 */
function readOpenCode(output: string): AttemptReading {
  let conversation: string | undefined;
  let usage: RequestUsage | null = null;
  const tools = new Set<string>();
  let failure: AttemptReading["failure"];
  for (const event of jsonLines(output)) {
    if (typeof event.sessionID === "string") conversation = event.sessionID;
    const part = (event.part ?? {}) as Record<string, unknown>;
    if (event.type === "step_finish") {
      const t = (part.tokens ?? {}) as Record<string, unknown>;
      const cache = (t.cache ?? {}) as Record<string, unknown>;
      usage = addUsage(usage ?? NO_USAGE, {
        input_tokens: num(t.input) + num(cache.write),
        cached_input_tokens: num(cache.read),
        output_tokens: num(t.output) + num(t.reasoning),
        model_calls: 1,
        tool_calls: 0,
      });
    }
    if (event.type === "tool_use") tools.add(String(part.id ?? tools.size));
    if (event.type === "error") {
      const error = (event.error ?? {}) as Record<string, unknown>;
      const data = (error.data ?? {}) as Record<string, unknown>;
      const message = String(data.message ?? error.message ?? error.name ?? "failed");
      const status = num(data.statusCode);
      const infrastructure = providerFault(message, status || undefined);
      failure = { kind: infrastructure ? "infrastructure" : "model", detail: `${status ? `API status ${status}: ` : ""}${message}`.slice(0, 500) };
    }
  }
  if (usage || tools.size) usage = { ...(usage ?? NO_USAGE), tool_calls: tools.size };
  return { usage, ...(failure ? { failure } : {}), ...(conversation ? { conversation } : {}) };
}

/**
 * aider's analytics log (--analytics-log, written even with --analytics-disable): one
 * `message_send` event per model call with its prompt tokens (cached ones included: aider does not
 * split them out) and completion tokens. aider has no tool calls: it edits from the answer's text.
 * A model call that failed leaves no `message_send`; aider exits 0 all the same, so a request
 * whose calls all failed is read from the error lines it prints.
 */
function readAider(output: string): AttemptReading {
  let usage: RequestUsage | null = null;
  let started = 0;
  for (const event of jsonLines(output)) {
    if (event.event === "message_send_starting") started++;
    if (event.event !== "message_send") continue;
    const p = (event.properties ?? {}) as Record<string, unknown>;
    usage = addUsage(usage ?? { ...NO_USAGE, cached_input_tokens: null }, {
      input_tokens: num(p.prompt_tokens),
      cached_input_tokens: null,
      output_tokens: num(p.completion_tokens),
      model_calls: 1,
      tool_calls: 0,
    });
  }
  const error = /^(litellm\.\w+Error|.*APIError|.*(ServiceUnavailable|Overloaded|RateLimit|InternalServer|BadRequest)\w*Error)[^\n]*/m.exec(output)?.[0];
  if (!error || (usage && usage.model_calls === started)) return { usage };
  const infrastructure = /ServiceUnavailable|InternalServer|Connection/i.test(error) || providerFault(error);
  return { usage, failure: { kind: infrastructure ? "infrastructure" : "model", detail: error.slice(0, 500) } };
}

const PARSERS: Record<UsageParser, (output: string) => AttemptReading> = {
  aider: readAider,
  "claude-code": readClaudeCode,
  codex: readCodex,
  opencode: readOpenCode,
};

export function readAttempt(parser: UsageParser, output: string): AttemptReading {
  return PARSERS[parser](output);
}

/** Usage summed, field by field. */
export function addUsage(a: RequestUsage, b: RequestUsage): RequestUsage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    cached_input_tokens: a.cached_input_tokens === null || b.cached_input_tokens === null ? null : a.cached_input_tokens + b.cached_input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    // Unknown in either is unknown in the sum.
    model_calls: a.model_calls === null || b.model_calls === null ? null : a.model_calls + b.model_calls,
    tool_calls: a.tool_calls + b.tool_calls,
  };
}

export const NO_USAGE: RequestUsage = { input_tokens: 0, cached_input_tokens: 0, output_tokens: 0, model_calls: 0, tool_calls: 0 };

/** `now` less `before`, field by field (a running total's step); a field that went down counts from zero. */
export function usageSince(now: RequestUsage, before: RequestUsage | undefined): RequestUsage {
  if (!before) return now;
  const less = (a: number, b: number) => (a >= b ? a - b : a);
  return {
    input_tokens: less(now.input_tokens, before.input_tokens),
    cached_input_tokens:
      now.cached_input_tokens === null || before.cached_input_tokens === null
        ? now.cached_input_tokens
        : less(now.cached_input_tokens, before.cached_input_tokens),
    output_tokens: less(now.output_tokens, before.output_tokens),
    model_calls: now.model_calls === null || before.model_calls === null ? now.model_calls : less(now.model_calls, before.model_calls),
    tool_calls: now.tool_calls,
  };
}

/**
 * The routing decisions a context manager logged (the Resumption Context Manager's `routing`
 * events, in the file it logs its auxiliary calls' usage to), by kind; null when it logged none.
 */
export function readRouting(text: string): RoutingDecisions | null {
  let decisions: RoutingDecisions | null = null;
  for (const event of jsonLines(text)) {
    if (event.type !== "routing" || (event.by !== "reference" && event.by !== "router" && event.by !== "fallback")) continue;
    decisions ??= { reference: 0, router: 0, fallback: 0 };
    decisions[event.by]++;
  }
  return decisions;
}

/** Routing decisions summed, kind by kind; null when neither side has any. */
export function addRouting(a: RoutingDecisions | null | undefined, b: RoutingDecisions | null | undefined): RoutingDecisions | null {
  if (!a || !b) return a ?? b ?? null;
  return { reference: a.reference + b.reference, router: a.router + b.router, fallback: a.fallback + b.fallback };
}
