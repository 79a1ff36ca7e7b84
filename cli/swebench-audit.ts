import { readFileSync, rmSync } from "node:fs";
import { decodeStrict } from "../pipeline/decode.ts";
import { importSwebench } from "../stages/mine/swebench.ts";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { writeFileAtomic } from "../pipeline/atomic.ts";
import { createLogger } from "../pipeline/logger.ts";
import { AnnotationsError, readAnnotations } from "../stages/audit/agreement.ts";
import { agreementMarkdown, alignmentCsv, auditJson, htmlReport } from "../stages/audit/report.ts";
import { auditSwebench } from "../stages/audit/swebench.ts";
import { type Io, requirePath, UsageError } from "./io.ts";

/** `switch-swe audit --swebench FILE`: audits a SWE-bench-family file's verifiers without building anything. */
export const swebenchAudit = {
  addOptions(command: Command): void {
    command
      .option("--swebench <file>", "audit a SWE-bench-family file (JSON or JSONL) instead of running the stage: each record is a task of one request")
      .option("--mirrors <dir>", "with --swebench: OWNER__NAME.bundle, OWNER__NAME.git or OWNER__NAME clones to read test sources from")
      .option("--clone", "with --swebench: clone a repository no mirror holds from GitHub")
      .option("--annotations <csv>", "with --swebench: human annotations (SWE-bench Verified's columns) to measure agreement against")
      .option("--out <dir>", "with --swebench: where alignment.csv, index.html and audit.json go", "audit-report")
      .option("--work-dir <dir>", "with --swebench: where the audit keeps its mirrors", ".switch-swe/audit")
      .option("--record <id...>", "with --swebench: audit only these instance ids");
  },
  async run(
    io: Io,
    opts: { swebench: string; mirrors?: string; clone?: boolean; annotations?: string; out: string; workDir: string; record?: string[] },
  ): Promise<number> {
    requirePath("--swebench", opts.swebench, "file");
    requirePath("--mirrors", opts.mirrors, "directory");
    requirePath("--annotations", opts.annotations, "file");
    let annotations;
    try {
      annotations = opts.annotations ? readAnnotations(opts.annotations, readFileSync(opts.annotations, "utf8")) : undefined;
    } catch (error) {
      if (error instanceof AnnotationsError) throw new UsageError(error.message);
      throw error;
    }
    const log = createLogger({ write: (line) => io.err(line + "\n") });
    // Read as mine reads it: a bad record is a reject naming file, line and field; the others are audited.
    const bytes = readFileSync(opts.swebench);
    const { text, invalid } = decodeStrict(bytes);
    const { candidates, rejects } = importSwebench(opts.swebench, text, invalid, bytes);
    const audit = await auditSwebench({
      candidates,
      mirrors: opts.mirrors,
      clone: opts.clone,
      workDir: resolve(opts.workDir),
      only: opts.record,
      annotations,
      log,
    });
    for (const reject of rejects) io.err(`${reject.message}\n`);
    const out = resolve(opts.out);
    const files = new Map([
      ["alignment.csv", alignmentCsv(audit.records, audit.tasks)],
      ["index.html", htmlReport(audit.records, audit.tasks, audit.agreement, audit.kinds)],
      ["audit.json", auditJson(audit.records, audit.agreement, audit.kinds)],
      ...(audit.agreement.length ? [["agreement.md", agreementMarkdown(audit.agreement, audit.kinds)] as [string, string]] : []),
    ]);
    for (const [name, text] of files) await writeFileAtomic(join(out, name), text);
    // An agreement an earlier run wrote here would sit beside a report it does not describe.
    if (!audit.agreement.length) rmSync(join(out, "agreement.md"), { force: true });
    const bySeverity = [0, 1, 2, 3].map((s) => `${audit.records.filter((r) => r.severity === s).length} at ${s}`).join(", ");
    io.out(`${audit.records.length} records audited (${bySeverity}); ${rejects.length} rejected\n`);
    const overall = audit.agreement.find((a) => a.scope === "all");
    if (overall)
      io.out(
        `agreement with ${overall.records} annotated records: kappa ${overall.kappa?.toFixed(2) ?? "—"}, weighted kappa ${overall.weighted_kappa?.toFixed(2) ?? "—"}; flagged ${overall.flagged_of_score0} scored 0, ${overall.flagged_of_score3} scored 3\n`,
      );
    io.out(`wrote ${[...files.keys()].map((f) => join(out, f)).join(", ")}\n`);
    return rejects.length && !audit.records.length ? 1 : 0;
  },
};
