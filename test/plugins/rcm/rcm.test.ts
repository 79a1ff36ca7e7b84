import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { assemble, RECENT_VERBATIM } from "../../../plugins/rcm/assemble.ts";
import { interactionGroups, requestText, type SessionMessage } from "../../../plugins/rcm/history.ts";
import { ResumptionContextManager } from "../../../plugins/rcm/manager.ts";
import { SwitchSweResumptionContextManager } from "../../../plugins/rcm/opencode.ts";
import { batches, emptyRecord, MAX_GROUPS_PER_UPDATE, readMemoryAnswer, type InteractionInput } from "../../../plugins/rcm/memory.ts";
import { readRouterAnswer, referencesIn, type Assignment } from "../../../plugins/rcm/router.ts";
import { ModelEndpoint } from "../../../pipeline/model-endpoint/server.ts";
import { readRouting } from "../../../pipeline/session/usage.ts";
import { tempDir } from "../../helpers/tmp.ts";

// What OpenCode 1.18.33 handed the plugin hook on the last model call of a real run: four requests
// of demo session geometry-20 (checkouts w00, w04, w01, then w00 again), with read and write tool
// calls, the last request's turn in progress.
const recorded = JSON.parse(readFileSync(fileURLToPath(new URL("../../fixtures/opencode-transform-messages.json", import.meta.url)), "utf8")) as {
  messages: SessionMessage[];
};
const messages = () => structuredClone(recorded.messages);
const byReference = (tasks: string[]): Record<string, Assignment> =>
  Object.fromEntries(
    interactionGroups(recorded.messages).map((g, i) => [
      g.request!.info.id,
      { tasks: [tasks[i]!], related: [], confidence: 1, by: "reference" as const, reason: "" },
    ]),
  );
const callIds = (list: SessionMessage[]) => list.flatMap((m) => m.parts.filter((p) => p.type === "tool").map((p) => p.callID));

