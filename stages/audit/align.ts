import type { AuditFlagRecord, AuditRecord } from "../../pipeline/schemas/audit.ts";
import type { Task } from "../../pipeline/schemas/task.ts";
import { untestedAlternatives } from "./alternatives.ts";
import { changedEvidence, mentions, removedFromTest, testSource } from "./evidence.ts";
import { fairnessFlags, referenceFacts } from "./fairness.ts";
import { type LocatedTest, locateTest } from "./locate.ts";
import { openSentences } from "./open-choice.ts";
import { PatchOnlyTree, type SourceTree } from "./source-tree.ts";
import { wordIn } from "./python-text.ts";
import { parseTestId } from "../../pipeline/test-results/test-ids.ts";

const REQUIREMENT = /\b(should|must|please|add|raise|return|accept|rename|remove|support|needs? to|make|declare|handle|reject|keep|say|explain|document)\b/i;

/** What the audit reads of a task: its requests and verifier; the reference fix where there is one. */
export interface AuditSubject {
  task: Pick<Task, "id" | "requests"> & { verifier: Pick<Task["verifier"], "test_patch" | "fail_to_pass"> };
  /** The reference fix's implementation diff: what it defines and writes that the tests may need. */
  referencePatch?: string;
  /** Where test sources come from; the test patch alone when no repository could be had. */
  tree?: SourceTree;
  /** Public contracts an auditor recorded, by test id: they justify a test no request mentions. */
  contracts?: Record<string, string>;
}

export type AuditFindings = Pick<AuditRecord, "links" | "flags" | "severity" | "source">;

/** The task's severity: the highest of its flags', 3 when two kinds of substantial (2+) flag meet. */
export function taskSeverity(flags: AuditFlagRecord[]): number {
  const top = Math.max(0, ...flags.map((f) => f.severity));
  const substantial = new Set(flags.filter((f) => f.severity >= 2).map((f) => f.flag));
  return substantial.size >= 2 ? 3 : top;
}

/** Cases of one parametrized test share their lines: a flag with the same kind and evidence is said once. */
function onceEach(flags: AuditFlagRecord[]): AuditFlagRecord[] {
  const said = new Set<string>();
  return flags.filter((f) => {
    const key = f.evidence.length
      ? `${f.flag}\n${f.detail}\n${f.evidence.map((e) => `${e.file}:${e.line}`).join(",")}`
      : `${f.flag}\n${f.subject}\n${f.detail}`;
    if (said.has(key)) return false;
    said.add(key);
    return true;
  });
}

/** A test whose source could not be read: said so, and never counted against the task. */
function unreadSource(test: string, tree: SourceTree): AuditFlagRecord {
  const where = parseTestId(test) ? (tree.kind === "repository" ? "the repository at the base with the test patch applied" : "the test patch") : undefined;
  return {
    flag: "source_not_found",
    subject: test,
    detail: where ? `its source is not in ${where}` : "its id names no Python test function",
    severity: 0,
    evidence: [],
  };
}

/** The stages whose text names what a located test calls and mentions something it checks, with that evidence. */
function linkTest(located: LocatedTest, task: AuditSubject["task"]) {
  const name = located.name;
  const defAt = located.lines.indexOf(located.defLine);
  const ordered = [...located.lines.slice(defAt), ...located.lines.slice(0, defAt)];
  const fromPatch = testSource(task.verifier.test_patch, located.file, name);
  const added = located.lines
    .filter((l) => l.added)
    .map((l) => l.text)
    .join("\n");
  const evidence = changedEvidence({ source: ordered.map((l) => l.text).join("\n"), added, removed: fromPatch?.removed ?? "" }, name);
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
  return { stages, evidence: found, wanted: [...evidence.subject, ...evidence.behaviour] };
}

