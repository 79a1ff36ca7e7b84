/**
 * The wire protocols coding harnesses speak to a model: Anthropic Messages, OpenAI Chat
 * Completions and the OpenAI Responses API, each streamed (server-sent events) or not. A call is
 * read into one neutral form (the conversation so far and the tools offered), and an answer (text,
 * or one tool call) is written back in the caller's protocol, with the usage the endpoint reports.
 */

export type Protocol = "anthropic" | "chat" | "responses";

/** One turn of a conversation as every protocol can say it. */
export type Turn =
  | { role: "user"; text: string }
  | { role: "assistant"; text: string; toolCalls: { id: string; name: string; arguments: string }[] }
  | { role: "tool"; callId: string; output: string };

/** One model call, read from its protocol. */
export interface ModelCall {
  protocol: Protocol;
  model: string;
  stream: boolean;
  /** The names of the tools the harness offers, as it spells them. */
  tools: string[];
  /** The system prompt or instructions, joined. */
  system: string;
  turns: Turn[];
  /** Whether the caller asked for usage in the stream (Chat Completions' stream_options.include_usage). */
  includeUsage: boolean;
}

/** What the endpoint answers a call with. */
export type Answer = { kind: "text"; text: string } | { kind: "tool"; name: string; arguments: Record<string, unknown> };

/** Tokens as the endpoint counts them: input not served from the cache, input served from it, output. */
export interface Usage {
  input: number;
  cachedInput: number;
  output: number;
}

type Json = Record<string, unknown>;

const textOf = (content: unknown): string => {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => {
      const p = part as Json;
      if (typeof p.text === "string" && (p.type === undefined || ["text", "input_text", "output_text"].includes(String(p.type)))) return p.text;
      return "";
    })
    .join("\n");
};

/** Reads one call of `protocol` from its JSON body. */
export function readCall(protocol: Protocol, body: Json): ModelCall {
  const tools = ((body.tools as Json[] | undefined) ?? []).map((t) => String(t.name ?? (t.function as Json | undefined)?.name ?? t.type ?? ""));
  const base = { protocol, model: String(body.model ?? ""), stream: body.stream === true, tools };
  if (protocol === "anthropic") return { ...base, system: textOf(body.system), turns: anthropicTurns(body.messages as Json[]), includeUsage: true };
  if (protocol === "chat") {
    const messages = (body.messages as Json[] | undefined) ?? [];
    const system = messages.filter((m) => m.role === "system" || m.role === "developer").map((m) => textOf(m.content));
    const includeUsage = (body.stream_options as Json | undefined)?.include_usage === true;
    return { ...base, system: system.join("\n"), turns: chatTurns(messages), includeUsage };
  }
  const input = typeof body.input === "string" ? [{ type: "message", role: "user", content: body.input }] : ((body.input as Json[] | undefined) ?? []);
  const developer = input.filter((i) => i.type === "message" && (i.role === "developer" || i.role === "system")).map((i) => textOf(i.content));
  return { ...base, system: [String(body.instructions ?? ""), ...developer].join("\n"), turns: responsesTurns(input), includeUsage: true };
}

function anthropicTurns(messages: Json[] = []): Turn[] {
  const turns: Turn[] = [];
  for (const m of messages) {
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : ((m.content as Json[]) ?? []);
    if (m.role === "assistant") {
      const toolCalls = blocks
        .filter((b) => b.type === "tool_use")
        .map((b) => ({ id: String(b.id), name: String(b.name), arguments: JSON.stringify(b.input ?? {}) }));
      turns.push({ role: "assistant", text: textOf(blocks), toolCalls });
      continue;
    }
    if (m.role !== "user") continue;
    for (const b of blocks.filter((x) => x.type === "tool_result")) turns.push({ role: "tool", callId: String(b.tool_use_id), output: textOf(b.content) });
    const text = textOf(blocks.filter((x) => x.type === "text"));
    if (text.trim()) turns.push({ role: "user", text });
  }
  return turns;
}

function chatTurns(messages: Json[]): Turn[] {
  const turns: Turn[] = [];
  for (const m of messages) {
    if (m.role === "user") turns.push({ role: "user", text: textOf(m.content) });
    else if (m.role === "assistant") {
      const calls = ((m.tool_calls as Json[] | undefined) ?? []).map((c) => {
        const f = c.function as Json;
        return { id: String(c.id), name: String(f.name), arguments: String(f.arguments ?? "{}") };
      });
      turns.push({ role: "assistant", text: textOf(m.content), toolCalls: calls });
    } else if (m.role === "tool") turns.push({ role: "tool", callId: String(m.tool_call_id), output: textOf(m.content) });
  }
  return turns;
}

