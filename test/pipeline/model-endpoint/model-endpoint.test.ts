import { afterEach, describe, expect, it } from "vitest";
import { ModelEndpoint } from "../../../pipeline/model-endpoint/server.ts";
import { planChange } from "../../../pipeline/model-endpoint/plan.ts";
import { answerWith, recogniseRequests, type EndpointKnowledge, type ModelScript } from "../../../pipeline/model-endpoint/scripts.ts";
import type { ModelCall, Turn } from "../../../pipeline/model-endpoint/wire.ts";

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

  it("reports as cached input the prefix a call shares with earlier calls, in whole tokens of four characters, in every protocol", async () => {
    await start("idle");
    // A system prompt, a first request, the model's answer, a second request of the same task, and a
    // request of another task whose header begins as the first's does.
    const system = "You are a coding agent. ".repeat(20);
    const first = `${ask}\n${"First request, in detail. ".repeat(8)}`;
    const answer = "I made x two.";
    const second = "Now make y two as well.";
    const other = "Repository: o/r\nWorking directory: /tmp/run/workspace/w01\n\nSomething else entirely.";
    const header = "Repository: o/r\nWorking directory: /tmp/run/workspace/w0".length;
    expect(first.startsWith(other.slice(0, header)) && first[header] !== other[header]).toBe(true);
    // Characters of each prompt as the endpoint counts them: an assistant turn is its text and its tool calls ("[]": none).
    const whole = system.length + first.length + answer.length + "[]".length + second.length;
    const bodies = {
      anthropic: (model: string, turns: { role: string; text: string }[]) => ({
        model,
        max_tokens: 100,
        system,
        messages: turns.map((t) => ({ role: t.role, content: t.text })),
      }),
      chat: (model: string, turns: { role: string; text: string }[]) => ({
        model,
        messages: [{ role: "system", content: system }, ...turns.map((t) => ({ role: t.role, content: t.text }))],
      }),
      responses: (model: string, turns: { role: string; text: string }[]) => ({
        model,
        instructions: system,
        input: turns.map((t) =>
          t.role === "user"
            ? { type: "message", role: "user", content: [{ type: "input_text", text: t.text }] }
            : { type: "message", role: "assistant", content: [{ type: "output_text", text: t.text }] },
        ),
      }),
    };
    const paths = { anthropic: "/v1/messages", chat: "/v1/chat/completions", responses: "/v1/responses" };
    // The cached input each protocol's clients read.
    const cachedOf = (protocol: keyof typeof bodies, usage: Record<string, any>): number =>
      protocol === "anthropic"
        ? usage.cache_read_input_tokens
        : protocol === "chat"
          ? usage.prompt_tokens_details.cached_tokens
          : usage.input_tokens_details.cached_tokens;
    for (const protocol of ["anthropic", "chat", "responses"] as const) {
      const send = async (model: string, turns: { role: string; text: string }[]) => {
        const body = await (await post(paths[protocol], bodies[protocol](model, turns))).json();
        const logged = endpoint!.calls.at(-1)!.usage!;
        expect(cachedOf(protocol, body.usage)).toBe(logged.cachedInput);
        return logged;
      };
      const u = (text: string) => ({ role: "user", text });
      const a = (text: string) => ({ role: "assistant", text });
      // The first call of a conversation: nothing sent before in this protocol.
      expect((await send("m", [u(first)])).cachedInput).toBe(0);
      // The conversation continued: everything the first call sent is cached, the answer and the new request are not.
      const continued = await send("m", [u(first), a(answer), u(second)]);
      expect(continued.cachedInput).toBe(Math.floor((system.length + first.length) / 4));
      expect(continued.input + continued.cachedInput).toBe(Math.ceil(whole / 4));
      // A context manager's switch: the first request is left out, so the prefix breaks inside the new request's header.
      expect((await send("m", [u(other)])).cachedInput).toBe(Math.floor((system.length + header) / 4));
      // The same conversation sent again: all of it was sent before.
      expect((await send("m", [u(first), a(answer), u(second)])).cachedInput).toBe(Math.floor(whole / 4));
      // Another model has a cache of its own.
      expect((await send("other-model", [u(first), a(answer), u(second)])).cachedInput).toBe(0);
    }
  });
});

