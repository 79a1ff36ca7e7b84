import { describe, expect, it } from "vitest";
import { readAttempt, usageSince } from "../../../pipeline/session/usage.ts";

// Event lines in the shapes the real harnesses printed against the model endpoint (Codex CLI
// 0.171.0, OpenCode 1.18.33, aider 0.86.2), cut to the fields the readers use. Claude Code's reader
// runs against the real harness in test/pipeline/session/harnesses.test.ts.
const lines = (...events: unknown[]) => ["a warning the harness printed first", ...events.map((e) => JSON.stringify(e))].join("\n");

describe("reading a harness's own output", () => {
  it("Codex: the thread id, tool calls, and tokens as a running total the runner turns into each request's own", () => {
    const first = readAttempt(
      "codex",
      lines(
        { type: "thread.started", thread_id: "01a2-thread" },
        { type: "item.completed", item: { id: "item_0", type: "error", message: "Model metadata for `gpt-5-codex` not found." } },
        { type: "item.completed", item: { id: "item_1", type: "command_execution", command: "printf x > a.py", exit_code: 0 } },
        { type: "item.completed", item: { id: "item_2", type: "agent_message", text: "Done." } },
        { type: "turn.completed", usage: { input_tokens: 10225, cached_input_tokens: 2585, output_tokens: 82, reasoning_output_tokens: 0 } },
      ),
    );
    expect(first).toEqual({
      usage: { input_tokens: 7640, cached_input_tokens: 2585, output_tokens: 82, model_calls: null, tool_calls: 1 },
      cumulative: true,
      conversation: "01a2-thread",
    });
    const second = readAttempt(
      "codex",
      lines(
        { type: "thread.started", thread_id: "01a2-thread" },
        { type: "turn.completed", usage: { input_tokens: 20984, cached_input_tokens: 7964, output_tokens: 233 } },
      ),
    );
    // The second request's own: the difference from the first's total.
    expect(usageSince(second.usage!, first.usage!)).toEqual({
      input_tokens: 5380,
      cached_input_tokens: 5379,
      output_tokens: 151,
      model_calls: null,
      tool_calls: 0,
    });
    const overloaded = readAttempt("codex", lines({ type: "turn.failed", error: { message: "unexpected status 503 Service Unavailable: Overloaded" } }));
    expect(overloaded.failure).toEqual({ kind: "infrastructure", detail: "unexpected status 503 Service Unavailable: Overloaded" });
    expect(readAttempt("codex", lines({ type: "error", message: "invalid_request_error: bad tool call" })).failure!.kind).toBe("model");
  });

  it("OpenCode: one model call per step_finish with its tokens, tool_use events, the session id, and an error event though it exits 0", () => {
    const reading = readAttempt(
      "opencode",
      lines(
        { type: "step_start", sessionID: "ses_1", part: { type: "step-start" } },
        { type: "tool_use", sessionID: "ses_1", part: { id: "prt_1", type: "tool", tool: "read" } },
        {
          type: "step_finish",
          sessionID: "ses_1",
          part: { type: "step-finish", tokens: { input: 2443, output: 15, reasoning: 0, cache: { write: 0, read: 0 } } },
        },
        { type: "tool_use", sessionID: "ses_1", part: { id: "prt_2", type: "tool", tool: "write" } },
        {
          type: "step_finish",
          sessionID: "ses_1",
          part: { type: "step-finish", tokens: { input: 1260, output: 33, reasoning: 2, cache: { write: 5, read: 1259 } } },
        },
      ),
    );
    expect(reading).toEqual({
      usage: { input_tokens: 3708, cached_input_tokens: 1259, output_tokens: 50, model_calls: 2, tool_calls: 2 },
      conversation: "ses_1",
    });
    const failed = readAttempt(
      "opencode",
      lines({
        type: "error",
        sessionID: "ses_1",
        error: { name: "APIError", data: { message: "Cannot connect to API: Unable to connect.", statusCode: 503 } },
      }),
    );
    expect(failed.failure).toEqual({ kind: "infrastructure", detail: "API status 503: Cannot connect to API: Unable to connect." });
  });

  it("aider: model calls and prompt tokens whole from its analytics log, no cache split, and a failed call from the error it printed", () => {
    const reading = readAttempt(
      "aider",
      lines(
        { event: "message_send_starting", properties: {} },
        { event: "message_send", properties: { prompt_tokens: 666, completion_tokens: 32, total_tokens: 698 } },
        { event: "message_send_starting", properties: {} },
        { event: "message_send", properties: { prompt_tokens: 954, completion_tokens: 2, total_tokens: 956 } },
      ),
    );
    expect(reading).toEqual({ usage: { input_tokens: 1620, cached_input_tokens: null, output_tokens: 34, model_calls: 2, tool_calls: 0 } });
    const failed = readAttempt(
      "aider",
      `litellm.ServiceUnavailableError: OpenAIException - Overloaded\n${lines({ event: "message_send_starting", properties: {} })}`,
    );
    expect(failed).toEqual({ usage: null, failure: { kind: "infrastructure", detail: "litellm.ServiceUnavailableError: OpenAIException - Overloaded" } });
  });

  it("Claude Code: no result event is a failed request, never a silent success", () => {
    const cut = readAttempt(
      "claude-code",
      lines({ type: "system", subtype: "init", session_id: "s-1" }, { type: "assistant", session_id: "s-1", message: { id: "msg_1", content: [] } }),
    );
    expect(cut).toEqual({ usage: null, conversation: "s-1", failure: { kind: "model", detail: "the harness ended without its result event" } });
  });
});
