import { dirname, join } from "node:path";
import type { Command } from "commander";
import { writeFileAtomic } from "../../pipeline/atomic.ts";
import { RiskFeature } from "../../pipeline/schemas/audit.ts";
import { foldSpread, measure, measurementsOf } from "../../stages/audit/study/measure.ts";
import { fixed, rulesMarkdown } from "../../stages/audit/report.ts";
import { markdownTable } from "../../pipeline/markdown.ts";
import { agreementMarkdown } from "../../stages/audit/study/report.ts";
import { DEFAULT_FEATURES, DEFAULT_LAMBDA, fitRiskModel } from "../../stages/audit/study/fit.ts";
import { assess } from "../../stages/audit/risk/model.ts";
import { loadProvenance } from "../../stages/audit/rules/provenance.ts";
import { RULE_COLUMNS, ruleRows } from "../../stages/audit/rules/registry.ts";
import { runAudit, swebenchInputs } from "../swebench-inputs.ts";
import { stageCommand } from "../subcommands.ts";
import { registerDecisionCommands } from "../audit-decisions.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "../io.ts";
import { positiveWholeNumber, usageParser } from "../numeric-options.ts";

/** An L2 penalty: a number of 0 or more. */
const penalty = usageParser((value) => {
  const x = /^\s*[0-9.eE+-]+\s*$/.test(value) ? Number(value) : Number.NaN;
  if (!(x >= 0) || !Number.isFinite(x)) throw new Error("expected a number of 0 or more");
  return x;
});

/** The features a --features list names, each checked against the model's. */
function featureList(text: string | undefined) {
  if (text === undefined) return DEFAULT_FEATURES;
  return text.split(",").map((f) => {
    const parsed = RiskFeature.safeParse(f.trim());
    if (!parsed.success) throw new UsageError(`--features: ${JSON.stringify(f.trim())} is not a feature (${RiskFeature.options.join(", ")})`);
    return parsed.data;
  });
}

/** `switch-swe audit rules`: the registry as a table. */
function registerRules(audit: Command, io: Io, exit: ExitCode): void {
  audit
    .command("rules")
    .description("list the audit's rules: flag, scope, family, severity, what each asks and a record it fires on (the table docs/AUDITING.md holds)")
    .option("--json", "print them as JSON")
    .addHelpText("after", "\nExample:\n  switch-swe audit rules\n  switch-swe audit rules --json")
    .action(
      exit.act((opts: { json?: boolean }) => {
        const rows = ruleRows();
        if (opts.json)
          io.out(
            JSON.stringify(
              rows.map((row) => Object.fromEntries(RULE_COLUMNS.map((c, i) => [c, row[i]]))),
              null,
              2,
            ) + "\n",
          );
        else io.out(rulesMarkdown());
        return 0;
      }),
    );
}

/** The 10-fold figures over other draws of the folds, in one line. */
function foldSpreadLine(s: ReturnType<typeof foldSpread>): string {
  const pm = (x: { mean: number; sd: number }) => `${fixed(x.mean, 2)} ± ${fixed(x.sd, 2)}`;
  return (
    `10 folds by record over ${s.draws} other draws of the folds: kappa ${pm(s.kappa)}, AUC of risk ${pm(s.auc)}; ` +
    `flagged ${fixed(s.flagged_of_score0.mean, 1)} of ${s.scored0} scored 0, ${fixed(s.flagged_of_score3.mean, 1)} of ${s.scored3} scored 3 (means)\n`
  );
}

