import { AuditRecord, type RiskModel } from "../../pipeline/schemas/audit.ts";
import type { TaskDecisions } from "./decisions.ts";
import { type GateSetup, gateVerdict } from "./gate.ts";
import type { JudgeStep } from "./judge/step.ts";
import { assess } from "./risk/model.ts";
import type { RuleInUse } from "./rules/registry.ts";
import { alignTask, type AuditSubject } from "./runner.ts";

/**
 * One task through the audit, the same for the stage and for the study of a SWE-bench-family
 * file: the rules read it, the judge (where there is one) rates it, the risk model ranks it, and
 * the gate decides, from the human decisions on it and the findings whose gate excludes.
 */

/** What a run of the audit asks of every task. */
export interface AuditSetup {
  rules: RuleInUse[];
  riskModel?: RiskModel;
  judge?: JudgeStep;
  gate: GateSetup;
}

/** A task to audit, with the decisions on it. */
export interface TaskToAudit extends Omit<AuditSubject, "contracts"> {
  decisions: TaskDecisions;
}

/** The task's audit record: its links, flags, signals, judge's verdict, risk and severity, decisions, and the gate's exclusion if any. */
export async function auditTask(input: TaskToAudit, setup: AuditSetup): Promise<AuditRecord> {
  const { task, decisions } = input;
  const contracts = decisions.local?.contracts;
  const { sources, ...findings } = await alignTask({ ...input, ...(contracts ? { contracts } : {}) }, setup.rules);
  const verdict = await setup.judge?.judge({
    id: task.id,
    requests: task.requests.map((r) => r.text),
    tests: sources,
    referenceDiff: input.referencePatch ?? "",
    findings: findings.flags,
  });
  const judged = { task_id: task.id, ...findings, ...(verdict ? { judge: verdict } : {}) };
  const assessed = setup.riskModel ? assess(setup.riskModel, judged) : undefined;
  const { local, imported } = decisions;
  // Parsing leaves out what is no part of the record.
  const record = AuditRecord.parse({
    ...judged,
    ...(assessed ? { risk: assessed.risk, severity: assessed.severity } : {}),
    ...(local ? { decision: { verdict: local.verdict, auditor: local.auditor, reason: local.reason } } : {}),
    ...(imported
      ? {
          imported: {
            verdict: imported.verdict,
            reason: imported.reason,
            annotators: `${imported.annotatorsOf}: ${imported.annotators}`,
            scores: imported.scores,
            file: imported.file,
          },
        }
      : {}),
  });
  const exclusion = gateVerdict(record, decisions, setup.gate);
  return exclusion ? AuditRecord.parse({ ...record, exclusion }) : record;
}
