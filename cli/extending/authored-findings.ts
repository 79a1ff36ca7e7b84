import type { AuditFlagRecord } from "../../pipeline/schemas/audit.ts";
import type { Request } from "../../pipeline/schemas/task.ts";
import { alignTask } from "../../stages/audit/index.ts";
import { sourcesAt } from "../../stages/audit/readers/source-tree.ts";
import { type RuleSettings, rulesInUse } from "../../stages/audit/rules/registry.ts";

/**
 * The audit's hard findings on a task's benchmark-authored stages: what its rules find whose gate,
 * on an authored stage, excludes the task by itself (a name, message, exception, warning, code or
 * literal form a test checks that no request states; a stage no fail-to-pass test verifies). The
 * one place `extend check` asks the audit: the same rules, read over the same sources (the
 * repository at the base with the test patch applied), with the config's rule settings.
 */
export async function authoredHardFindings(task: {
  id: string;
  requests: Request[];
  testPatch: string;
  failToPass: string[];
  referencePatch: string;
  mirror: string;
  baseCommit: string;
  rules: RuleSettings;
}): Promise<AuditFlagRecord[]> {
  const { flags } = await alignTask(
    {
      task: { id: task.id, requests: task.requests, verifier: { test_patch: task.testPatch, fail_to_pass: task.failToPass } },
      referencePatch: task.referencePatch,
      tree: await sourcesAt(task.mirror, task.baseCommit, task.testPatch),
    },
    rulesInUse(task.rules),
  );
  return flags.filter((f) => f.authored && f.gate === "excludes alone");
}
