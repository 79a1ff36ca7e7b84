import { afterEach, describe, expect, it } from "vitest";
import { ModelEndpoint } from "../../pipeline/model-endpoint/server.ts";
import { planChange } from "../../pipeline/model-endpoint/plan.ts";
import type { EndpointKnowledge, ModelScript } from "../../pipeline/model-endpoint/scripts.ts";

// One session of one task whose reference change rewrites one file: enough for every protocol and script.
const patch = ["diff --git a/pkg/a.py b/pkg/a.py", "--- a/pkg/a.py", "+++ b/pkg/a.py", "@@ -1,2 +1,2 @@", "-x = 1", "+x = 2", " y = 1", ""].join("\n");
const plan = planChange(
  patch,
  (p) => (p === "pkg/a.py" ? Buffer.from("x = 1\ny = 1\n") : null),
  (p) => (p === "pkg/a.py" ? Buffer.from("x = 2\ny = 1\n") : null),
);
const knowledge: EndpointKnowledge = {
  schedules: [
    {
      session: "s",
      condition: "control",
      requests: [{ task_id: "o__r-1", stage: 1, finalization: false, message: { repository: "o/r", checkout: "/workspace/w00", text: "Make x two." } }],
    },
  ],
  stages: () => 1,
  plan: () => plan,
  continuation: "Continue.",
};
const ask = "Repository: o/r\nWorking directory: /tmp/run/workspace/w00\n\nMake x two.";