function responsesTurns(input: Json[]): Turn[] {
  const turns: Turn[] = [];
  for (const item of input) {
    const type = item.type ?? "message";
    if (type === "message" && item.role === "user") turns.push({ role: "user", text: textOf(item.content) });
    else if (type === "message" && item.role === "assistant") turns.push({ role: "assistant", text: textOf(item.content), toolCalls: [] });
    else if (type === "function_call" || type === "custom_tool_call") {
      const call = { id: String(item.call_id), name: String(item.name), arguments: String(item.arguments ?? item.input ?? "{}") };
      const last = turns.at(-1);
      // Consecutive items of one answer: its text and its calls are one assistant turn.
      if (last?.role === "assistant") last.toolCalls.push(call);
      else turns.push({ role: "assistant", text: "", toolCalls: [call] });
    } else if (type === "function_call_output" || type === "custom_tool_call_output")
      turns.push({ role: "tool", callId: String(item.call_id), output: textOf(item.output) });
  }
  return turns;
}

/** An answer as one protocol's JSON body (not streamed). */
export function answerBody(call: ModelCall, answer: Answer, usage: Usage, ids: { message: string; toolCall: string }): Json {
  const args = answer.kind === "tool" ? JSON.stringify(answer.arguments) : "";
  if (call.protocol === "anthropic") {
    const content =
      answer.kind === "text" ? [{ type: "text", text: answer.text }] : [{ type: "tool_use", id: ids.toolCall, name: answer.name, input: answer.arguments }];
    return {
      id: ids.message,
      type: "message",
      role: "assistant",
      model: call.model,
      content,
      stop_reason: answer.kind === "text" ? "end_turn" : "tool_use",
      stop_sequence: null,
      usage: anthropicUsage(usage),
    };
  }
  if (call.protocol === "chat") {
    const message =
      answer.kind === "text"
        ? { role: "assistant", content: answer.text }
        : { role: "assistant", content: null, tool_calls: [{ id: ids.toolCall, type: "function", function: { name: answer.name, arguments: args } }] };
    return {
      id: ids.message,
      object: "chat.completion",
      created: 0,
      model: call.model,
      choices: [{ index: 0, message, finish_reason: answer.kind === "text" ? "stop" : "tool_calls" }],
      usage: chatUsage(usage),
    };
  }
  return { ...responseObject(call, ids.message, "completed", [responsesItem(answer, ids)]), usage: responsesUsage(usage) };
}

/** An answer as one protocol's server-sent events, in the order its clients read them. */
export function answerEvents(call: ModelCall, answer: Answer, usage: Usage, ids: { message: string; toolCall: string }): string[] {
  if (call.protocol === "anthropic") return anthropicEvents(call, answer, usage, ids);
  if (call.protocol === "chat") return chatEvents(call, answer, usage, ids);
  return responsesEvents(call, answer, usage, ids);
}

