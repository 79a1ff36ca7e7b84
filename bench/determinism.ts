// The whole demo built and run twice from nothing, in two fresh directories: every artifact and
// every published file must be byte-identical (SPEC: same inputs and seed, same outputs). The
// tests check the same on a four-PR corpus (test/pipeline/engine/faults.test.ts); this is the whole demo.
import { WorkLayout } from "../pipeline/work-layout.ts";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listTree } from "../pipeline/atomic.ts";
import { sha256 } from "../pipeline/canonical.ts";
import { runProjectOnce } from "../pipeline/project/project.ts";
import { prepareDemoCopy, withExecution } from "../test/helpers/demo-copy.ts";

const executor = process.argv[2] === "docker" ? "docker" : "local";

async function runOnce(): Promise<{ files: Map<string, string>; seconds: number }> {
  const dir = mkdtempSync(join(tmpdir(), "switch-swe-determinism-"));
  try {
    // The corpus built in each directory, not copied from the tests' shared one: its build is compared too.
    const { options, server, workDir } = await prepareDemoCopy(dir, { freshCorpus: true });
    const started = performance.now();
    const summary = await runProjectOnce(withExecution(options, { executor })).finally(() => server.stop());
    if (!summary.ok) throw new Error("the demo run failed");
    const files = new Map<string, string>();
    for (const [label, root] of [
      ["artifacts", new WorkLayout(workDir).artifacts],
      ["manifests", join(dir, "manifests", "demo")],
      ["audits", join(dir, "audits", "demo")],
      ["corpus", join(dir, "out", "demo-corpus", "github")],
    ] as const) {
      for (const path of listTree(root)) files.set(`${label}/${path}`, sha256(readFileSync(join(root, path))));
    }
    files.set("corpus/records.jsonl", sha256(readFileSync(join(dir, "out", "demo-corpus", "records.jsonl"))));
    return { files, seconds: (performance.now() - started) / 1000 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const first = await runOnce();
const second = await runOnce();
const differing = [...new Set([...first.files.keys(), ...second.files.keys()])].filter((f) => first.files.get(f) !== second.files.get(f)).sort();
console.log(`executor: ${executor}`);
console.log(`files compared: ${first.files.size} (artifacts, emitted benchmark, audit report, corpus records)`);
console.log(`run times: ${first.seconds.toFixed(1)} s and ${second.seconds.toFixed(1)} s`);
console.log(differing.length ? `DIFFERENT: ${differing.join(", ")}` : "byte-identical: yes");
process.exitCode = differing.length ? 1 : 0;
