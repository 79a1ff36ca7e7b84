/**
 * A model call's conversation as the relay receives it (Anthropic Messages, OpenAI Responses, OpenAI
 * Chat Completions), read into the messages the router and memory work on (OpenCode's shape:
 * `{ info, parts }`, a tool part holding its call and its result), and the assembled messages
 * written back into the call. Every message read keeps the protocol's own entries it stands for,
 * so what goes out is the harness's own entries, whole, in order: a kept group loses nothing, a
 * dropped one goes whole (its calls with their results), and the memory record is one text block
 * put before the request's own.
 */
import { createHash } from "node:crypto";
import type { MessagePart, SessionMessage } from "./history.ts";

export type Protocol = "anthropic" | "responses" | "chat";

type Json = Record<string, unknown>;

/** The protocol a request path speaks, or undefined for a path that carries no conversation. */
export function protocolOfPath(path: string): Protocol | undefined {
  const bare = path.split("?")[0]!.replace(/\/+$/, "");
  if (/\/messages$/.test(bare) && !/\/count_tokens$/.test(bare)) return "anthropic";
  if (/\/responses$/.test(bare)) return "responses";
  if (/\/chat\/completions$/.test(bare)) return "chat";
  return undefined;
}

/**
 * Text a harness adds to a user's message on its own (Claude Code's reminders, Codex's environment
 * and instructions, an AGENTS.md): not the user's request, so it opens no interaction.
 */
const HARNESS_TEXT = /^\s*<(system-reminder|environment_context|user_instructions|INSTRUCTIONS|command-name|local-command-stdout)\b/;

/** The conversation every message of one relay shares (one relay serves one session run). */
export const RELAY_CONVERSATION = "relay";

/** What one read message stands for in the call: the protocol's entries, in order, and the whole original message where it is one. */
interface Entries {
  entries: Json[];
  /** The position of the protocol's message it was read from (an Anthropic message may be read as several). */
  index?: number;
}

function textPart(text: string): MessagePart {
  return { type: "text", text, ...(HARNESS_TEXT.test(text) ? { synthetic: true } : {}) };
}

function asText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content
      .map((c) => (typeof c === "string" ? c : typeof (c as Json)?.text === "string" ? String((c as Json).text) : ""))
      .filter(Boolean)
      .join("\n");
  return content === undefined || content === null ? "" : JSON.stringify(content);
}

/**
 * A request's id, the same in every call of the conversation: its text and how many identical
 * requests came before it (harnesses send the whole conversation each call, and a resumed
 * conversation is read back from disk, so positions may move but texts do not).
 */
function idsFor(): (role: string, text: string, index: number) => string {
  const seen = new Map<string, number>();
  return (role, text, index) => {
    if (role !== "user" || !text.trim()) return `msg_${index}`;
    const digest = createHash("sha256").update(text).digest("hex").slice(0, 16);
    const n = seen.get(digest) ?? 0;
    seen.set(digest, n + 1);
    return `req_${digest}_${n}`;
  };
}

function message(role: string, id: string, parts: MessagePart[], entries: Json[], index?: number): SessionMessage {
  return { info: { id, sessionID: RELAY_CONVERSATION, role, entries, ...(index !== undefined ? { index } : {}) } as SessionMessage["info"] & Entries, parts };
}

/** A tool call's part, its result found among the results the conversation holds. */
function toolPart(callID: string, tool: string, input: unknown, results: Map<string, { output: string; failed: boolean }>): MessagePart {
  const result = results.get(callID);
  return {
    type: "tool",
    callID,
    tool,
    state: result
      ? { status: result.failed ? "error" : "completed", input, ...(result.failed ? { error: result.output } : { output: result.output }) }
      : { status: "pending", input },
  };
}