describe("the Resumption Context Manager plugin, on a conversation recorded from OpenCode", () => {
  it("reads the conversation as interaction groups: each request with the assistant messages that answered it, every message in one group", () => {
    const groups = interactionGroups(recorded.messages);
    expect(groups.map((g) => referencesIn(requestText(g.request!)).checkout)).toEqual([
      "/tmp/probe/ws/w00",
      "/tmp/probe/ws/w04",
      "/tmp/probe/ws/w01",
      "/tmp/probe/ws/w00",
    ]);
    expect(groups.flatMap((g) => g.messages)).toEqual(recorded.messages);
    // OpenCode's own link from an answer to its request agrees with the grouping.
    for (const g of groups) for (const m of g.messages.slice(1)) expect(m.info.parentID).toBe(g.request!.info.id);
  });

  it("routes a resumed request's call to its task's groups, whole: no tool call without its result, no message changed, the stored messages untouched", () => {
    const input = messages();
    const out = assemble(input, byReference(["t1", "t2", "t3", "t1"]));
    expect(out).toMatchObject({ droppedGroups: 2, condensedGroups: 0, records: [] });
    expect(input).toEqual(recorded.messages);
    const groups = interactionGroups(recorded.messages);
    expect(out.messages).toEqual([...groups[0]!.messages, ...groups[3]!.messages]);
    expect(callIds(out.messages)).toEqual(callIds([...groups[0]!.messages, ...groups[3]!.messages]));
    // A tool part carries its call and its result: each one kept has both.
    for (const m of out.messages)
      for (const p of m.parts.filter((p) => p.type === "tool")) {
        expect(p.state!.input).toBeDefined();
        expect(p.state!.output ?? p.state!.error).toBeDefined();
      }
  });

  it("keeps the whole history below confidence 0.8, for an unassigned request, and for compaction; keeps unassigned and related groups visible", () => {
    const assignments = byReference(["t1", "t2", "t3", "t1"]);
    const current = interactionGroups(recorded.messages)[3]!.request!.info.id;
    const low = { ...assignments, [current]: { ...assignments[current]!, confidence: 0.79 } };
    expect(assemble(recorded.messages, low)).toMatchObject({ messages: recorded.messages, unfiltered: "low_confidence" });
    const { [current]: _dropped, ...unassigned } = assignments;
    expect(assemble(recorded.messages, unassigned)).toMatchObject({ messages: recorded.messages, unfiltered: "unassigned" });
    const second = interactionGroups(recorded.messages)[1]!.request!.info.id;
    const related = { ...assignments, [current]: { ...assignments[current]!, related: ["t2"] } };
    expect(assemble(recorded.messages, related).droppedGroups).toBe(1);
    const { [second]: _second, ...withUnassigned } = assignments;
    expect(assemble(recorded.messages, withUnassigned).droppedGroups).toBe(1);
    // Native compaction's request (a user message with a compaction part) is the latest: nothing is filtered.
    const withCompaction = messages();
    withCompaction[withCompaction.map((m) => m.info.role).lastIndexOf("user")]!.parts.push({ type: "compaction" });
    expect(assemble(withCompaction, assignments).unfiltered).toBe("compaction");
  });

  it("after a native compaction, OpenCode's own request to continue opens no task: the call gets the summary and everything after it, with no routing call", async () => {
    const after = JSON.parse(readFileSync(fileURLToPath(new URL("../../fixtures/opencode-transform-after-compaction.json", import.meta.url)), "utf8")) as {
      messages: SessionMessage[];
    };
    const groups = interactionGroups(after.messages);
    expect(groups.map((g) => [g.shared, g.messages.length])).toEqual([[true, 3]]);
    const warnings: string[] = [];
    const manager = new ResumptionContextManager({
      mode: "rcm",
      dir: tempDir(),
      auxiliary: { url: "http://127.0.0.1:9/v1", model: "scripted", timeoutSeconds: 5 },
      warn: (m) => warnings.push(m),
    });
    expect(await manager.transform(after.messages)).toEqual(after.messages);
    // Nothing was asked of the auxiliary model (it is unreachable here: a call would have warned).
    expect(warnings).toEqual([]);
  });

  it("the plugin's hooks: native compaction is told to keep every task; a model call's messages are changed in place, the stored ones untouched", async () => {
    const previous = { ...process.env };
    process.env.SWITCH_SWE_RCM = "router";
    process.env.SWITCH_SWE_RCM_DIR = tempDir();
    delete process.env.SWITCH_SWE_RCM_URL;
    try {
      const hooks = await SwitchSweResumptionContextManager();
      const compacting = { context: [] as string[] };
      await hooks["experimental.session.compacting"]({}, compacting);
      expect(compacting.context).toEqual([expect.stringMatching(/keep every task apart, suspended ones included: for each, its goal/)]);
      const output = { messages: messages() };
      const array = output.messages;
      await hooks["experimental.chat.messages.transform"]({}, output);
      expect(output.messages).toBe(array);
      expect(output.messages.map((m) => m.info.id)).toEqual(assemble(recorded.messages, byReference(["t1", "t2", "t3", "t1"])).messages.map((m) => m.info.id));
    } finally {
      process.env = previous;
    }
  });

  it("+RCM: on resumption the task's record goes first in the request, the request's own text verbatim; only older exchanges the record covers are condensed", () => {
    // The recorded groups repeated: the focus task t1 has five earlier interactions, then the others' three, then it resumes.
    const groups = interactionGroups(recorded.messages);
    const copy = (g: (typeof groups)[number], n: number): SessionMessage[] =>
      g.messages.map((m) => ({ info: { ...m.info, id: `${m.info.id}-${n}` }, parts: m.parts }));
    const focus = [0, 1, 2, 3, 4].map((n) => copy(groups[0]!, n));
    const others = [5, 6, 7].map((n) => copy(groups[1]!, n));
    const resumed = copy(groups[3]!, 8);
    const conversation = [...focus.flat(), ...others.flat(), ...resumed];
    const assignments: Record<string, Assignment> = {};
    for (const [i, g] of [...focus, ...others, resumed].entries())
      assignments[g[0]!.info.id] = { tasks: [i < 5 || i === 8 ? "t1" : "t2"], related: [], confidence: 1, by: "reference", reason: "" };
    const record = { ...emptyRecord("t1"), goal: "Add trim_span", covers: focus.slice(0, 4).map((g) => g[0]!.info.id) };
    const out = assemble(conversation, assignments, { t1: record });
    expect(out.records).toEqual(["t1"]);
    // Covered and older than the latest RECENT_VERBATIM: the first three (the fourth is covered but recent).
    expect(out.condensedGroups).toBe(5 - RECENT_VERBATIM);
    const sent = out.messages;
    expect(sent.filter((m) => m.info.role === "user").map((m) => m.info.id)).toEqual([...focus.map((g) => g[0]!.info.id), resumed[0]!.info.id]);
    for (const g of focus.slice(0, 3)) expect(sent.filter((m) => m.info.id.endsWith(g[0]!.info.id.slice(-2)) && m.info.role === "assistant")).toEqual([]);
    const request = sent.find((m) => m.info.id === resumed[0]!.info.id)!;
    expect(request.parts[0]).toMatchObject({ type: "text", synthetic: true });
    expect(request.parts[0]!.text).toMatch(/^<task_state_record task="t1">[\s\S]*the current request holds[\s\S]*Goal: Add trim_span/);
    expect(request.parts.slice(1)).toEqual(resumed[0]!.parts);
    // Not a resumption (the task's own request came just before): no record.
    expect(assemble([...focus.flat(), ...resumed], assignments, { t1: record }).records).toEqual([]);
  });

  it("memory: items must cite the task's own requests or tool calls; work is observed only on a successful tool call; an unreadable answer changes nothing", () => {
    const batch: InteractionInput[] = [
      {
        id: "msg_1",
        user_request: "Add f",
        tool_observations: [
          { id: "call_ok", tool: "write", input: '{"filePath":"/w/a.py"}', output: "Wrote file successfully.", failed: false },
          { id: "call_bad", tool: "read", input: '{"filePath":"/w/b.py"}', output: "File not found", failed: true },
        ],
        assistant_claims: "Done.",
      },
    ];
    const answer = JSON.stringify({
      goal: "Add f",
      constraints: [
        { text: "f exists", sources: ["msg_1"] },
        { text: "invented", sources: ["msg_other_session"] },
      ],
      completed: [
        { text: "wrote a.py", sources: ["call_ok"], evidence: "observed" },
        { text: "read b.py", sources: ["call_bad"], evidence: "observed" },
        { text: "all done", sources: ["msg_1"], evidence: "observed" },
      ],
      pending: [],
      files: ["/w/a.py"],
      uncertainties: [],
    });
    const record = readMemoryAnswer(`Here it is:\n\`\`\`json\n${answer}\n\`\`\``, emptyRecord("t1"), batch)!;
    expect(record.constraints).toEqual([{ text: "f exists", sources: ["msg_1"] }]);
    expect(record.completed.map((c) => [c.text, c.evidence])).toEqual([
      ["wrote a.py", "observed"],
      ["read b.py", "claimed"],
      ["all done", "claimed"],
    ]);
    expect(record.covers).toEqual(["msg_1"]);
    expect(readMemoryAnswer("I cannot do that.", emptyRecord("t1"), batch)).toBeUndefined();
  });

  it("memory updates go in bounded batches", () => {
    const input = (id: string, size: number): InteractionInput => ({ id, user_request: "x".repeat(size), tool_observations: [], assistant_claims: "" });
    expect(batches([1, 2, 3, 4, 5, 6].map((n) => input(`m${n}`, 10))).map((b) => b.length)).toEqual([MAX_GROUPS_PER_UPDATE, 6 - MAX_GROUPS_PER_UPDATE]);
    expect(batches([input("a", 9_000), input("b", 9_000), input("c", 20_000)]).map((b) => b.map((i) => i.id))).toEqual([["a"], ["b"], ["c"]]);
  });

  it("the router's answer: unknown tasks dropped, 'new' opens a task, an unreadable answer is confidence 0", () => {
    const catalogue = [{ id: "t1", title: "", files: [], symbols: [] }];
    let n = 1;
    const newId = () => `t${++n}`;
    expect(readRouterAnswer('{"tasks": ["t1", "t9"], "related": ["t1"], "confidence": 0.9}', catalogue, newId).assignment).toMatchObject({
      tasks: ["t1"],
      related: [],
      confidence: 0.9,
    });
    const opened = readRouterAnswer('{"tasks": ["new"], "confidence": 1.5}', catalogue, newId);
    expect([opened.opened?.id, opened.assignment.tasks, opened.assignment.confidence]).toEqual(["t2", ["t2"], 1]);
    expect(readRouterAnswer("no idea", catalogue, newId).assignment).toMatchObject({ tasks: [], confidence: 0, by: "fallback" });
    expect(referencesIn("Repository: o/r\nWorking directory (the checkout of this task): /ws/w03/\n\nFix `parse_date()` in src/pkg/dates.py.")).toEqual({
      checkout: "/ws/w03",
      repository: "o/r",
      files: ["src/pkg/dates.py"],
      symbols: ["parse_date"],
    });
  });
});