describe("the distracted script, and requests recognised in a context that leaves some out", () => {
  // Task A (the focus) in two stages and a finalization, B's one request between A's first two.
  const patchA = ["diff --git a/a.py b/a.py", "--- a/a.py", "+++ b/a.py", "@@ -1,2 +1,2 @@", "-x = 1", "+x = 2", "-y = 1", "+y = 2", ""].join("\n");
  const planA = planChange(
    patchA,
    (p) => (p === "a.py" ? Buffer.from("x = 1\ny = 1\n") : null),
    (p) => (p === "a.py" ? Buffer.from("x = 2\ny = 2\n") : null),
  );
  const request = (task: string, stage: number | undefined, checkout: string, text: string) => ({
    task_id: task,
    ...(stage !== undefined ? { stage } : {}),
    finalization: stage === undefined,
    message: { repository: "o/r", checkout, text },
  });
  const switched = [
    request("A", 1, "/workspace/w00", "A: make x two."),
    request("B", 1, "/workspace/w01", "B: something else."),
    request("A", 2, "/workspace/w00", "A: now y two as well."),
    request("A", undefined, "/workspace/w00", "A: finalize."),
  ];
  const twoTasks: EndpointKnowledge = {
    schedules: [{ session: "s", condition: "switched", requests: switched }],
    stages: (task) => (task === "A" ? 2 : 1),
    plan: (task) =>
      task === "A"
        ? planA
        : planChange(
            "",
            () => null,
            () => null,
          ),
    continuation: "Continue.",
  };
  const user = (r: (typeof switched)[number]): Turn => ({
    role: "user",
    text: `Repository: o/r\nWorking directory: /run${r.message.checkout}\n\n${r.message.text}`,
  });
  const wrote: Turn = { role: "assistant", text: "", toolCalls: [{ id: "c1", name: "read", arguments: "{}" }] };
  const call = (turns: Turn[]): ModelCall => ({
    protocol: "chat",
    model: "m",
    stream: false,
    tools: ["read", "write", "bash"],
    system: "",
    turns,
    includeUsage: false,
  });
  /** What the script writes into a.py for the last request of `turns` (its second tool call: read, then write). */
  const written = (script: ModelScript, turns: Turn[]) => {
    const outcome = answerWith(script, call([...turns, wrote, { role: "tool", callId: "c1", output: "" }]), twoTasks);
    return "answer" in outcome && outcome.answer.kind === "tool" ? outcome.answer.arguments.content : outcome;
  };

  it("windows of a plan apply only their units", () => {
    expect(planA.change([0, 0], [0, 2])).toEqual([{ path: "a.py", state: { kind: "text", text: "x = 2\ny = 1\n" } }]);
    expect(planA.change([0, 0], [2, 4])).toEqual([{ path: "a.py", state: { kind: "text", text: "x = 1\ny = 2\n" } }]);
    expect(planA.between(0, 4)).toEqual(planA.change([0, 0], [0, 4]));
    expect(planA.change([1, 3], [1, 3])).toEqual([]);
  });

  it("a task resumed after another task's request, in the context sent, is rebuilt from the requests since: the earlier requirement is dropped; the same request with the other task's left out is solved", () => {
    const [a1, b1, a2, final] = switched;
    const mixed = [
      user(a1!),
      { role: "assistant", text: "Done.", toolCalls: [] } as Turn,
      user(b1!),
      { role: "assistant", text: "Done.", toolCalls: [] } as Turn,
      user(a2!),
    ];
    // The whole change is x = 2 and y = 2; distracted, the model keeps only what the second request's units do.
    expect(written("solve", mixed)).toBe("x = 2\ny = 2\n");
    expect(written("distracted", mixed)).toBe("x = 1\ny = 2\n");
    const routed = [user(a1!), { role: "assistant", text: "Done.", toolCalls: [] } as Turn, user(a2!)];
    expect(recogniseRequests(call(routed), twoTasks).requests.map((r) => [r.task, r.stage])).toEqual([
      ["A", 1],
      ["A", 2],
    ]);
    expect(written("distracted", routed)).toBe("x = 2\ny = 2\n");
    // At the finalization right after, the distracted model stays with what it rebuilt: no change.
    const finalOutcome = answerWith("distracted", call([...mixed, { role: "assistant", text: "Done.", toolCalls: [] }, user(final!)]), twoTasks);
    expect("answer" in finalOutcome && finalOutcome.answer).toEqual({ kind: "text", text: "Nothing needs changing for this request." });
  });

  it("a request quoting earlier ones (a state record before it) is recognised as itself", () => {
    const [a1, b1, a2] = switched;
    const quoting: Turn = { role: "user", text: `<task_state_record>\n- ${a1!.message.text}\n</task_state_record>\n${(user(a2!) as { text: string }).text}` };
    expect(recogniseRequests(call([user(a1!), user(b1!), quoting]), twoTasks).requests.map((r) => [r.task, r.stage])).toEqual([
      ["A", 1],
      ["B", 1],
      ["A", 2],
    ]);
  });

  it("a routed context is matched to the session whose checkouts it names: the same task, and the same finalization text, are in other sessions at other checkouts", () => {
    const [a1, b1, a2, final] = switched;
    // Another session where A is an interruption at w03, before that session's own finalization (the same text) at w05.
    const other = [
      request("C", 1, "/workspace/w05", "C: start."),
      { ...a1!, message: { ...a1!.message, checkout: "/workspace/w03" } },
      { ...a2!, message: { ...a2!.message, checkout: "/workspace/w03" } },
      request("C", undefined, "/workspace/w05", final!.message.text),
    ];
    const knowledge: EndpointKnowledge = { ...twoTasks, schedules: [{ session: "other", condition: "switched", requests: other }, ...twoTasks.schedules] };
    const routed = [user(a1!), user(a2!), user(final!)];
    expect(recogniseRequests(call(routed), knowledge).requests.map((r) => [r.task, r.finalization, r.checkout])).toEqual([
      ["A", false, "/run/workspace/w00"],
      ["A", false, "/run/workspace/w00"],
      ["A", true, "/run/workspace/w00"],
    ]);
    void b1;
  });
});

