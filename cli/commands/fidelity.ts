import { BUILT_STAGES } from "../../stages/index.ts";
import type { Command } from "commander";
import { writeFileAtomic } from "../../pipeline/atomic.ts";
import { explained } from "../../pipeline/fidelity/compare.ts";
import { createLogger } from "../../pipeline/logger.ts";

import { type ExitCode, type Io, requirePath } from "../io.ts";
import { positiveWholeNumber } from "../numeric-options.ts";
import { measureFidelity, formatFidelity } from "../../pipeline/fidelity/measure.ts";
import { qualificationOptions, qualificationSettings } from "../qualification-options.ts";

export function registerFidelity(program: Command, io: Io, exit: ExitCode): void {
  qualificationOptions(
    program
      .command("fidelity")
      .description("qualify a SWE-bench-family file's tasks with the repositories' profiles and compare every F2P / P2P set with the record's")
      .argument("<records>", "a SWE-bench-family file (JSON or JSONL)"),
    ".switch-swe/fidelity",
  )
    .option("--runs <n>", "runs of each state", positiveWholeNumber, 1)
    .option("--json <file>", "also write the comparison as JSON")
    .addHelpText("after", "\nExample:\n  switch-swe fidelity ../shared/data/swebench-lite-dev.jsonl --profiles data/repos --executor docker")
    .action(
      exit.act(async (records: string, opts) => {
        requirePath("<records>", records, "file");
        requirePath("--profiles", opts.profiles, "directory");
        const log = createLogger({ write: (line) => io.err(line + "\n") });
        const result = await measureFidelity({ stages: BUILT_STAGES, records, ...qualificationSettings(opts), log });
        io.out(formatFidelity(result));
        if (opts.json) await writeFileAtomic(opts.json, JSON.stringify(result, null, 2) + "\n");
        return result.tasks.every((t) => t.environment.built && explained(t)) ? 0 : 1;
      }),
    );
}