/** An F2P test no stage justifies, its def line as the evidence. */
function unjustified(test: string, located: LocatedTest, wanted: string[]): AuditFlagRecord {
  const { defLine } = located;
  return {
    flag: "unjustified_test",
    subject: test,
    detail: `no request mentions what it checks (${wanted.map((t) => JSON.stringify(t)).join(", ") || "nothing distinctive"})`,
    severity: 1,
    evidence: [{ file: located.file, line: defLine.n, text: defLine.text.trim() }],
  };
}

const ASSERTION = /^\s*(?:assert\b|self\.assert\w*\s*\(|(?:with\s+)?(?:pytest\.)?(?:raises|warns)\s*\(|assert_\w+\s*\()/;

/**
 * An F2P test no request links to whose existing expectation the test patch changes: the fix
 * changes behaviour a project's test pinned and no request asks about, so a fix that keeps it
 * (sympy-18057's `var` result still equal to its names) fails. Not where a request names a word
 * the change swaps in or out (pvlib-1154's issue says NaN, which the change turns into 0). Evidence: the assertion as it now
 * reads; the detail quotes the one removed.
 */
function changedExpectation(test: string, located: LocatedTest, testPatch: string, requestText: string): AuditFlagRecord | undefined {
  const before = removedFromTest(testPatch, located.file, located.name).find((l) => ASSERTION.test(l));
  if (!before) return undefined;
  // The assertion that took its place: the first the patch added to the test.
  const line = located.lines.find((l) => l.added && ASSERTION.test(l.text)) ?? located.lines.find((l) => l.added) ?? located.defLine;
  // Words and values (django-10914's `0o644`, which its issue's title names), three characters or more.
  const words = (text: string) => new Set(text.toLowerCase().match(/[a-z0-9_]{3,}/g) ?? []);
  const was = words(before);
  const now = words(line.text);
  const swapped = [...[...was].filter((w) => !now.has(w)), ...[...now].filter((w) => !was.has(w))];
  const asked = requestText.toLowerCase();
  if (swapped.some((w) => wordIn(w).test(asked))) return undefined;
  const quoted = before.trim().length > 100 ? `${before.trim().slice(0, 97)}...` : before.trim();
  return {
    flag: "changed_expectation",
    subject: test,
    detail: `changes what the test expected before the fix (it read \`${quoted}\`) where no request asks about what it checks`,
    severity: 2,
    evidence: [{ file: located.file, line: line.n, text: line.text.trim() }],
  };
}

/**
 * Tests that check more than the requests ask: where some F2P test checks what a request asks,
 * another that no request mentions checks what "the issue does not ask", in the annotators' words
 * (django-12915: two tests check the `get_response_async` the issue asks for, a third a whole
 * static file response). Where no test links to any request, the requests' words are not their
 * tests' at all, and an unlinked test says nothing of fairness. Evidence: the unlinked test's `def`.
 */
function beyondRequests(flags: AuditFlagRecord[], links: AuditRecord["links"]): AuditFlagRecord[] {
  const linked = links.find((l) => l.stages.length);
  if (!linked) return [];
  return flags
    .filter((f) => f.flag === "unjustified_test")
    .map((f) => ({
      ...f,
      flag: "unrequested_test" as const,
      severity: 2,
      detail: `checks what no request asks, while \`${linked.test}\` checks what a request does`,
    }));
}

/** The test functions a test patch adds (a `+def test…` line). */
function addedTestNames(testPatch: string): string[] {
  return [...new Set([...testPatch.matchAll(/^\+[ \t]*(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\(/gm)].map((m) => m[1]!))];
}

/**
 * Every F2P test the patch leaves as it was, while it adds tests of its own that are not F2P
 * (requests-2674: twelve network tests decide, the one test written for the issue does not):
 * the tests that decide fail before the fix for a reason the issue never states. Said only
 * when every F2P test was read and none is a parametrized case (a case may be new where its
 * function is not).
 */
function unchangedTests(located: { test: string; at: LocatedTest }[], failToPass: string[], testPatch: string): AuditFlagRecord[] {
  if (!located.length || located.length !== failToPass.length) return [];
  if (located.some(({ test, at }) => parseTestId(test)?.caseId !== undefined || at.lines.some((l) => l.added))) return [];
  const deciding = new Set(located.map(({ at }) => at.name));
  const own = addedTestNames(testPatch).filter((n) => !deciding.has(n));
  if (!own.length) return [];
  return located.map(({ test, at }) => ({
    flag: "unchanged_test" as const,
    subject: test,
    detail: `the test patch neither adds nor changes it, and the tests it adds (\`${own.join("`, `")}\`) are not fail-to-pass: it fails before the fix for a reason no request states`,
    severity: 2,
    evidence: [{ file: at.file, line: at.defLine.n, text: at.defLine.text.trim() }],
  }));
}

/**
 * Links every F2P test to the stages that justify it and flags what makes the verifier unfair.
 * A stage justifies a test when it names what the test calls (if it calls public code) and
 * mentions something the test checks: a literal, a keyword, an exception, an attribute. Test
 * sources are read from the repository at the base with the test patch applied when there is one
 * (whole files, parametrized cases, class-based tests), else from the test patch; a test
 * whose source cannot be read is said to be so, never counted as unjustified.
 */
export async function alignTask(subject: AuditSubject): Promise<AuditFindings> {
  const { task, contracts = {} } = subject;
  const tree = subject.tree ?? new PatchOnlyTree(task.verifier.test_patch, "no repository was given");
  const requestText = task.requests.map((r) => r.text).join("\n\n");
  const facts = subject.referencePatch ? referenceFacts(subject.referencePatch) : undefined;
  const patchRemoved = task.verifier.test_patch
    .split("\n")
    .filter((l) => l.startsWith("-") && !l.startsWith("---"))
    .map((l) => l.slice(1))
    .join("\n");
  const open = openSentences(task.requests);
  const links: AuditRecord["links"] = [];
  const flags: AuditFlagRecord[] = [];
  const verified = new Set<number>();
  if (tree.kind === "test_patch" && tree.unavailable)
    flags.push({
      flag: "no_repository",
      subject: task.id,
      detail: `test sources read from the test patch only: ${tree.unavailable}`,
      severity: 0,
      evidence: [],
    });
  const read: { test: string; at: LocatedTest }[] = [];
  for (const test of task.verifier.fail_to_pass) {
    const contract = contracts[test];
    const located = await locateTest(test, tree);
    if (!located) {
      links.push({ test, stages: [], evidence: [], ...(contract ? { public_contract: contract } : {}) });
      flags.push(unreadSource(test, tree));
      continue;
    }
    if (!contract) read.push({ test, at: located });
    const link = linkTest(located, task);
    for (const s of link.stages) verified.add(s);
    links.push({ test, stages: link.stages, evidence: link.evidence, ...(contract ? { public_contract: contract } : {}) });
    if (!link.stages.length && !contract) {
      flags.push(unjustified(test, located, link.wanted));
      const changed = changedExpectation(test, located, task.verifier.test_patch, requestText);
      if (changed) flags.push(changed);
    }
    if (facts && !contract) flags.push(...(await fairnessFlags(test, located, facts, requestText, tree, patchRemoved, open)));
  }
  flags.push(...beyondRequests(flags, links));
  flags.push(...unchangedTests(read, task.verifier.fail_to_pass, task.verifier.test_patch));
  flags.push(...untestedAlternatives(task.requests, read, read.length === task.verifier.fail_to_pass.length));
  for (const request of task.requests) {
    if (!REQUIREMENT.test(request.text))
      flags.push({ flag: "not_substantive", subject: `stage ${request.stage}`, detail: "states no requested behaviour", severity: 1, evidence: [] });
    else if (!verified.has(request.stage))
      flags.push({
        flag: "unverified_stage",
        subject: `stage ${request.stage}`,
        detail: "no fail-to-pass test checks what it asks",
        severity: 1,
        evidence: [],
      });
  }
  const distinct = onceEach(flags);
  return { links, flags: distinct, severity: taskSeverity(distinct), source: tree.kind };
}
