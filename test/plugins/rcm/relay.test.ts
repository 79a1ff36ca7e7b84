import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { assemble } from "../../../plugins/rcm/assemble.ts";
import { interactionGroups, requestText, toolExchanges, type SessionMessage } from "../../../plugins/rcm/history.ts";
import { ResumptionContextManager } from "../../../plugins/rcm/manager.ts";
import { emptyRecord } from "../../../plugins/rcm/memory.ts";
import { ContextRelay } from "../../../plugins/rcm/relay-server.ts";
import { referencesIn, type Assignment } from "../../../plugins/rcm/router.ts";
import { isWorkingCall, protocolOfPath, readConversation, writeConversation, type Protocol } from "../../../plugins/rcm/wire.ts";
import { tempDir } from "../../helpers/tmp.ts";

type Json = Record<string, any>;
const fixture = (name: string) => JSON.parse(readFileSync(fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url)), "utf8")) as Json;
// The last model call of real runs of demo session geometry-3 (switched) against the scripted endpoint, each harness native: Claude Code 2.1.197's
// Anthropic Messages body and Codex CLI 0.171.0's Responses body (tools and system prompt cut to
// their first entry; the conversations whole).
const CALLS: { harness: string; protocol: Protocol; body: Json; path: string }[] = [
  { harness: "Claude Code", protocol: "anthropic", body: fixture("claude-code-messages-call.json"), path: "/v1/messages" },
  { harness: "Codex CLI", protocol: "responses", body: fixture("codex-responses-call.json"), path: "/v1/responses" },
];

/** The checkouts the session's switched schedule names, request by request (its 15 requests, all in each recorded call). */
const SCHEDULE = ["w02", "w01", "w03", "w02", "w04", "w00", "w03", "w02", "w04", "w03", "w03", "w01", "w00", "w02", "w02"];