let endpoint: ModelEndpoint | undefined;
afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
});
const start = async (script: ModelScript) => (endpoint = await ModelEndpoint.start({ script, knowledge }));
const post = (path: string, body: unknown) =>
  fetch(`${endpoint!.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
/** The data lines of a server-sent event stream, parsed. */
const events = (text: string) =>
  text
    .split("\n")
    .filter((l) => l.startsWith("data: ") && l !== "data: [DONE]")
    .map((l) => JSON.parse(l.slice(6)) as Record<string, any>);

describe("the model endpoint", () => {
  it("answers Anthropic Messages, streamed and not, with the tool call that makes the change in the checkout the request names", async () => {
    await start("solve");
    const tools = [{ name: "Read" }, { name: "Write" }, { name: "Bash" }];
    const plain = await (await post("/v1/messages", { model: "m", max_tokens: 100, tools, messages: [{ role: "user", content: ask }] })).json();
    expect(plain).toMatchObject({
      type: "message",
      role: "assistant",
      stop_reason: "tool_use",
      content: [{ type: "tool_use", name: "Read", input: { file_path: "/tmp/run/workspace/w00/pkg/a.py" } }],
    });
    const after = [
      { role: "user", content: ask },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Read", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "x = 1" }] },
    ];
    const streamed = events(await (await post("/v1/messages", { model: "m", max_tokens: 100, stream: true, tools, messages: after })).text());
    expect(streamed.map((e) => e.type)).toEqual(
      expect.arrayContaining(["message_start", "content_block_start", "content_block_delta", "message_delta", "message_stop"]),
    );
    const block = streamed.find((e) => e.type === "content_block_start")!.content_block;
    expect(block).toMatchObject({ type: "tool_use", name: "Write" });
    const input = JSON.parse(
      streamed
        .filter((e) => e.type === "content_block_delta")
        .map((e) => e.delta.partial_json)
        .join(""),
    );
    expect(input).toEqual({ file_path: "/tmp/run/workspace/w00/pkg/a.py", content: "x = 2\ny = 1\n" });
    // The log: every call, what it answered, the usage it reported, the whole request.
    expect(endpoint!.calls.map((c) => [c.protocol, c.stream, c.answer?.kind, c.request?.index])).toEqual([
      ["anthropic", false, "tool", 0],
      ["anthropic", true, "tool", 0],
    ]);
    expect(plain.usage.input_tokens).toBe(endpoint!.calls[0]!.usage!.input);
    expect(endpoint!.calls[1]!.body).toContain("tool_result");
  });

  it("answers OpenAI Chat Completions and the Responses API with a shell command, streamed and not", async () => {
    await start("solve");
    const tools = [{ type: "function", function: { name: "exec_command", parameters: {} } }];
    const chat = await (await post("/v1/chat/completions", { model: "m", tools, messages: [{ role: "user", content: ask }] })).json();
    const call = chat.choices[0].message.tool_calls[0];
    expect(call.function.name).toBe("exec_command");
    expect(JSON.parse(call.function.arguments).cmd).toContain("/tmp/run/workspace/w00/pkg/a.py");
    const chunks = events(await (await post("/v1/chat/completions", { model: "m", stream: true, tools, messages: [{ role: "user", content: ask }] })).text());
    expect(chunks.some((c) => c.choices?.[0]?.delta?.tool_calls)).toBe(true);
    const responses = await (
      await post("/v1/responses", {
        model: "m",
        tools: [{ type: "function", name: "exec_command" }],
        input: [{ role: "user", content: [{ type: "input_text", text: ask }] }],
      })
    ).json();
    expect(responses.output[0]).toMatchObject({ type: "function_call", name: "exec_command" });
    const streamed = events(
      await (
        await post("/v1/responses", { model: "m", stream: true, tools: [{ type: "function", name: "exec_command" }], input: [{ role: "user", content: ask }] })
      ).text(),
    );
    expect(streamed.at(-1)).toMatchObject({ type: "response.completed" });
    // OpenAI counts cached tokens inside the prompt's.
    expect(chat.usage.prompt_tokens).toBe(endpoint!.calls[0]!.usage!.input + endpoint!.calls[0]!.usage!.cachedInput);
  });

  it("answers a whole-file harness (no tools) with file listings, says a deletion in prose, and reads a request given back with Markdown hard breaks", async () => {
    const deleting = [
      patch.trimEnd(),
      "diff --git a/pkg/b.py b/pkg/b.py",
      "deleted file mode 100644",
      "--- a/pkg/b.py",
      "+++ /dev/null",
      "@@ -1 +0,0 @@",
      "-z = 1",
      "",
    ].join("\n");
    const old = (p: string) => (p === "pkg/a.py" ? Buffer.from("x = 1\ny = 1\n") : p === "pkg/b.py" ? Buffer.from("z = 1\n") : null);
    const now = (p: string) => (p === "pkg/a.py" ? Buffer.from("x = 2\ny = 1\n") : null);
    endpoint = await ModelEndpoint.start({ script: "solve", knowledge: { ...knowledge, plan: () => planChange(deleting, old, now) } });
    // As aider restores its history: every line ends in two spaces.
    const restored = ask.replace(/\n/g, "  \n") + "  ";
    const answer = await (await post("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: restored }] })).json();
    const text: string = answer.choices[0].message.content;
    expect(endpoint.calls[0]!.request?.index).toBe(0);
    expect(text).toContain("/tmp/run/workspace/w00/pkg/a.py\n```\nx = 2\ny = 1\n```");
    // Every fenced block is a file listing (a whole-file harness reads each one as a file); the deletion is prose.
    expect(text.match(/```/g)).toHaveLength(2);
    expect(text).toMatch(/delete \/tmp\/run\/workspace\/w00\/pkg\/b\.py: `rm -- '\/tmp\/run\/workspace\/w00\/pkg\/b\.py'`/);
    // A script that fails is answered at once (500), not left hanging.
    await endpoint.close();
    endpoint = await ModelEndpoint.start({
      script: "solve",
      knowledge: {
        ...knowledge,
        plan: () => {
          throw new Error("no plan");
        },
      },
    });
    const failed = await post("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: ask }] });
    expect(failed.status).toBe(500);
    expect(endpoint.internalErrors).toEqual(["no plan"]);
  });

  it("scripts the faults: overloaded is the provider's (529, 503), a model error comes after work (400), idle only talks, hang never answers", async () => {
    await start("overloaded");
    expect((await post("/v1/messages", { model: "m", messages: [{ role: "user", content: ask }] })).status).toBe(529);
    expect((await post("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: ask }] })).status).toBe(503);
    await endpoint!.close();
    await start("model-error");
    const tools = [{ name: "Read" }, { name: "Write" }];
    expect((await post("/v1/messages", { model: "m", tools, messages: [{ role: "user", content: ask }] })).status).toBe(200);
    const later = [
      { role: "user", content: ask },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Read", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "x = 1" }] },
    ];
    const failed = await post("/v1/messages", { model: "m", tools, messages: later });
    expect(failed.status).toBe(400);
    expect((await failed.json()).error.type).toBe("invalid_request_error");
    await endpoint!.close();
    await start("idle");
    const idle = await (await post("/v1/messages", { model: "m", tools, messages: [{ role: "user", content: ask }] })).json();
    expect(idle.content).toEqual([expect.objectContaining({ type: "text" })]);
    await endpoint!.close();
    await start("hang");
    const pending = post("/v1/messages", { model: "m", messages: [{ role: "user", content: ask }] }).then(
      () => "answered",
      () => "dropped",
    );
    // Nothing comes back until the endpoint closes and drops the connection.
    await new Promise((r) => setTimeout(r, 300));
    expect(endpoint!.calls.map((c) => c.status)).toEqual([-1]);
    await endpoint!.close();
    endpoint = undefined;
    expect(await pending).toBe("dropped");
  });
});