function readAnthropic(body: Json): SessionMessage[] {
  const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
  const blocksOf = (m: Json): Json[] =>
    typeof m.content === "string" ? [{ type: "text", text: m.content }] : Array.isArray(m.content) ? (m.content as Json[]) : [];
  const results = new Map<string, { output: string; failed: boolean }>();
  for (const m of messages)
    for (const b of blocksOf(m)) if (b.type === "tool_result") results.set(String(b.tool_use_id), { output: asText(b.content), failed: b.is_error === true });
  const id = idsFor();
  const out: SessionMessage[] = [];
  messages.forEach((m, index) => {
    const role = String(m.role);
    const blocks = blocksOf(m);
    // A user message is read as up to three: the tool results it holds (they stay with the calls
    // they answer), the harness's own text (shared: kept whatever is routed), and the request.
    const resultBlocks = role === "user" ? blocks.filter((b) => b.type === "tool_result") : [];
    const harnessBlocks = role === "user" ? blocks.filter((b) => b.type === "text" && HARNESS_TEXT.test(String(b.text ?? ""))) : [];
    const rest = blocks.filter((b) => !resultBlocks.includes(b) && !harnessBlocks.includes(b));
    if (resultBlocks.length) out.push(message("user", `msg_${index}_results`, [{ type: "tool_result" }], resultBlocks, index));
    const harness = harnessBlocks.length
      ? message(
          "user",
          `msg_${index}_harness`,
          harnessBlocks.map((b) => textPart(String(b.text))),
          harnessBlocks,
          index,
        )
      : undefined;
    // Before any request it is shared by every task; later, it goes with the request it came with.
    const beforeAnyRequest = !out.some((m) => m.info.id.startsWith("req_"));
    if (harness && (beforeAnyRequest || !rest.length)) out.push(harness);
    if (!rest.length) return;
    const parts = rest.map((b) =>
      b.type === "text"
        ? textPart(String(b.text ?? ""))
        : b.type === "tool_use"
          ? toolPart(String(b.id), String(b.name), b.input, results)
          : { type: String(b.type) },
    );
    const text = parts
      .filter((p) => p.type === "text" && !p.synthetic)
      .map((p) => p.text)
      .join("\n");
    out.push(message(role, id(role, text, index), parts, rest, index));
    if (harness && !beforeAnyRequest) out.push(harness);
  });
  return out;
}

/**
 * The assembled messages as Anthropic messages: the pieces of one message read as several, where
 * they are still side by side, go out as one again, and a message with all of its pieces goes
 * out as it came (a string content stays a string). Tool results lead a user message's content,
 * as the API wants them; the record comes next, before the request.
 */
function writeAnthropic(body: Json, messages: SessionMessage[]): Json {
  const originals = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
  const out: Json[] = [];
  for (let i = 0; i < messages.length;) {
    const index = indexOf(messages[i]!);
    let j = i + 1;
    while (index !== undefined && j < messages.length && indexOf(messages[j]!) === index) j++;
    const run = messages.slice(i, j);
    i = j;
    const original = index === undefined ? undefined : originals[index];
    const injected = run.map(injectedText).filter(Boolean).join("\n\n");
    const entries = run.flatMap(entriesOf);
    const blocks = typeof original?.content === "string" ? 1 : Array.isArray(original?.content) ? original.content.length : -1;
    if (original && !injected && entries.length === blocks) {
      out.push(original);
      continue;
    }
    const results = entries.filter((e) => e.type === "tool_result");
    const others = entries.filter((e) => e.type !== "tool_result");
    out.push({ ...original, role: run[0]!.info.role, content: [...results, ...(injected ? [{ type: "text", text: injected }] : []), ...others] });
  }
  return { ...body, messages: out };
}

function indexOf(m: SessionMessage): number | undefined {
  return (m.info as SessionMessage["info"] & Partial<Entries>).index;
}

function readResponses(body: Json): SessionMessage[] {
  const items =
    typeof body.input === "string" ? [{ type: "message", role: "user", content: body.input }] : Array.isArray(body.input) ? (body.input as Json[]) : [];
  const results = new Map<string, { output: string; failed: boolean }>();
  for (const item of items) if (/_call_output$/.test(String(item.type))) results.set(String(item.call_id), { output: asText(item.output), failed: false });
  const id = idsFor();
  return items.map((item, index) => {
    const type = String(item.type ?? "message");
    if (type === "message") {
      const role = String(item.role ?? "user");
      const contents =
        typeof item.content === "string" ? [{ type: "input_text", text: item.content }] : Array.isArray(item.content) ? (item.content as Json[]) : [];
      const parts = contents.map((c) => (typeof c.text === "string" ? textPart(c.text) : { type: String(c.type) }));
      const text = parts
        .filter((p) => p.type === "text" && !p.synthetic)
        .map((p) => p.text)
        .join("\n");
      // A developer or system message is the harness's own instruction: read as a user message with no request in it.
      const readRole = role === "assistant" ? "assistant" : "user";
      return message(
        readRole,
        id(readRole, readRole === "user" && role === "user" ? text : "", index),
        role === "user" ? parts : parts.map((p) => ({ ...p, synthetic: true })),
        [item],
      );
    }
    if (/_call$/.test(type)) {
      const input = item.arguments ?? item.input ?? item.action;
      return message("assistant", `msg_${index}`, [toolPart(String(item.call_id ?? item.id), String(item.name ?? type), input, results)], [item]);
    }
    // A call's output goes with the call (no request in it); reasoning and the rest with the assistant.
    if (/_call_output$/.test(type)) return message("user", `msg_${index}`, [{ type: "tool_result" }], [item]);
    return message("assistant", `msg_${index}`, [{ type }], [item]);
  });
}

