import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { decodeStrict } from "../pipeline/decode.ts";
import { createLogger } from "../pipeline/logger.ts";
import { readReviewed } from "../pipeline/validation.ts";
import { importSwebench } from "../stages/mine/swebench.ts";
import { decisionBook, DecisionsError, readDecisions } from "../stages/audit/decisions.ts";
import { GateConfigError } from "../stages/audit/gate.ts";
import { JudgeSetupError } from "../stages/audit/judge/client.ts";
import { RuleSettings } from "../stages/audit/rules/registry.ts";
import { AnnotationsError, importedFrom, readAnnotations } from "../stages/audit/annotations.ts";
import { auditSwebench, type SwebenchAudit, type SwebenchAuditOptions } from "../stages/audit/study/swebench.ts";
import { type Io, requirePath, UsageError } from "./io.ts";

/** What `audit swebench` and `audit fit-risk` read a SWE-bench-family file's audit from. */
export interface SwebenchAuditFlags {
  mirrors?: string;
  clone?: boolean;
  annotations?: string;
  workDir: string;
  record?: string[];
  rules?: string;
  decisions?: string;
  imported?: string[];
}

/** The decisions the flags name: an auditor's file, and imported ones; a bad file is a usage error naming it. */
function decisionsFrom(opts: SwebenchAuditFlags) {
  requirePath("--decisions", opts.decisions, "file");
  for (const file of opts.imported ?? []) requirePath("--imported", file, "file");
  try {
    const local = opts.decisions ? { file: opts.decisions, decisions: readDecisions(opts.decisions, readFileSync(opts.decisions, "utf8")) } : undefined;
    return decisionBook(
      local,
      (opts.imported ?? []).map((file) => ({ file, decisions: importedFrom(file, readFileSync(file, "utf8")) })),
    );
  } catch (error) {
    if (error instanceof DecisionsError) throw new UsageError(error.message);
    throw error;
  }
}

/**
 * Reads the records (a file the caller has checked is one), the annotations and the rule settings a
 * SWE-bench audit takes; bad input is a usage error naming the file.
 */
export function swebenchInputs(records: string, opts: SwebenchAuditFlags, io: Io): { options: SwebenchAuditOptions; rejects: string[] } {
  requirePath("--mirrors", opts.mirrors, "directory");
  requirePath("--annotations", opts.annotations, "file");
  requirePath("--rules", opts.rules, "file");
  let annotations;
  try {
    annotations = opts.annotations ? readAnnotations(opts.annotations, readFileSync(opts.annotations, "utf8")) : undefined;
  } catch (error) {
    if (error instanceof AnnotationsError) throw new UsageError(error.message);
    throw error;
  }
  let rules: RuleSettings = {};
  if (opts.rules) {
    rules = readReviewed(opts.rules, RuleSettings, { format: "yaml", empty: {}, error: (message) => new UsageError(message) });
  }
  const log = createLogger({ write: (line) => io.err(line + "\n") });
  // Read as mine reads it: a bad record is a reject naming file, line and field; the others are audited.
  const bytes = readFileSync(records);
  const { text, invalid } = decodeStrict(bytes);
  const { candidates, rejects } = importSwebench(records, text, invalid, bytes);
  const options: SwebenchAuditOptions = {
    candidates,
    mirrors: opts.mirrors,
    clone: opts.clone,
    workDir: resolve(opts.workDir),
    only: opts.record,
    ...(annotations ? { annotations } : {}),
    rules,
    decisions: decisionsFrom(opts),
    ...(opts.decisions ? { decisionsFile: opts.decisions } : {}),
    log,
  };
  return { options, rejects: rejects.map((r) => r.message) };
}

/** Audits the records; a judge that cannot be set up (its adapter, its key), or a rule put in force on a bad measurement, is a usage error. */
export async function runAudit(options: SwebenchAuditOptions): Promise<SwebenchAudit> {
  try {
    return await auditSwebench(options);
  } catch (error) {
    if (error instanceof JudgeSetupError || error instanceof GateConfigError) throw new UsageError(error.message);
    throw error;
  }
}
