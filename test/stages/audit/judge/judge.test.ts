import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { EndpointKnowledge } from "../../../../pipeline/model-endpoint/scripts.ts";
import type { ModelScript } from "../../../../pipeline/model-endpoint/scripts.ts";
import { ModelEndpoint } from "../../../../pipeline/model-endpoint/server.ts";
import { consensus, judgePrompt, PASSES } from "../../../../stages/audit/judge/prompt.ts";
import { runCli } from "../../../helpers/cli-in-process.ts";
import { SHARED_DATA } from "../../../helpers/shared-data.ts";
import { tempDir } from "../../../helpers/tmp.ts";

/** The endpoint knows no benchmark: the judge's calls are answered from their prompts. */
const knowledge: EndpointKnowledge = {
  schedules: [],
  stages: () => 1,
  plan: () => {
    throw new Error("no benchmark here");
  },
  continuation: "",
};

let endpoint: ModelEndpoint | undefined;
afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
});

const KEY = "sk-test-never-printed-4f1c";
const ids = ["pylint-dev__pylint-6506", "django__django-16527"];

/** Two real records, an adapter file pointing at the scripted model, and the command's arguments. */
function setUp(protocol: "anthropic" | "openai", url: string) {
  const work = tempDir();
  const lines = readFileSync(join(SHARED_DATA, "swebench-lite-test-half.jsonl"), "utf8")
    .split("\n")
    .filter((l) => ids.some((id) => l.includes(`"instance_id": "${id}"`) || l.includes(`"instance_id":"${id}"`)));
  expect(lines).toHaveLength(2);
  const file = join(work, "records.jsonl");
  writeFileSync(file, lines.join("\n") + "\n");
  const adapter = join(work, "judge.yaml");
  const base = protocol === "anthropic" ? url : `${url}/v1`;
  writeFileSync(
    adapter,
    `protocol: ${protocol}\nmodel: scripted-judge\nkey_env: SWITCH_SWE_TEST_JUDGE_KEY\nbase_url: ${base}\nprice_per_million: {input: 3, output: 15}\n`,
  );
  const args = [
    "audit",
    "swebench",
    file,
    "--mirrors",
    join(SHARED_DATA, "mirrors"),
    "--judge",
    adapter,
    "--work-dir",
    join(work, "w"),
    "--out",
    join(work, "out"),
  ];
  return { work, args, out: join(work, "out"), cache: join(work, "w", "judge-cache") };
}

async function withKey<T>(fn: () => Promise<T>): Promise<T> {
  process.env.SWITCH_SWE_TEST_JUDGE_KEY = KEY;
  try {
    return await fn();
  } finally {
    delete process.env.SWITCH_SWE_TEST_JUDGE_KEY;
  }
}

const start = async (script: ModelScript) => (endpoint = await ModelEndpoint.start({ script, knowledge }));
const cachedFiles = (dir: string) => (existsSync(dir) ? readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith(".json")) : []);

