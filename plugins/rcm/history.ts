/**
 * A conversation as OpenCode hands it to a plugin (experimental.chat.messages.transform): messages
 * of `{ info, parts }`, where a tool part holds both the call and its result. Read here into
 * interaction groups: a user request with everything the assistant did in answer to it. Nothing
 * here changes a message; the router and the memory only choose and add.
 */

export interface MessageInfo {
  id: string;
  sessionID: string;
  role: "user" | "assistant" | string;
  /** OpenCode marks the assistant message that summarises a compacted history. */
  summary?: unknown;
  [key: string]: unknown;
}

export interface MessagePart {
  type: string;
  id?: string;
  text?: string;
  synthetic?: boolean;
  tool?: string;
  callID?: string;
  state?: { status?: string; input?: unknown; output?: unknown; error?: unknown };
  [key: string]: unknown;
}

export interface SessionMessage {
  info: MessageInfo;
  parts: MessagePart[];
}

/**
 * One interaction: a user request and the assistant messages that answered it (their tool calls
 * and results inside them), or the shared messages before any request (`request` undefined), or a
 * compaction summary with the request that asked for it.
 */
export interface InteractionGroup {
  /** The user message that opened it; undefined for what came before any request. */
  request?: SessionMessage;
  messages: SessionMessage[];
  /** Shared by every task: what precedes the first request, and what native compaction made. */
  shared: boolean;
}

/** The text a user typed in a message: its text parts that OpenCode did not add itself. */
export function requestText(message: SessionMessage): string {
  return message.parts
    .filter((p) => p.type === "text" && typeof p.text === "string" && !p.synthetic)
    .map((p) => p.text!)
    .join("\n");
}

/** Whether a message belongs to native compaction: the request for it, or the summary it made. */
export function isCompaction(message: SessionMessage): boolean {
  return Boolean(message.info.summary && message.info.role === "assistant") || message.parts.some((p) => p.type === "compaction");
}

/**
 * The conversation's interaction groups, in order. Every message is in exactly one. A user message
 * OpenCode wrote itself (only synthetic text: the request to continue after a compaction) opens no
 * group: it belongs to the interaction before it, as an assistant message would.
 */
export function interactionGroups(messages: SessionMessage[]): InteractionGroup[] {
  const groups: InteractionGroup[] = [];
  for (const message of messages) {
    if (message.info.role === "user" && (requestText(message).trim() !== "" || isCompaction(message))) {
      groups.push({ request: message, messages: [message], shared: isCompaction(message) });
      continue;
    }
    const last = groups.at(-1);
    if (!last) groups.push({ messages: [message], shared: true });
    else {
      last.messages.push(message);
      if (isCompaction(message)) last.shared = true;
    }
  }
  return groups;
}

/** The tool calls of a group with their results, for the memory: tool, input, output (or error) as text. */
export function toolExchanges(group: InteractionGroup): { callID: string; tool: string; input: string; output: string; failed: boolean }[] {
  const exchanges = [];
  for (const message of group.messages)
    for (const part of message.parts) {
      if (part.type !== "tool" || !part.state) continue;
      const failed = part.state.status === "error";
      exchanges.push({
        callID: String(part.callID ?? part.id ?? ""),
        tool: String(part.tool ?? ""),
        input: typeof part.state.input === "string" ? part.state.input : JSON.stringify(part.state.input ?? {}),
        output: String((failed ? part.state.error : part.state.output) ?? ""),
        failed,
      });
    }
  return exchanges;
}

/** What the assistant said in a group (its text parts), as claims for the memory. */
export function assistantText(group: InteractionGroup): string {
  return group.messages
    .filter((m) => m.info.role === "assistant")
    .flatMap((m) => m.parts.filter((p) => p.type === "text" && typeof p.text === "string").map((p) => p.text!))
    .join("\n");
}