const checkoutOf = (m: SessionMessage) => referencesIn(requestText(m)).checkout?.replace(/.*\//, "");
/** Each request's task by the checkout it names (w02 → t_w02): what references decide. */
const byCheckout = (groups: ReturnType<typeof interactionGroups>): Record<string, Assignment> =>
  Object.fromEntries(
    groups
      .filter((g) => g.request && !g.shared)
      .map((g) => [g.request!.info.id, { tasks: [`t_${checkoutOf(g.request!)}`], related: [], confidence: 1, by: "reference" as const, reason: "" }]),
  );

/** The tool call ids a protocol body holds, as calls and as results. */
function callIds(protocol: Protocol, body: Json): { calls: string[]; results: string[] } {
  if (protocol === "anthropic") {
    const blocks = (body.messages as Json[]).flatMap((m) => (Array.isArray(m.content) ? m.content : []));
    return {
      calls: blocks.filter((b) => b.type === "tool_use").map((b) => b.id),
      results: blocks.filter((b) => b.type === "tool_result").map((b) => b.tool_use_id),
    };
  }
  const items = body.input as Json[];
  return {
    calls: items.filter((i) => i.type === "function_call").map((i) => i.call_id),
    results: items.filter((i) => i.type === "function_call_output").map((i) => i.call_id),
  };
}

describe("the context relay's reading of real harness calls", () => {
  for (const { harness, protocol, body, path } of CALLS) {
    it(`${harness}: its path names its protocol; its conversation reads as one group per request, each tool call with its result, the harness's own text shared or with its request; written back unchanged`, () => {
      expect(protocolOfPath(path)).toBe(protocol);
      expect(isWorkingCall(body)).toBe(true);
      const messages = readConversation(protocol, body);
      const groups = interactionGroups(messages);
      const requests = groups.filter((g) => g.request && !g.shared);
      // Every request the harness was given (each names its checkout), in order; nothing the harness added opens one.
      for (const g of requests)
        expect(requestText(g.request!)).toMatch(/^Repository: demo-org\/geometry\nWorking directory \(the checkout of this task\): \S+\/w0\d\n/);
      expect(requests.map((g) => checkoutOf(g.request!))).toEqual(SCHEDULE);
      // Every tool call is read with its result, inside the group of the request it answered.
      for (const g of groups) for (const exchange of toolExchanges(g)) expect(exchange.output).not.toBe("");
      expect(groups.flatMap(toolExchanges).map((e) => e.callID)).toEqual(callIds(protocol, body).calls);
      // Nothing routed: the very call goes out.
      expect(writeConversation(protocol, body, messages)).toEqual(body);
    });

    it(`${harness}: a resumed request's call keeps its task's groups and the shared ones, whole: no other task's request, no call without its result or result without its call`, () => {
      const messages = readConversation(protocol, body);
      const groups = interactionGroups(messages);
      const assignments = byCheckout(groups);
      const out = writeConversation(protocol, body, assemble(messages, assignments, undefined, groups).messages);
      const current = checkoutOf(groups.at(-1)!.request!)!;
      const sent = readConversation(protocol, out);
      const kept = interactionGroups(sent).filter((g) => g.request && !g.shared);
      expect(kept.length).toBeGreaterThan(0);
      expect(kept.length).toBeLessThan(groups.filter((g) => g.request && !g.shared).length);
      for (const g of kept) expect(checkoutOf(g.request!)).toBe(current);
      const ids = callIds(protocol, out);
      expect(ids.results.sort()).toEqual(ids.calls.sort());
      // The harness's own instructions (its system or developer messages before any request) stay.
      const firstRequest = requestText(groups.find((g) => g.request && !g.shared)!.request!);
      const harnessText = JSON.stringify(protocol === "anthropic" ? (body.messages as Json[])[0] : (body.input as Json[])[0]).slice(0, 80);
      expect(JSON.stringify(out)).toContain(harnessText.slice(1, 60));
      if (checkoutOf(groups.find((g) => g.request && !g.shared)!.request!) !== current) expect(JSON.stringify(out)).not.toContain(JSON.stringify(firstRequest));
    });

    it(`${harness}: +RCM puts the task's record before the resumed request's own text, in the same message`, () => {
      const messages = readConversation(protocol, body);
      const groups = interactionGroups(messages);
      const assignments = byCheckout(groups);
      const requests = groups.filter((g) => g.request && !g.shared);
      const task = assignments[requests.at(-1)!.request!.info.id]!.tasks[0]!;
      // Resumption: make the request before the last one another task's.
      const previous = requests.at(-2)!.request!.info.id;
      assignments[previous] = { ...assignments[previous]!, tasks: ["t_other"] };
      const covers = requests.filter((g) => assignments[g.request!.info.id]!.tasks[0] === task).map((g) => g.request!.info.id);
      const record = { ...emptyRecord(task), goal: "the resumed task's goal", covers };
      const assembled = assemble(messages, assignments, { [task]: record }, groups);
      expect(assembled.records).toEqual([task]);
      const out = writeConversation(protocol, body, assembled.messages);
      const last = requestText(requests.at(-1)!.request!);
      if (protocol === "anthropic") {
        const message = (out.messages as Json[]).find((m) => Array.isArray(m.content) && m.content.some((b: Json) => b.text === last))!;
        const texts = (message.content as Json[]).filter((b) => b.type === "text").map((b) => b.text as string);
        expect(texts[0]).toContain(`<task_state_record task="${task}">`);
        expect(texts[1]).toBe(last);
      } else {
        const item = (out.input as Json[]).find((i) => i.type === "message" && i.content.some((c: Json) => c.text === last))!;
        expect(item.content[0].text).toContain(`<task_state_record task="${task}">`);
        expect(item.content[1].text).toBe(last);
      }
    });
  }
});

describe("the context relay's reading of Chat Completions", () => {
  // The shape aider and other Chat Completions clients send: a system prompt, requests naming their checkout, tool calls answered by `tool` messages.
  const ask = (checkout: string, text: string) => ({
    role: "user",
    content: `Repository: o/r\nWorking directory (the checkout of this task): /ws/${checkout}\n\n${text}`,
  });
  const body = {
    model: "m",
    tools: [{ type: "function", function: { name: "shell" } }],
    messages: [
      { role: "system", content: "You are a coding agent." },
      ask("w00", "Add parse_date."),
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "shell", arguments: '{"cmd":"ls"}' } }] },
      { role: "tool", tool_call_id: "c1", content: "a.py" },
      { role: "assistant", content: "Done." },
      ask("w01", "Fix the logger."),
      { role: "assistant", content: "Done too." },
      ask("w00", "Make parse_date accept ISO weeks."),
    ],
  };

  it("reads requests, a tool call with its result and the system prompt as shared; routed, the other task's request goes and the record leads the resumed one", () => {
    const messages = readConversation("chat", body);
    expect(writeConversation("chat", body, messages)).toEqual(body);
    const groups = interactionGroups(messages);
    expect(groups.map((g) => (g.shared ? "shared" : checkoutOf(g.request!)))).toEqual(["shared", "w00", "w01", "w00"]);
    expect(toolExchanges(groups[1]!)).toEqual([{ callID: "c1", tool: "shell", input: '{"cmd":"ls"}', output: "a.py", failed: false }]);
    const assignments = byCheckout(groups);
    const first = groups[1]!.request!.info.id;
    const record = { ...emptyRecord("t_w00"), goal: "parse dates", covers: [first] };
    const out = writeConversation("chat", body, assemble(messages, assignments, { t_w00: record }, groups).messages) as { messages: Json[] };
    expect(out.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "assistant", "user"]);
    expect(JSON.stringify(out)).not.toContain("Fix the logger.");
    expect(out.messages.at(-1)!.content).toMatch(/^<task_state_record task="t_w00">[\s\S]*\n\nRepository: o\/r\n/);
  });
});

