import { describe, expect, it } from "vitest";
import { atifUsage, AtifTrajectory, ownSteps } from "../../../pipeline/harbor/atif.ts";

/** An ATIF trajectory as Harbor's agents write one (harbor/models/trajectories): a user turn, then agent steps with their metrics and tool calls. */
function trajectory(session: string, steps: object[]): AtifTrajectory {
  return AtifTrajectory.parse({ schema_version: "ATIF-v1.6", session_id: session, agent: { name: "claude-code", version: "2.1.197" }, steps });
}
const user = (id: number, text: string) => ({ step_id: id, timestamp: `2026-01-01T00:00:0${id}Z`, source: "user", message: text });
const agent = (id: number, prompt: number, cached: number, completion: number, tools = 1) => ({
  step_id: id,
  timestamp: `2026-01-01T00:00:0${id}Z`,
  source: "agent",
  message: "working",
  tool_calls: Array.from({ length: tools }, (_, i) => ({ tool_call_id: `t${id}-${i}`, function_name: "Bash", arguments: {} })),
  metrics: { prompt_tokens: prompt, cached_tokens: cached, completion_tokens: completion },
});

describe("a request's usage from a Harbor agent's ATIF trajectory", () => {
  it("counts the agent's steps: input not read from cache, cached input, output, model calls and tool calls", () => {
    const first = trajectory("s", [
      user(1, "request 1"),
      agent(2, 1000, 0, 50),
      agent(3, 1200, 1000, 30, 2),
      { ...agent(4, 1300, 1200, 20, 0), llm_call_count: 2 },
    ]);
    expect(atifUsage(ownSteps(first, undefined))).toEqual({ input_tokens: 1300, cached_input_tokens: 2200, output_tokens: 100, model_calls: 4, tool_calls: 3 });
  });

  it("counts a resumed conversation's earlier requests once: the steps a trajectory shares with the previous request's are that request's", () => {
    const first = trajectory("s", [user(1, "request 1"), agent(2, 1000, 0, 50)]);
    const second = trajectory("s", [user(1, "request 1"), agent(2, 1000, 0, 50), user(3, "request 2"), agent(4, 2000, 1000, 40)]);
    expect(atifUsage(ownSteps(second, first))).toEqual({ input_tokens: 1000, cached_input_tokens: 1000, output_tokens: 40, model_calls: 1, tool_calls: 1 });
    // Another conversation (a fresh session at every step) shares nothing; copied context is never counted.
    const fresh = trajectory("t", [user(1, "request 1"), agent(2, 1000, 0, 50)]);
    expect(atifUsage(ownSteps(fresh, first)).model_calls).toBe(1);
    const copied = trajectory("u", [{ ...agent(1, 500, 0, 5), is_copied_context: true }, agent(2, 700, 500, 7)]);
    expect(atifUsage(ownSteps(copied, undefined))).toMatchObject({ input_tokens: 200, model_calls: 1 });
  });
});