describe("a change planned in units", () => {
  it("applies a prefix of a file's changed lines in order, and a file that ends without a newline keeps that on each side", () => {
    // Two hunks; the second rewrites the last line, which has no newline before the change and gains none after.
    const base = "a = 1\nb = 1\nc = 1\nd = 1\ne = 1\nf = 1\ng = 1\nlast = 1";
    const final = "a = 2\nb = 1\nc = 1\nd = 1\ne = 1\nf = 1\ng = 1\nlast = 2";
    const change = [
      "diff --git a/m.py b/m.py",
      "--- a/m.py",
      "+++ b/m.py",
      "@@ -1,2 +1,2 @@",
      "-a = 1",
      "+a = 2",
      " b = 1",
      "@@ -7,2 +7,2 @@",
      " g = 1",
      "-last = 1",
      "\\ No newline at end of file",
      "+last = 2",
      "\\ No newline at end of file",
      "",
    ].join("\n");
    const planned = planChange(
      change,
      () => Buffer.from(base),
      () => Buffer.from(final),
    );
    expect(planned.units).toBe(4);
    const textAt = (units: number) => {
      const op = planned.between(0, units)[0];
      return op === undefined ? base : op.state.kind === "text" ? op.state.text : op.state.kind;
    };
    expect(textAt(0)).toBe(base);
    // The first unit removes `a = 1`, the second adds `a = 2`; the third removes the last line (no newline to leave behind).
    expect(textAt(1)).toBe(base.replace("a = 1\n", ""));
    expect(textAt(2)).toBe(base.replace("a = 1", "a = 2"));
    expect(textAt(3)).toBe("a = 2\nb = 1\nc = 1\nd = 1\ne = 1\nf = 1\ng = 1\n");
    expect(textAt(4)).toBe(final);
  });
});