/** A model API on loopback: records each call, answers working calls with a short SSE stream and auxiliary calls with JSON. */
class RecordingApi {
  readonly calls: { path: string; headers: IncomingMessage["headers"]; body: string }[] = [];
  private server?: Server;
  url = "";
  async start(): Promise<void> {
    this.server = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks).toString("utf8");
      this.calls.push({ path: request.url ?? "", headers: request.headers, body });
      if (body.includes("switch-swe RCM: task history router")) {
        response.writeHead(200, { "content-type": "application/json" });
        return void response.end(
          JSON.stringify({
            content: [{ type: "text", text: '{"tasks": ["new"], "related": [], "confidence": 0.5}' }],
            usage: { input_tokens: 11, output_tokens: 3 },
          }),
        );
      }
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write("event: message_start\ndata: {}\n\n");
      response.end("event: message_stop\ndata: {}\n\n");
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }
  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

describe("the context relay between a harness and its model API", () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });
  const started = async (upstream: string, mode: "router" | "rcm" = "router") => {
    const warnings: string[] = [];
    const dir = tempDir();
    const relay = new ContextRelay({ upstream, mode, dir, warn: (m) => warnings.push(m) });
    await relay.start();
    closers.push(() => relay.stop());
    return { relay, dir, warnings };
  };

  it("passes a working call on routed, streams the answer back as it came, and passes every other call untouched", async () => {
    const api = new RecordingApi();
    await api.start();
    closers.push(() => api.close());
    const { relay } = await started(api.url);
    const { body } = CALLS[0]!;
    const answer = await fetch(`${relay.url}/v1/messages?beta=true`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "k-123", "anthropic-version": "2023-06-01" },
      body: JSON.stringify(body),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("text/event-stream");
    expect(await answer.text()).toBe("event: message_start\ndata: {}\n\nevent: message_stop\ndata: {}\n\n");
    const forwarded = api.calls.at(-1)!;
    expect(forwarded.path).toBe("/v1/messages?beta=true");
    expect(forwarded.headers["x-api-key"]).toBe("k-123");
    const sent = JSON.parse(forwarded.body) as Json;
    expect(sent.messages.length).toBeLessThan((body.messages as Json[]).length);
    expect({ ...sent, messages: [] }).toEqual({ ...body, messages: [] });
    // No tools: a title or summary call, passed on byte for byte; so is a GET.
    const plain = JSON.stringify({ model: "m", messages: [{ role: "user", content: "Summarise." }] });
    await (await fetch(`${relay.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: plain })).text();
    expect(api.calls.at(-1)!.body).toBe(plain);
    await (await fetch(`${relay.url}/v1/models`)).text();
    expect(api.calls.at(-1)!.path).toBe("/v1/models");
  });

  it("a request naming no checkout is routed by an auxiliary call in the harness's protocol, with its credentials and model, logged with its usage", async () => {
    const api = new RecordingApi();
    await api.start();
    closers.push(() => api.close());
    const { relay, dir } = await started(api.url);
    const body = { model: "claude-x", tools: [{ name: "Bash" }], max_tokens: 100, messages: [{ role: "user", content: "What would you change first?" }] };
    await (
      await fetch(`${relay.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "k-9" },
        body: JSON.stringify(body),
      })
    ).text();
    const [router, working] = api.calls;
    expect(router!.path).toBe("/v1/messages");
    expect(router!.headers["x-api-key"]).toBe("k-9");
    expect(JSON.parse(router!.body)).toMatchObject({ model: "claude-x", system: expect.stringContaining("switch-swe RCM: task history router") });
    // Below confidence 0.8: the full history (here, the request) goes on.
    expect(JSON.parse(working!.body)).toEqual(body);
    const usage = readFileSync(join(dir, "usage.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(usage).toEqual([
      expect.objectContaining({ auxiliary: "router", part: expect.objectContaining({ tokens: expect.objectContaining({ input: 11, output: 3 }) }) }),
      // The request's routing decision, once: the router model's, at the confidence it gave.
      expect.objectContaining({ type: "routing", by: "router", confidence: 0.5 }),
    ]);
  });

  it("an API that cannot be reached is an answer the harness reads as the provider's fault (502, in its error shape), and the relay goes on", async () => {
    const { relay, warnings } = await started("http://127.0.0.1:9");
    const answer = await fetch(`${relay.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [] }),
    });
    expect(answer.status).toBe(502);
    expect(await answer.json()).toMatchObject({ type: "error", error: { type: "api_error", message: expect.stringContaining("could not pass the call on") } });
    expect(warnings.length).toBe(1);
    const again = await fetch(`${relay.url}/v1/models`);
    expect(again.status).toBe(502);
  });

  it("the state persists in its directory: a manager opened on it again knows the tasks", async () => {
    const api = new RecordingApi();
    await api.start();
    closers.push(() => api.close());
    const { relay, dir } = await started(api.url);
    const { body } = CALLS[0]!;
    await (await fetch(`${relay.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).text();
    const decisions = readFileSync(join(dir, "decisions.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toMatchObject({ assignment: { by: "reference", confidence: 1 } });
    expect(decisions[0].dropped_groups).toBeGreaterThan(0);
    const again = new ResumptionContextManager({ mode: "router", dir, warn: () => {} });
    const messages = readConversation("anthropic", body);
    expect((await again.transform(messages)).length).toBe(decisions[0].sent_messages);
  });
});
