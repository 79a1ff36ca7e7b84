import { fileURLToPath } from "node:url";
import { z } from "zod";
import { Candidate } from "../../pipeline/schemas/candidate.ts";
import { defineStage } from "../../pipeline/stage.ts";
import { importSwebench } from "./swebench.ts";

export const MineConfig = z.strictObject({
  /** SWE-bench-family files (JSON or JSONL), relative to the config file. */
  swebench: z.array(z.string().min(1)).default([]),
});
export type MineConfig = z.infer<typeof MineConfig>;

export const mineStage = defineStage({
  name: "mine",
  summary: "collect candidates from SWE-bench-family record files",
  example: "switch-swe mine --config data/demo/pipeline.yaml",
  version: "1",
  sourceFiles: [fileURLToPath(new URL(".", import.meta.url))],
  configSchema: MineConfig,
  inputs: [],
  outputs: [{ name: "candidates", schema: Candidate, key: (c: Candidate) => c.id }],
  externalFiles: (config) => config.swebench,
  async run(ctx) {
    const seen = new Map<string, string>();
    const candidates: Candidate[] = [];
    for (const file of ctx.files) {
      const result = importSwebench(file.path, file.text);
      for (const reject of result.rejects) ctx.reject(reject);
      for (const candidate of result.candidates) {
        const where = candidate.source.kind === "swebench" ? `${candidate.source.file} line ${candidate.source.line}` : candidate.id;
        const first = seen.get(candidate.id);
        if (first) {
          ctx.reject({ record_id: candidate.id, reason: "duplicate_record", message: `${where}: record ${candidate.id} was already read from ${first}; the first one is kept`, field: "instance_id" });
          continue;
        }
        seen.set(candidate.id, where);
        candidates.push(candidate);
      }
    }
    // Counted as processed records for the summary; import has no per-record work to cache.
    await ctx.mapRecords(candidates, { id: (c) => c.id, cache: false, work: () => undefined });
    return { candidates };
  },
});