describe("the plugin's auxiliary calls, answered by the scripted model over HTTP", () => {
  let endpoint: ModelEndpoint | undefined;
  afterEach(async () => {
    await endpoint?.close();
    endpoint = undefined;
  });
  const start = async () =>
    (endpoint = await ModelEndpoint.start({
      script: "solve",
      knowledge: { schedules: [], stages: () => 1, plan: () => ({ units: 0, between: () => [], change: () => [], base: () => [] }), continuation: "" },
    }));

  it("+RCM: each completed interaction is folded into its task's record by a memory call; the resumed request gets the record; each call's usage is logged as OpenCode reports one", async () => {
    await start();
    const dir = tempDir();
    const manager = new ResumptionContextManager({
      mode: "rcm",
      dir,
      auxiliary: { url: `${endpoint!.url}/v1`, model: "scripted", timeoutSeconds: 60 },
      warn: () => {},
    });
    const sent = await manager.transform(messages());
    const memoryCalls = endpoint!.calls.filter((c) => c.body.includes("switch-swe RCM: task state memory"));
    // Three completed interactions of three tasks: one call each; none for routing (every request named its checkout).
    expect(memoryCalls).toHaveLength(3);
    expect(endpoint!.calls).toHaveLength(3);
    const request = sent.at(-1 - (recorded.messages.length - 1 - recorded.messages.map((m) => m.info.role).lastIndexOf("user")))!;
    expect(request.parts[0]!.text).toContain('<task_state_record task="t1">');
    expect(request.parts[0]!.text).toContain("trim_span");
    expect(request.parts[0]!.text).toMatch(/\(observed\) wrote \/tmp\/probe\/ws\/w00\//);
    const usageLog = readFileSync(join(dir, "usage.jsonl"), "utf8");
    const logged = usageLog
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const steps = logged.filter((l) => l.type === "step_finish");
    expect(steps.map((l) => [l.type, l.auxiliary, l.part.tokens.input + l.part.tokens.cache.read, l.part.tokens.output])).toEqual(
      endpoint!.calls.map((c) => ["step_finish", "memory", c.usage!.input + c.usage!.cachedInput, c.usage!.output]),
    );
    // Each request's routing decision is logged once, beside the usage, for the run's results: all four named their checkouts.
    const requests = recorded.messages.filter((m) => m.info.role === "user").length;
    expect(logged.filter((l) => l.type === "routing").map((l) => l.by)).toEqual(Array(requests).fill("reference"));
    expect(readRouting(usageLog)).toEqual({ reference: requests, router: 0, fallback: 0 });
    // The state persists for the next process: a second call folds nothing again.
    await new ResumptionContextManager({
      mode: "rcm",
      dir,
      auxiliary: { url: `${endpoint!.url}/v1`, model: "scripted", timeoutSeconds: 60 },
      warn: () => {},
    }).transform(messages());
    expect(endpoint!.calls).toHaveLength(3);
  });

  it("a request naming no checkout goes to the router model; its answer below 0.8 sends the full history; a continuation goes to the latest task", async () => {
    await start();
    const dir = tempDir();
    const manager = new ResumptionContextManager({
      mode: "router",
      dir,
      auxiliary: { url: `${endpoint!.url}/v1`, model: "scripted", timeoutSeconds: 60 },
      warn: () => {},
    });
    const ask = (text: string, id: string): SessionMessage => ({
      info: { id, sessionID: recorded.messages[0]!.info.sessionID, role: "user" },
      parts: [{ type: "text", text }],
    });
    const vague = [...messages(), ask("What do you think of all this?", "msg_zz_vague")];
    expect(await manager.transform(vague)).toEqual(vague);
    const routed = endpoint!.calls.map((c) => JSON.parse((c.answer as { text: string }).text));
    expect(routed).toEqual([expect.objectContaining({ tasks: ["new"], confidence: 0.5 })]);
    const continued = [
      ...messages(),
      ask("Your time for the last request ran out before you finished. Continue that request from where you stopped.", "msg_zz_more"),
    ];
    const sent = await manager.transform(continued);
    expect(JSON.parse((endpoint!.calls.at(-1)!.answer as { text: string }).text)).toMatchObject({ tasks: ["t1"], confidence: 0.9 });
    expect(sent.length).toBeLessThan(continued.length);
    const decisions = readFileSync(join(dir, "decisions.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(decisions.map((d) => [d.assignment.by, d.unfiltered ?? null])).toEqual([
      ["router", "low_confidence"],
      ["router", null],
    ]);
    // The run's results count the two by the router model, and the earlier requests by their checkouts, once each.
    const requests = recorded.messages.filter((m) => m.info.role === "user").length;
    expect(readRouting(readFileSync(join(dir, "usage.jsonl"), "utf8"))).toEqual({ reference: requests, router: 2, fallback: 0 });
  });

  it("an auxiliary model that cannot be reached: the request keeps the full history, and the run is told", async () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const manager = new ResumptionContextManager({
      mode: "rcm",
      dir,
      auxiliary: { url: "http://127.0.0.1:9/v1", model: "scripted", timeoutSeconds: 5 },
      warn: (m) => warnings.push(m),
    });
    const vague = [
      ...messages(),
      { info: { id: "msg_zz", sessionID: recorded.messages[0]!.info.sessionID, role: "user" }, parts: [{ type: "text", text: "Thoughts?" }] },
    ];
    expect(await manager.transform(vague)).toEqual(vague);
    expect(warnings.some((w) => /routing call failed/.test(w))).toBe(true);
    expect(readRouting(readFileSync(join(dir, "usage.jsonl"), "utf8"))).toMatchObject({ router: 0, fallback: 1 });
  });
});
