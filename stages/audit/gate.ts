import { type AuditRecord, type Gate, type Measurement, type MeasuredPrecision, type RuleProvenance, SUBSTANTIAL } from "../../pipeline/schemas/audit.ts";
import type { TaskDecisions } from "./decisions.ts";
import { measuredPrecision, wilson } from "./measured.ts";
import { RULES, type RuleInUse, type RuleSettings } from "./rules/registry.ts";

/**
 * The audit's gate: why a task leaves the benchmark. In order: an auditor's decision; a decision
 * imported from human annotations (it covers the upstream stage); a finding whose gate excludes
 * (a hard finding anyone can check in the files, or a rule a config put in force on a measurement
 * out of sample); a model judge's verdict, where a config put it in force the same way. The risk
 * never excludes: it ranks the tasks no one has decided, for an auditor to read.
 */

export type Exclusion = NonNullable<AuditRecord["exclusion"]>;

/** A rule, or the judge, that a config put in force, with its measurement checked. */
export interface InForce {
  name: string;
  gate: Gate;
  measured: Measurement;
  precision: MeasuredPrecision;
  base_rate: number;
}

export class GateConfigError extends Error {
  override name = "GateConfigError";
}

/**
 * Checks one measurement that puts `name` in force; `key` names it in the config. It must be on
 * records nobody who wrote the audit looked at, and its precision's lower bound must be above the
 * base rate of those records.
 */
export function checkMeasurement(name: string, gate: Gate, measured: Measurement, seen: Set<string>, key: string): InForce {
  const records = new Set(measured.records);
  const outside = measured.fired.find((id) => !records.has(id));
  if (outside) throw new GateConfigError(`${key}.fired: ${outside} is not among the records it was measured on`);
  const fired = new Set(measured.fired);
  const stray = measured.unfair.find((id) => !fired.has(id));
  if (stray) throw new GateConfigError(`${key}.unfair: ${stray} is not among the records it fired on`);
  if (measured.scored_2_or_more > records.size || measured.scored_2_or_more < measured.unfair.length)
    throw new GateConfigError(
      `${key}.scored_2_or_more: ${measured.scored_2_or_more} cannot be, with ${records.size} records and ${measured.unfair.length} unfair where it fired`,
    );
  const looked = [...records].filter((id) => seen.has(id));
  if (looked.length)
    throw new GateConfigError(
      `${key}.records: ${looked.length} of its ${records.size} records (${looked.slice(0, 3).join(", ")}${looked.length > 3 ? ", …" : ""}) were read by the audit's authors (data/audit/rules.yaml): a measurement in sample cannot put ${name} in force`,
    );
  const precision = measuredPrecision(fired.size, measured.unfair.length, "unseen");
  const base = measured.scored_2_or_more / records.size;
  const lower = wilson(measured.unfair.length, fired.size)![0];
  if (lower <= base)
    throw new GateConfigError(
      `${key}: ${name}'s precision ${precision.precision} has a lower bound of ${lower} (95 % Wilson), not above the base rate ${base.toFixed(4)} of the ${records.size} records: it is not shown to be right where it fires`,
    );
  return { name, gate, measured, precision, base_rate: Math.round(base * 1e4) / 1e4 };
}

/** The rules the config puts in force, each measurement checked; `key` is the config key of the rules' settings. */
export function rulesInForce(settings: RuleSettings, provenance: RuleProvenance, key: string): InForce[] {
  const lookedAt = new Set(provenance.looked_at.records);
  return Object.entries(settings).flatMap(([flag, setting]) => {
    if (!setting?.gate || setting.gate === "only with a decision" || !setting.measured) return [];
    const seen = new Set([...lookedAt, ...(provenance.rules[flag as keyof RuleProvenance["rules"]]?.written_from ?? [])]);
    return [checkMeasurement(flag, setting.gate, setting.measured, seen, `${key}.${flag}.measured`)];
  });
}

export interface GateSetup {
  /** For a gate `at severity`: the task's severity from which a finding excludes. */
  excludeAtSeverity: number;
  /** The judge's gate: its consensus of 2 or more excludes where it is in force. */
  judgeGate: Gate;
  /** The rules a config put in force (their findings exclude as a rule in force, not as a hard finding). */
  inForce: ReadonlySet<string>;
  /** Where an auditor records a decision, for the message. */
  decisionsFile: string;
}

