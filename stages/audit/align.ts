import type { AuditRecord } from "../../pipeline/schemas/audit.ts";
import type { Task } from "../../pipeline/schemas/task.ts";
import { changedEvidence, mentions, testSource } from "./evidence.ts";

const REQUIREMENT = /\b(should|must|please|add|raise|return|accept|rename|remove|support|needs? to|make|declare|handle|reject|keep|say|explain|document)\b/i;

/** `file::Class::name[params]` → the file and the function name. */
export function splitNodeId(nodeId: string): { file: string; name: string } {
  const parts = nodeId.split("::");
  return { file: parts[0]!, name: parts.at(-1)!.replace(/\[.*$/, "") };
}

/**
 * Links every F2P test to the stages that justify it. A stage justifies a test when it names what
 * the test calls (if it calls public code) and mentions something the test checks: a literal, a
 * keyword, an exception, an attribute. Flags: an F2P test no stage justifies (unless an auditor
 * recorded a public contract for it), a stage no test verifies, a stage that states nothing to do.
 */
export function alignTask(task: Task, contracts: Record<string, string> = {}): Pick<AuditRecord, "links" | "flags"> {
  const links: AuditRecord["links"] = [];
  const flags: AuditRecord["flags"] = [];
  const verified = new Set<number>();
  for (const test of task.verifier.fail_to_pass) {
    const { file, name } = splitNodeId(test);
    const source = testSource(task.verifier.test_patch, file, name);
    const contract = contracts[test];
    if (!source) {
      links.push({ test, stages: [], evidence: [], ...(contract ? { public_contract: contract } : {}) });
      if (!contract)
        flags.push({ flag: "unjustified_test", subject: test, detail: "its source is not in the test patch, so no request can be checked against it" });
      continue;
    }
    const evidence = changedEvidence(source, name);
    const found: { stage: number; token: string }[] = [];
    const stages: number[] = [];
    for (const request of task.requests) {
      const subjects = evidence.subject.filter((t) => mentions(request.text, t));
      const behaviours = evidence.behaviour.filter((t) => mentions(request.text, t));
      const subjectOk = evidence.subject.length === 0 || subjects.length > 0;
      const behaviourOk = evidence.behaviour.length === 0 ? subjects.length > 0 : behaviours.length > 0;
      if (subjectOk && behaviourOk) {
        stages.push(request.stage);
        for (const token of [...subjects, ...behaviours]) found.push({ stage: request.stage, token });
      }
    }
    for (const s of stages) verified.add(s);
    links.push({ test, stages, evidence: found, ...(contract ? { public_contract: contract } : {}) });
    if (!stages.length && !contract) {
      const wanted = [...evidence.subject, ...evidence.behaviour].map((t) => JSON.stringify(t)).join(", ");
      flags.push({ flag: "unjustified_test", subject: test, detail: `no request mentions what it checks (${wanted || "nothing distinctive"})` });
    }
  }
  for (const request of task.requests) {
    if (!REQUIREMENT.test(request.text)) flags.push({ flag: "not_substantive", subject: `stage ${request.stage}`, detail: "states no requested behaviour" });
    else if (!verified.has(request.stage))
      flags.push({ flag: "unverified_stage", subject: `stage ${request.stage}`, detail: "no fail-to-pass test checks what it asks" });
  }
  return { links, flags };
}
