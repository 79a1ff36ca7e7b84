import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { EndpointCall } from "../../pipeline/model-endpoint/server.ts";
import { demoRunCopy } from "./demo-run.ts";

/** What the endpoint's log says of a run's usage: tokens, answered calls and tool calls, as Table 2 counts them. */
export const usageInLog = (calls: EndpointCall[]) => ({
  input_tokens: calls.reduce((n, c) => n + (c.usage?.input ?? 0), 0),
  cached_input_tokens: calls.reduce((n, c) => n + (c.usage?.cachedInput ?? 0), 0),
  output_tokens: calls.reduce((n, c) => n + (c.usage?.output ?? 0), 0),
  model_calls: calls.filter((c) => c.status === 200).length,
  tool_calls: calls.filter((c) => c.answer?.kind === "tool").length,
});

/**
 * The demo as the README runs it (with the local executor), a copy of the test run's shared one:
 * the demo build's, session, harness and RCM test files each take one (none runs the demo again).
 */
export async function runDemo() {
  const { corpus, options, workDir, summary, configPath } = await demoRunCopy();
  const read = (stage: string, name: string) => readFileSync(join(workDir, "artifacts", stage, `${name}.jsonl`), "utf8");
  const emitted = join(workDir, "..", "..", "manifests", "demo");
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true })
      .flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)).map((f) => `${e.name}/${f}`) : [e.name]))
      .sort();
  const published = Object.fromEntries(files(emitted).map((f) => [f, readFileSync(join(emitted, f), "utf8")]));
  return { corpus, summary, read, options, records: readFileSync(corpus.recordsFile, "utf8"), published, configPath, emitted };
}

export type DemoRun = Awaited<ReturnType<typeof runDemo>>;