const family = new Map(RULES.map((r) => [r.flag as string, r.family]));

/** Whether a flag excludes by its gate: alone, or at the task's severity. */
function excludes(flag: AuditRecord["flags"][number], severity: number, setup: GateSetup): boolean {
  return flag.gate === "excludes alone" || (flag.gate === "at severity" && severity >= setup.excludeAtSeverity);
}

/** The exclusion a finding makes: the reason its family gives and the findings that show it. */
function byFindings(record: Omit<AuditRecord, "exclusion">, decided: TaskDecisions, setup: GateSetup): Exclusion | undefined {
  // An imported decision covers the upstream stage: an authored stage's findings still count.
  const approvedUpstream = decided.imported?.verdict === "approve";
  const excluding = record.flags.filter((f) => excludes(f, record.severity, setup) && !(approvedUpstream && !f.authored));
  if (!excluding.length) return undefined;
  const inForce = excluding.some((f) => setup.inForce.has(f.flag));
  const what = excluding.map((f) => `${f.flag} (${f.subject}: ${f.detail})`).join("; ");
  return {
    reason: family.get(excluding[0]!.flag) === "linkage" ? "unjustified_test" : "unfair_verifier",
    by: inForce ? "rule in force" : "hard finding",
    message: `${record.task_id}: ${what}; approve in ${setup.decisionsFile} if a reasonable solution of the requests would pass, or curate the requests`,
  };
}

/** Why the task leaves the benchmark, or undefined when it stays. */
export function gateVerdict(record: Omit<AuditRecord, "exclusion">, decided: TaskDecisions, setup: GateSetup): Exclusion | undefined {
  const { local, imported } = decided;
  if (local?.verdict === "exclude")
    return { reason: "audit_excluded", by: "local decision", message: `${record.task_id}: excluded by ${local.auditor} (${local.file}): ${local.reason}` };
  if (local?.verdict === "approve") return undefined;
  if (imported?.verdict === "exclude") {
    // Annotations imported as the config reads them are named after their file already ("the annotators of FILE").
    const file = imported.annotatorsOf.includes(imported.file) ? "" : `${imported.file}; `;
    return {
      reason: "audit_excluded",
      by: "imported decision",
      message: `${record.task_id}: excluded by ${imported.annotatorsOf} (${file}false_negative ${imported.scores.false_negative}${imported.scores.filter_out ? ", filter_out" : ""}): ${imported.reason}`,
    };
  }
  const found = byFindings(record, decided, setup);
  if (found) return found;
  const judged = record.judge;
  if (
    !imported &&
    judged &&
    setup.judgeGate !== "only with a decision" &&
    judged.severity >= SUBSTANTIAL &&
    (setup.judgeGate === "excludes alone" || record.severity >= setup.excludeAtSeverity)
  )
    return {
      reason: "unfair_verifier",
      by: "judge in force",
      message: `${record.task_id}: the judge ${judged.model} rates its tests ${judged.severity}: ${judged.passes[0]?.rationale ?? ""}; approve in ${setup.decisionsFile} if a reasonable solution would pass`,
    };
  return undefined;
}

/** The reasons in force for a run, as the page and the summary state them. */
export interface GateDescription {
  /** The auditor's decisions file and the imported ones, as the config names them, and the report's folder (the page links the files). */
  decisions: { local: string; imported: string[]; reportDir: string };
  /** Rules whose findings exclude by themselves, as the registry has it, on upstream and on authored stages. */
  hard: { upstream: string[]; authored: string[] };
  /** Rules the config put in force, with their measurements, and the severity a gate `at severity` needs. */
  inForce: InForce[];
  excludeAtSeverity: number;
}

/** What excludes a task in this run, for the page. */
export function describeGate(rules: RuleInUse[], inForce: InForce[], setup: GateSetup, files: GateDescription["decisions"]): GateDescription {
  const registry = rules.filter((u) => !u.configured);
  const hard = (side: "upstream" | "authored") => registry.filter((u) => u.gate[side] === "excludes alone").map((u) => u.rule.flag);
  return { decisions: files, hard: { upstream: hard("upstream"), authored: hard("authored") }, inForce, excludeAtSeverity: setup.excludeAtSeverity };
}