const sse = (event: string | undefined, data: unknown) => `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;

const anthropicUsage = (u: Usage) => ({
  input_tokens: u.input,
  output_tokens: u.output,
  cache_read_input_tokens: u.cachedInput,
  cache_creation_input_tokens: 0,
});
// OpenAI counts cached tokens inside the prompt's.
const chatUsage = (u: Usage) => ({
  prompt_tokens: u.input + u.cachedInput,
  completion_tokens: u.output,
  total_tokens: u.input + u.cachedInput + u.output,
  prompt_tokens_details: { cached_tokens: u.cachedInput },
});
const responsesUsage = (u: Usage) => ({
  input_tokens: u.input + u.cachedInput,
  input_tokens_details: { cached_tokens: u.cachedInput },
  output_tokens: u.output,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: u.input + u.cachedInput + u.output,
});

function anthropicEvents(call: ModelCall, answer: Answer, usage: Usage, ids: { message: string; toolCall: string }): string[] {
  const event = (type: string, data: Json) => sse(type, { type, ...data });
  const start = { ...anthropicUsage(usage), output_tokens: 1 };
  const events = [
    event("message_start", {
      message: { id: ids.message, type: "message", role: "assistant", model: call.model, content: [], stop_reason: null, stop_sequence: null, usage: start },
    }),
  ];
  if (answer.kind === "text") {
    events.push(event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }));
    events.push(event("content_block_delta", { index: 0, delta: { type: "text_delta", text: answer.text } }));
  } else {
    events.push(event("content_block_start", { index: 0, content_block: { type: "tool_use", id: ids.toolCall, name: answer.name, input: {} } }));
    events.push(event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(answer.arguments) } }));
  }
  events.push(event("content_block_stop", { index: 0 }));
  events.push(
    event("message_delta", {
      delta: { stop_reason: answer.kind === "text" ? "end_turn" : "tool_use", stop_sequence: null },
      usage: { output_tokens: usage.output },
    }),
  );
  events.push(event("message_stop", {}));
  return events;
}

function chatEvents(call: ModelCall, answer: Answer, usage: Usage, ids: { message: string; toolCall: string }): string[] {
  const chunk = (delta: Json, finish: string | null, extra: Json = {}) =>
    sse(undefined, {
      id: ids.message,
      object: "chat.completion.chunk",
      created: 0,
      model: call.model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });
  const events = [chunk({ role: "assistant", content: "" }, null)];
  if (answer.kind === "text") events.push(chunk({ content: answer.text }, null));
  else
    events.push(
      chunk(
        { tool_calls: [{ index: 0, id: ids.toolCall, type: "function", function: { name: answer.name, arguments: JSON.stringify(answer.arguments) } }] },
        null,
      ),
    );
  events.push(chunk({}, answer.kind === "text" ? "stop" : "tool_calls"));
  // The usage chunk has no choices, as OpenAI sends it.
  if (call.includeUsage)
    events.push(sse(undefined, { id: ids.message, object: "chat.completion.chunk", created: 0, model: call.model, choices: [], usage: chatUsage(usage) }));
  events.push("data: [DONE]\n\n");
  return events;
}

function responseObject(call: ModelCall, id: string, status: string, output: Json[]): Json {
  return { id, object: "response", created_at: 0, status, model: call.model, output, error: null, incomplete_details: null };
}

function responsesItem(answer: Answer, ids: { message: string; toolCall: string }): Json {
  if (answer.kind === "text")
    return {
      type: "message",
      id: `${ids.message}_msg`,
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: answer.text, annotations: [] }],
    };
  return {
    type: "function_call",
    id: `${ids.toolCall}_item`,
    status: "completed",
    call_id: ids.toolCall,
    name: answer.name,
    arguments: JSON.stringify(answer.arguments),
  };
}

function responsesEvents(call: ModelCall, answer: Answer, usage: Usage, ids: { message: string; toolCall: string }): string[] {
  let sequence = 0;
  const event = (type: string, data: Json) => sse(type, { type, sequence_number: sequence++, ...data });
  const item = responsesItem(answer, ids);
  const events = [
    event("response.created", { response: responseObject(call, ids.message, "in_progress", []) }),
    event("response.in_progress", { response: responseObject(call, ids.message, "in_progress", []) }),
  ];
  if (answer.kind === "text") {
    const empty = { ...item, status: "in_progress", content: [] };
    events.push(event("response.output_item.added", { output_index: 0, item: empty }));
    events.push(
      event("response.content_part.added", { item_id: item.id, output_index: 0, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }),
    );
    events.push(event("response.output_text.delta", { item_id: item.id, output_index: 0, content_index: 0, delta: answer.text }));
    events.push(event("response.output_text.done", { item_id: item.id, output_index: 0, content_index: 0, text: answer.text }));
    events.push(
      event("response.content_part.done", {
        item_id: item.id,
        output_index: 0,
        content_index: 0,
        part: { type: "output_text", text: answer.text, annotations: [] },
      }),
    );
  } else {
    events.push(event("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", arguments: "" } }));
    events.push(event("response.function_call_arguments.delta", { item_id: item.id, output_index: 0, delta: item.arguments }));
    events.push(event("response.function_call_arguments.done", { item_id: item.id, output_index: 0, arguments: item.arguments }));
  }
  events.push(event("response.output_item.done", { output_index: 0, item }));
  events.push(event("response.completed", { response: { ...responseObject(call, ids.message, "completed", [item]), usage: responsesUsage(usage) } }));
  return events;
}

/** An error body as the protocol's clients parse it. */
export function errorBody(protocol: Protocol, type: string, message: string): Json {
  if (protocol === "anthropic") return { type: "error", error: { type, message } };
  return { error: { message, type, param: null, code: type } };
}
