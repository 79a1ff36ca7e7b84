import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { alignTask, type AuditSubject } from "../../stages/audit/runner.ts";
import { PatchOnlyTree } from "../../stages/audit/readers/source-tree.ts";
import { sharedRecords } from "./shared-data.ts";

/** Real SWE-bench Lite records as the audit sees them, shared by the audit's fairness and test-source tests. */
const SHARED = fileURLToPath(new URL("../../../shared/data/", import.meta.url));
export const MIRRORS = join(SHARED, "mirrors");

export const records = sharedRecords();

/** A real record as the audit sees it, from its test patch alone; `said` is added to its problem statement. */
export function subject(id: string, said = ""): AuditSubject {
  const r = records.get(id)!;
  return {
    task: {
      id,
      requests: [{ stage: 1, text: `${r.problem_statement}\n${said}`, provenance: { sources: [{ kind: "issue", record_id: id, author: "x" }] } }],
      verifier: { test_patch: r.test_patch, fail_to_pass: JSON.parse(r.FAIL_TO_PASS) as string[] },
    },
    referencePatch: r.patch,
    tree: new PatchOnlyTree(r.test_patch, "not cloned in this test"),
  };
}

export const kinds = async (s: AuditSubject) => (await alignTask(s)).flags.map((f) => f.flag);
