import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readTestPatch } from "../../pipeline/changes/added-tests.ts";
import { parseExtension } from "../../stages/split/extensions.ts";

const DIR = fileURLToPath(new URL("../../data/demo/extensions/", import.meta.url));

/**
 * The demo's benchmark-authored stages, per task: how many stages they add and the tests they add
 * (each an F2P test of the task). The corpus's intents describe the pull requests alone; a test
 * that expects a task's stages or F2P tests adds these.
 */
export function demoExtensions(): Map<string, { stages: number; tests: string[] }> {
  const out = new Map<string, { stages: number; tests: string[] }>();
  for (const name of readdirSync(DIR)
    .filter((n) => n.endsWith(".yaml"))
    .sort()) {
    const file = parseExtension(name, readFileSync(join(DIR, name), "utf8"));
    out.set(file.task, { stages: file.stages.length, tests: file.stages.flatMap((s) => readTestPatch(s.tests).added) });
  }
  return out;
}
