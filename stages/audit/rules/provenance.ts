import { fileURLToPath } from "node:url";
import { RuleProvenance } from "../../../pipeline/schemas/audit.ts";
import { readReviewed } from "../../../pipeline/validation.ts";

/** Where the rules came from (data/audit/rules.yaml), read next to the code: it is part of the audit's code identity. */
const SHIPPED = new URL("../../../data/audit/rules.yaml", import.meta.url);

/** The records each rule was written from; errors name the file and the field. */
export function loadProvenance(path: string = fileURLToPath(SHIPPED)): RuleProvenance {
  return readReviewed(path, RuleProvenance, { what: "the audit rules' provenance" });
}

/** Whether a rule was written from a record: its finding there is no evidence of how it does elsewhere. */
export function writtenFrom(provenance: RuleProvenance): (flag: string, record: string) => boolean {
  const sets = new Map(Object.entries(provenance.rules).map(([flag, p]) => [flag, new Set(p?.written_from ?? [])]));
  return (flag, record) => sets.get(flag)?.has(record) ?? false;
}

/** Every record some rule was written from. */
export function shapingRecords(provenance: RuleProvenance): Set<string> {
  return new Set(Object.values(provenance.rules).flatMap((p) => p?.written_from ?? []));
}
