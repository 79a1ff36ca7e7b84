// The audit of a SWE-bench-family file, timed: the rules and signals per record, the risk model's
// cross-validation, and the judge's protocol against the scripted model on loopback (what the
// audit adds to each call; a real model's latency is its own). Two runs' audit.json are compared
// byte for byte. Usage:
//   npm run bench:audit -- FILE.jsonl [--mirrors DIR] [--annotations CSV] [--runs N] [--judge-records N]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../pipeline/logger.ts";
import { ModelEndpoint } from "../pipeline/model-endpoint/server.ts";
import { readAnnotations } from "../stages/audit/annotations.ts";
import { measure } from "../stages/audit/study/measure.ts";
import { auditJson } from "../stages/audit/study/report.ts";
import { loadRiskModel } from "../stages/audit/risk/model.ts";
import { loadProvenance } from "../stages/audit/rules/provenance.ts";
import { auditSwebench, type SwebenchAuditOptions } from "../stages/audit/study/swebench.ts";
import { importSwebench } from "../stages/mine/swebench.ts";

const args = process.argv.slice(2);
const value = (flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
const file = args.find((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"));
if (!file) {
  console.error("usage: npm run bench:audit -- FILE.jsonl [--mirrors DIR] [--annotations CSV] [--runs N] [--judge-records N]");
  process.exit(2);
}
const runs = Number(value("--runs") ?? 3);
const judgeRecords = Number(value("--judge-records") ?? 10);
const annotationsFile = value("--annotations");
const { candidates } = importSwebench(file, readFileSync(file, "utf8"));
const work = mkdtempSync(join(tmpdir(), "switch-swe-bench-audit-"));
const log = createLogger({ level: "error", write: () => undefined });
const riskModel = loadRiskModel();
const base: SwebenchAuditOptions = { candidates, mirrors: value("--mirrors"), workDir: join(work, "w"), riskModel, log };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  // The first run clones the mirrors into the work directory; the runs timed read them.
  await auditSwebench(base);
  const seconds: number[] = [];
  const outputs = new Set<string>();
  let audited;
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    audited = await auditSwebench(base);
    seconds.push((performance.now() - start) / 1000);
    outputs.add(auditJson(audited.records));
  }
  console.log(
    `audit of ${candidates.length} records, ${runs} runs: median ${median(seconds).toFixed(2)} s (${((median(seconds) / candidates.length) * 1000).toFixed(0)} ms a record)`,
  );
  console.log(`audit.json of the runs byte-identical: ${outputs.size === 1 ? "yes" : "NO"}`);
  if (annotationsFile) {
    const annotations = readAnnotations(annotationsFile, readFileSync(annotationsFile, "utf8"));
    const start = performance.now();
    const measured = measure({
      records: audited!.records,
      repoOf: (id) => audited!.tasks.get(id)!.repo,
      annotations,
      model: riskModel,
      provenance: loadProvenance(),
    });
    console.log(
      `agreement and cross-validation (10 folds and one repository left out) over ${measured.shipped.at(-1)!.records} annotated records: ${((performance.now() - start) / 1000).toFixed(2)} s`,
    );
  }
  // The judge: three passes a record against the scripted model, then the same records from the cache.
  const endpoint = await ModelEndpoint.start({
    script: "judge",
    knowledge: { schedules: [], stages: () => 1, plan: () => ({}) as never, continuation: "" },
  });
  const adapter = join(work, "judge.yaml");
  writeFileSync(
    adapter,
    `protocol: anthropic\nmodel: scripted\nkey_env: BENCH_JUDGE_KEY\nbase_url: ${endpoint.url}\nprice_per_million: {input: 3, output: 15}\n`,
  );
  process.env.BENCH_JUDGE_KEY = "bench";
  const judged = { ...base, candidates: candidates.slice(0, judgeRecords), judge: adapter };
  for (const pass of ["asked", "from the cache"]) {
    const start = performance.now();
    const audit = await auditSwebench(judged);
    const elapsed = (performance.now() - start) / 1000;
    console.log(
      `judge, ${judged.candidates.length} records ${pass}: ${elapsed.toFixed(2)} s, ${audit.judgeUsage!.calls} calls, ${audit.judgeUsage!.input_tokens} input and ${audit.judgeUsage!.output_tokens} output tokens`,
    );
  }
  await endpoint.close();
} finally {
  rmSync(work, { recursive: true, force: true });
}
