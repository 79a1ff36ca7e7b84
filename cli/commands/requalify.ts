import { BUILT_STAGES } from "../../stages/index.ts";
import { resolve } from "node:path";
import type { Command } from "commander";

import { createLogger } from "../../pipeline/logger.ts";
import { type ExitCode, type Io, requirePath } from "../io.ts";
import { positiveWholeNumber } from "../numeric-options.ts";
import { qualificationOptions, qualificationSettings } from "../qualification-options.ts";
import { requalify, writeRequalifyReport } from "../../pipeline/fidelity/requalify.ts";

export function registerRequalify(program: Command, io: Io, exit: ExitCode): void {
  qualificationOptions(
    program
      .command("requalify")
      .description("audit a SWE-bench-family file: re-run each record's tests before and after its gold patch and report its defects (Markdown, CSV, JSON)")
      .requiredOption("--swebench <file>", "the SWE-bench-family file (JSON or JSONL)"),
    ".switch-swe/requalify",
  )
    .option("--out <dir>", "where requalify-report.md, .csv and .json go", "requalify-report")
    .option("--runs <n>", "runs of each state (2 or more finds unstable tests)", positiveWholeNumber, 3)
    .addHelpText("after", "\nExample:\n  switch-swe requalify --swebench ../shared/data/swebench-lite-dev.jsonl --executor docker --out audit/lite-dev")
    .action(
      exit.act(async (opts) => {
        requirePath("--swebench", opts.swebench, "file");
        requirePath("--profiles", opts.profiles, "directory");
        const log = createLogger({ write: (line) => io.err(line + "\n") });
        const report = await requalify({ stages: BUILT_STAGES, swebench: opts.swebench, ...qualificationSettings(opts), log });
        const files = await writeRequalifyReport(report, resolve(opts.out));
        io.out(
          `${report.records.length} records; with defects: ${report.records.filter((r) => r.defects.length).length}; ${
            Object.entries(report.by_kind)
              .filter(([, n]) => n)
              .map(([k, n]) => `${k} ${n}`)
              .join(", ") || "no defects"
          }\n`,
        );
        io.out(`wrote ${files.join(", ")}\n`);
        return 0;
      }),
    );
}