function writeResponses(body: Json, messages: SessionMessage[]): Json {
  return {
    ...body,
    input: entriesWithRecord(messages, (item, record) => {
      const content = typeof item.content === "string" ? [{ type: "input_text", text: item.content }] : ((item.content as Json[]) ?? []);
      return { ...item, content: [{ type: "input_text", text: record }, ...content] };
    }),
  };
}

function readChat(body: Json): SessionMessage[] {
  const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
  const results = new Map<string, { output: string; failed: boolean }>();
  for (const m of messages) if (m.role === "tool") results.set(String(m.tool_call_id), { output: asText(m.content), failed: false });
  const id = idsFor();
  return messages.map((m, index) => {
    const role = String(m.role);
    if (role === "tool") return message("user", `msg_${index}`, [{ type: "tool_result" }], [m]);
    const calls = Array.isArray(m.tool_calls) ? (m.tool_calls as Json[]) : [];
    const tools = calls.map((c) => {
      const fn = (c.function ?? {}) as Json;
      return toolPart(String(c.id), String(fn.name), fn.arguments, results);
    });
    const parts = [...(asText(m.content) ? [textPart(asText(m.content))] : []), ...tools];
    // The system prompt is the harness's: read as a message with no request in it.
    const readRole = role === "assistant" ? "assistant" : "user";
    const own = role === "user" ? parts : parts.map((p) => ({ ...p, synthetic: true }));
    const text = own
      .filter((p) => p.type === "text" && !p.synthetic)
      .map((p) => p.text)
      .join("\n");
    return message(readRole, id(readRole, text, index), own, [m]);
  });
}

function writeChat(body: Json, messages: SessionMessage[]): Json {
  return {
    ...body,
    messages: entriesWithRecord(messages, (message, record) => ({
      ...message,
      content:
        typeof message.content === "string" ? `${record}\n\n${message.content}` : [{ type: "text", text: record }, ...((message.content as Json[]) ?? [])],
    })),
  };
}

/** The messages' entries in order, the record the manager put before a request written into the request's entry by `put`. */
function entriesWithRecord(messages: SessionMessage[], put: (entry: Json, record: string) => Json): Json[] {
  return messages.flatMap((m) => {
    const record = injectedText(m);
    const [first, ...others] = entriesOf(m);
    return record && first ? [put(first, record), ...others] : entriesOf(m);
  });
}

/** The protocol's entries a message stands for (the record the router added is not among them). */
function entriesOf(m: SessionMessage): Json[] {
  return (m.info as SessionMessage["info"] & Partial<Entries>).entries ?? [];
}

/** The text the manager put before a request (the tasks' state records), if any. */
function injectedText(m: SessionMessage): string | undefined {
  const text = m.parts
    .filter((p) => typeof p.id === "string" && p.id.startsWith("prt_rcm_"))
    .map((p) => p.text ?? "")
    .join("\n\n");
  return text || undefined;
}

/** Whether a call is a harness's working call (it offers tools): the others (titles, summaries, checks) pass untouched. */
export function isWorkingCall(body: Json): boolean {
  return Array.isArray(body.tools) && body.tools.length > 0;
}

/** A call's conversation, read into the router's messages. */
export function readConversation(protocol: Protocol, body: Json): SessionMessage[] {
  return protocol === "anthropic" ? readAnthropic(body) : protocol === "responses" ? readResponses(body) : readChat(body);
}

/** The call with its conversation replaced by the assembled messages. */
export function writeConversation(protocol: Protocol, body: Json, messages: SessionMessage[]): Json {
  return protocol === "anthropic" ? writeAnthropic(body, messages) : protocol === "responses" ? writeResponses(body, messages) : writeChat(body, messages);
}