describe("the model judge (audit --judge) against the scripted model on loopback", () => {
  for (const protocol of ["anthropic", "openai"] as const)
    it(`asks three passes per record through the ${protocol} SDK, with the requests, the tests' sources, the reference diff and the rules' findings`, async () => {
      const model = await start("judge");
      const { args, out } = setUp(protocol, model.url);
      const run = await withKey(() => runCli(args));
      expect(run.code, run.stderr).toBe(0);
      expect(model.calls).toHaveLength(ids.length * PASSES);
      expect(new Set(model.calls.map((c) => c.protocol))).toEqual(new Set([protocol === "anthropic" ? "anthropic" : "chat"]));
      const first = JSON.parse(model.calls[0]!.body) as Record<string, unknown>;
      const prompt = JSON.stringify(first);
      for (const part of ["## Requests", "## Fail-to-pass tests", "## Reference diff", "## Rules' findings", "Pass 1 of 3", "def test_"])
        expect(prompt).toContain(part);
      // The key goes to the API, never to what the command prints or writes.
      expect(run.stdout + run.stderr).not.toContain(KEY);
      const audit = readFileSync(join(out, "audit.json"), "utf8");
      expect(audit).not.toContain(KEY);
      const json = JSON.parse(audit) as {
        records: {
          instance_id: string;
          judge?: { severity: number; passes: { test_line: string; request_sentence: string }[]; usage: { input_tokens: number } };
        }[];
        judge_usage: { input_tokens: number; output_tokens: number; cost_usd: number };
      };
      // The scripted judge answers the highest severity among the rules' findings; pylint-6506 has substantial ones.
      const pylint = json.records.find((r) => r.instance_id === "pylint-dev__pylint-6506")!;
      expect(pylint.judge!.severity).toBeGreaterThanOrEqual(2);
      expect(pylint.judge!.passes).toHaveLength(3);
      expect(pylint.judge!.passes[0]!.test_line).toMatch(/\S/);
      // Tokens and cost: what the endpoint reported, priced by the adapter.
      const logged = model.calls.reduce((n, c) => ({ input: n.input + (c.usage!.input + c.usage!.cachedInput), output: n.output + c.usage!.output }), {
        input: 0,
        output: 0,
      });
      expect(json.judge_usage.input_tokens).toBe(logged.input);
      expect(json.judge_usage.output_tokens).toBe(logged.output);
      expect(json.judge_usage.cost_usd).toBeCloseTo((logged.input * 3 + logged.output * 15) / 1e6, 9);
      expect(run.stdout).toMatch(new RegExp(`judge scripted-judge: ${ids.length * PASSES} calls \\(0 records from the cache\\)`));
    });

  it("answers a second run from the cache, keyed by model, prompt version and inputs, with the same verdicts", async () => {
    const model = await start("judge");
    const { args, out, cache } = setUp("anthropic", model.url);
    expect((await withKey(() => runCli(args))).code).toBe(0);
    const before = readFileSync(join(out, "audit.json"), "utf8");
    expect(cachedFiles(cache)).toHaveLength(ids.length);
    const again = await withKey(() => runCli(args));
    expect(again.code, again.stderr).toBe(0);
    expect(model.calls).toHaveLength(ids.length * PASSES);
    expect(again.stdout).toContain(`0 calls (${ids.length} records from the cache)`);
    expect(readFileSync(join(out, "audit.json"), "utf8")).toBe(before);
    // Another model is another key: asked afresh.
    const adapter = args[args.indexOf("--judge") + 1]!;
    writeFileSync(adapter, readFileSync(adapter, "utf8").replace("model: scripted-judge", "model: another-judge"));
    expect((await withKey(() => runCli(args))).code).toBe(0);
    expect(model.calls).toHaveLength(2 * ids.length * PASSES);
    expect(cachedFiles(cache)).toHaveLength(2 * ids.length);
  });

  it("takes the mode where two passes agree, else the median", async () => {
    expect(consensus([2, 2, 0])).toBe(2);
    expect(consensus([3, 1, 3])).toBe(3);
    expect(consensus([0, 3, 1])).toBe(1);
    const model = await start("judge-split");
    const { args, out } = setUp("openai", model.url);
    expect((await withKey(() => runCli(args))).code).toBe(0);
    const json = JSON.parse(readFileSync(join(out, "audit.json"), "utf8")) as { records: { judge: { severity: number; passes: { severity: number }[] } }[] };
    for (const r of json.records) {
      expect(r.judge.passes.map((p) => p.severity)).toEqual([0, 3, 1]);
      expect(r.judge.severity).toBe(1);
    }
  });

  it("a malformed answer is an error naming the record, the pass and the field; nothing is cached", async () => {
    const model = await start("judge-malformed");
    const { args, out, cache } = setUp("anthropic", model.url);
    const run = await withKey(() => runCli(args));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("pylint-dev__pylint-6506, pass 1: the judge's answer holds no JSON object");
    expect(cachedFiles(cache)).toEqual([]);
    // The records are still audited, without a judge's verdict.
    const json = JSON.parse(readFileSync(join(out, "audit.json"), "utf8")) as { records: { judge?: unknown }[] };
    expect(json.records).toHaveLength(ids.length);
    expect(json.records.every((r) => r.judge === undefined)).toBe(true);
  });

  it("a failed call is an error naming the record and the pass; nothing is cached", async () => {
    const model = await start("overloaded");
    const { args, cache } = setUp("openai", model.url);
    const run = await withKey(() => runCli(args));
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/django__django-16527, pass 1: the judge's call failed: 503/);
    expect(cachedFiles(cache)).toEqual([]);
    expect(model.calls.length).toBeGreaterThan(ids.length);
  });

  it("without its key in the environment, says which variable to set, and calls nothing", async () => {
    const model = await start("judge");
    const { args } = setUp("anthropic", model.url);
    const run = await runCli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("the judge needs an API key in the environment variable SWITCH_SWE_TEST_JUDGE_KEY, which is not set");
    expect(model.calls).toEqual([]);
  });

  it("quotes each pass's number in its prompt, so that each pass is a sample of its own", () => {
    const inputs = {
      id: "x__y-1",
      requests: ["It should work."],
      tests: [{ id: "t", source: "def test_x():\n    assert f() == 1" }],
      referenceDiff: "",
      findings: [],
    };
    expect(judgePrompt(inputs, 1).user).not.toBe(judgePrompt(inputs, 2).user);
    expect(judgePrompt(inputs, 1).system).toBe(judgePrompt(inputs, 3).system);
  });
});
