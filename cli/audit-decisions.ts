import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Command } from "commander";
import { parse } from "yaml";
import { writeFileAtomic } from "../pipeline/atomic.ts";
import { AnnotationsError, importAnnotations, importedYaml, readAnnotations } from "../stages/audit/annotations.ts";
import { DecisionsError, recordDecision } from "../stages/audit/decisions.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "./io.ts";
import { usageParser } from "./numeric-options.ts";

/** A threshold on the 0–3 scale. */
const threshold = usageParser((value) => {
  const x = Number(value);
  if (!/^[0-3]$/.test(value.trim()) || !Number.isInteger(x)) throw new Error("expected a score from 0 to 3");
  return x;
});

/** `switch-swe audit import-annotations CSV --out FILE`: annotations as decisions with their provenance. */
function registerImport(audit: Command, io: Io, exit: ExitCode): void {
  audit
    .command("import-annotations")
    .description(
      "turn human annotations (SWE-bench Verified's columns) into decisions the gate follows: false_negative at the threshold or above, or filter_out, excludes; the notes are the reason",
    )
    .argument("<csv>", "the annotations")
    .requiredOption("--out <yaml>", "where the decisions go (name it in the config's stages.audit.imported, or give it to audit swebench --imported)")
    .option("--threshold <score>", "the false_negative score from which a record is excluded", threshold, 2)
    .option("--annotators <text>", "who the annotators are, for the decisions' provenance")
    .addHelpText(
      "after",
      '\nExample:\n  switch-swe audit import-annotations ../shared/data/swebench-lite-test-half.annotations.csv --out audits/imported.yaml \\\n    --annotators "SWE-bench Verified\'s ensembled annotations"',
    )
    .action(
      exit.act(async (csv: string, opts: { out: string; threshold: number; annotators?: string }) => {
        requirePath("<csv>", csv, "file");
        const bytes = readFileSync(csv);
        let imported;
        try {
          imported = importAnnotations(csv, bytes, readAnnotations(csv, bytes.toString("utf8")), {
            threshold: opts.threshold,
            ...(opts.annotators ? { annotators: opts.annotators } : {}),
          });
        } catch (error) {
          if (error instanceof AnnotationsError) throw new UsageError(error.message);
          throw error;
        }
        await writeFileAtomic(opts.out, importedYaml(imported));
        const excluded = imported.decisions.filter((d) => d.verdict === "exclude");
        const byTests = excluded.filter((d) => d.scores.false_negative >= opts.threshold).length;
        io.out(
          `${imported.decisions.length} decisions: ${excluded.length} exclude (${byTests} false_negative ${opts.threshold} or more, ${excluded.length - byTests} filter_out alone), ${imported.decisions.length - excluded.length} approve; wrote ${opts.out}\n`,
        );
        return 0;
      }),
    );
}

/** The decisions file a config's audit stage reads, resolved against the config's folder. */
function decisionsOfConfig(config: string): string {
  requirePath("--config", config, "file");
  const raw = (parse(readFileSync(config, "utf8")) ?? {}) as { stages?: { audit?: { decisions?: unknown } } };
  const named = raw.stages?.audit?.decisions;
  if (named !== undefined && typeof named !== "string") throw new UsageError(`${config}: config key stages.audit.decisions: expected a path`);
  return resolve(dirname(config), named ?? "audits/decisions.yaml");
}

/** `--contract TEST=TEXT`, repeated: the public contract that justifies a test no request names. */
function contracts(values: string[] = []): Record<string, string> {
  return Object.fromEntries(
    values.map((v) => {
      const at = v.indexOf("=");
      if (at <= 0 || at === v.length - 1) throw new UsageError(`--contract ${JSON.stringify(v)}: expected TEST=the public contract that justifies it`);
      return [v.slice(0, at), v.slice(at + 1)];
    }),
  );
}

/** `switch-swe audit decide`: an auditor's verdict on a task, with a reason, written to the decisions file. */
function registerDecide(audit: Command, io: Io, exit: ExitCode): void {
  audit
    .command("decide")
    .description("record an auditor's verdict on a task, with its reason, in the decisions file the gate reads first (the task's earlier decision is replaced)")
    .option("-c, --config <file>", "the pipeline config: its stages.audit.decisions file")
    .option("--decisions <yaml>", "the decisions file itself (audit swebench --decisions reads it)")
    .requiredOption("--task <id>", "the task decided")
    .requiredOption("--verdict <verdict>", "approve (it stays, whatever the findings) or exclude")
    .requiredOption("--auditor <name>", "who decided")
    .requiredOption("--reason <text>", "why")
    .option("--contract <test=text...>", "a public contract that justifies a test no request names")
    .addHelpText(
      "after",
      '\nExample:\n  switch-swe audit decide -c data/demo/pipeline.yaml --task demo-org__geometry-24 --verdict approve --auditor ann \\\n    --reason "__all__ is the documented list of public names" --contract "tests/test_geometry_cli.py::test_carry_angle_listed=public names are listed in __all__"',
    )
    .action(
      exit.act(async (opts: { config?: string; decisions?: string; task: string; verdict: string; auditor: string; reason: string; contract?: string[] }) => {
        if (!opts.config === !opts.decisions) throw new UsageError("give the config (-c) or the decisions file (--decisions), one of them");
        if (opts.verdict !== "approve" && opts.verdict !== "exclude") throw new UsageError(`--verdict ${opts.verdict}: expected approve or exclude`);
        if (!opts.reason.trim() || !opts.auditor.trim()) throw new UsageError("--reason and --auditor must say something");
        const file = opts.decisions ?? decisionsOfConfig(opts.config!);
        const decision = { task: opts.task, verdict: opts.verdict, auditor: opts.auditor, reason: opts.reason, contracts: contracts(opts.contract) } as const;
        let written;
        try {
          written = recordDecision(file, existsSync(file) ? readFileSync(file, "utf8") : undefined, decision);
        } catch (error) {
          if (error instanceof DecisionsError) throw new UsageError(error.message);
          throw error;
        }
        await writeFileAtomic(file, written);
        io.out(`recorded in ${file}: ${opts.task} ${opts.verdict} by ${opts.auditor}: ${opts.reason}\n`);
        return 0;
      }),
    );
}

/** The audit's decision commands: import annotations, record an auditor's verdict. */
export function registerDecisionCommands(audit: Command, io: Io, exit: ExitCode): void {
  registerImport(audit, io, exit);
  registerDecide(audit, io, exit);
}