/** `switch-swe audit fit-risk`: fits the risk model's weights to annotated records and writes them, with the cross-validated figures. */
function registerFitRisk(audit: Command, io: Io, exit: ExitCode): void {
  audit
    .command("fit-risk")
    .description("fit the risk model's weights to annotated SWE-bench records (no rule credited on a record it was written from) and write them")
    .requiredOption("--swebench <file>", "the SWE-bench-family file (JSON or JSONL)")
    .requiredOption("--annotations <csv>", "human annotations (SWE-bench Verified's columns)")
    .option("--mirrors <dir>", "OWNER__NAME.bundle, OWNER__NAME.git or OWNER__NAME clones to read test sources from")
    .option("--work-dir <dir>", "where the audit keeps its mirrors and the judge's answers", ".switch-swe/audit")
    .option("--rules <yaml>", "rules turned off or weighed otherwise")
    .option("--features <list>", `the model's features, comma-separated (default: ${DEFAULT_FEATURES.join(",")})`)
    .option("--lambda <x>", `the L2 penalty (default ${DEFAULT_LAMBDA})`, penalty)
    .option("--judge <adapter>", "also fit a model that reads a model judge's score (the judge judges every record)")
    .option("--fold-draws <n>", "also give the 10-fold figures' mean and spread over n other draws of the folds", positiveWholeNumber)
    .option("--out <json>", "where the weights go", "data/audit/risk-model.json")
    .option(
      "--measurements <json>",
      "where the measurements the page shows go (each rule's precision, the gate's, the triage; default: measurements.json beside --out)",
    )
    .addHelpText(
      "after",
      "\nExample:\n  switch-swe audit fit-risk --swebench ../shared/data/swebench-lite-test-half.jsonl --mirrors DIR \\\n    --annotations ../shared/data/swebench-lite-test-half.annotations.csv",
    )
    .action(
      exit.act(
        async (opts: {
          swebench: string;
          annotations: string;
          mirrors?: string;
          workDir: string;
          rules?: string;
          features?: string;
          lambda?: number;
          judge?: string;
          foldDraws?: number;
          out: string;
          measurements?: string;
        }) => {
          const features = featureList(opts.features);
          requirePath("--swebench", opts.swebench, "file");
          const { options, rejects } = swebenchInputs(opts.swebench, opts, io);
          const audit = await runAudit({ ...options, ...(opts.judge ? { judge: opts.judge } : {}) });
          for (const reject of rejects) io.err(`${reject}\n`);
          const provenance = loadProvenance();
          const judged =
            audit.judgeUsage && !audit.judgeFailures?.length ? { model: audit.judgeUsage.model, prompt_version: audit.judgeUsage.prompt_version } : undefined;
          const model = fitRiskModel({
            records: audit.records,
            annotations: options.annotations!,
            provenance,
            features,
            ...(opts.lambda !== undefined ? { lambda: opts.lambda } : {}),
            recordsFile: opts.swebench,
            annotationsFile: opts.annotations,
            ...(judged ? { judge: judged } : {}),
          });
          await writeFileAtomic(opts.out, JSON.stringify(model, null, 2) + "\n");
          const weights = Object.entries(model.model.weights).map(([f, w]) => [f, fixed(w, 3), fixed(model.model.means[f as RiskFeature] ?? 0, 3)]);
          io.out(markdownTable(["feature", "weight", "mean"], [["intercept", fixed(model.model.intercept, 3), ""], ...weights]).join("\n") + "\n");
          io.out(`thresholds of severity 1, 2, 3: ${model.model.thresholds.map((t) => fixed(t, 3)).join(", ")}\n\n`);
          // The in-sample figures are the new model's: each record's risk and severity under it.
          const records = audit.records.map((r) => {
            const { risk, severity } = assess(model, r);
            return { ...r, risk, severity };
          });
          const measureInput = { records, repoOf: (id: string) => audit.tasks.get(id)!.repo, annotations: options.annotations!, model, provenance };
          const measured = measure(measureInput);
          io.out(agreementMarkdown(measured));
          const measurementsFile = opts.measurements ?? join(dirname(opts.out), "measurements.json");
          await writeFileAtomic(measurementsFile, JSON.stringify(measurementsOf(measured, opts.swebench, opts.annotations), null, 2) + "\n");
          if (opts.foldDraws !== undefined) io.out(foldSpreadLine(foldSpread(measureInput, opts.foldDraws)));
          if (opts.judge && !judged) io.err(`the judge failed on ${audit.judgeFailures?.length ?? 0} record(s): no model with the judge's score was fitted\n`);
          io.out(
            `wrote ${opts.out} (${model.fitted_on.records.length} annotated records, ${model.fitted_on.scored_2_or_more} scored 2 or more) and ${measurementsFile}\n`,
          );
          return opts.judge && !judged ? 1 : 0;
        },
      ),
    );
}

/**
 * The audit's own subcommands, beside the stage's command: `audit rules`, `audit fit-risk`,
 * `audit import-annotations` and `audit decide` (`audit swebench` is a module of its own).
 */
export function registerAudit(program: Command, io: Io, exit: ExitCode): void {
  const audit = stageCommand(program, "audit");
  registerRules(audit, io, exit);
  registerFitRisk(audit, io, exit);
  registerDecisionCommands(audit, io, exit);
}
