import { type AuditFlagRecord, type AuditRecord, SUBSTANTIAL } from "../../pipeline/schemas/audit.ts";
import { type FileHunks, linesOn, readDiff } from "../../pipeline/changes/hunks.ts";
import { linkTest } from "./readers/linkage.ts";
import { locateTest } from "./readers/locate.ts";
import { referenceFacts } from "./readers/reference.ts";
import { openSentences } from "./readers/requests.ts";
import { PatchOnlyTree, type SourceTree } from "./readers/source-tree.ts";
import { type RuleInUse, rulesInUse } from "./rules/registry.ts";
import { taskSignals } from "./risk/signals.ts";
import type {
  AuditedTaskInput,
  Finding,
  LineRule,
  ReadTest,
  RequestRule,
  Rule,
  TaskRule,
  TaskView,
  TestRule,
  TestView,
  UnreadTestRule,
} from "./rules/types.ts";

/** What the audit reads of a task: its requests and verifier; the reference fix where there is one. */
export interface AuditSubject {
  task: AuditedTaskInput;
  /** The reference fix's implementation diff: what it defines and writes that the tests may need. */
  referencePatch?: string;
  /** Where test sources come from; the test patch alone when no repository could be had. */
  tree?: SourceTree;
  /** Public contracts an auditor recorded, by test id: they justify a test no request mentions. */
  contracts?: Record<string, string>;
}

/**
 * What the rules found; `severity` is the rules' own (the risk model, where one is used, replaces
 * it: risk/model.ts's `assess`). `sources` is each fail-to-pass test's source as read, for a judge
 * to read; it is no part of the audit record.
 */
export type AuditFindings = Pick<AuditRecord, "links" | "flags" | "severity" | "source" | "signals"> & {
  sources: { id: string; file?: string; source?: string }[];
};

/** The task's severity from its rules alone: the highest of its flags', 3 when two kinds of substantial flag meet. */
export function taskSeverity(flags: AuditFlagRecord[]): number {
  const top = Math.max(0, ...flags.map((f) => f.severity));
  const substantial = new Set(flags.filter((f) => f.severity >= SUBSTANTIAL).map((f) => f.flag));
  return substantial.size >= 2 ? 3 : top;
}

/**
 * What of a task a benchmark-authored stage owns: the tests its stages declare and the stages
 * themselves ("stage N", as request rules name them). A finding on them is gated as authored.
 */
function authoredSubjects(task: AuditedTaskInput): Set<string> {
  const authored = task.requests.filter((r) => r.tests !== undefined);
  return new Set([...authored.flatMap((r) => r.tests ?? []), ...authored.map((r) => `stage ${r.stage}`)]);
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

/**
 * A rule's findings as flags: its flag; the config's severity, else the finding's, else the rule's;
 * and its gate for the kind of stage the finding concerns.
 */
function asFlags(use: RuleInUse, findings: Finding[], authored: Set<string>): AuditFlagRecord[] {
  return findings.map((f) => ({
    flag: use.rule.flag,
    subject: f.subject,
    detail: f.detail,
    severity: use.severity ?? f.severity ?? use.rule.severity,
    evidence: f.evidence,
    gate: authored.has(f.subject) ? use.gate.authored : use.gate.upstream,
    ...(authored.has(f.subject) ? { authored: true as const } : {}),
  }));
}

type Using<R extends Rule> = RuleInUse & { rule: R };
const using =
  <R extends Rule>(is: (rule: Rule) => rule is R) =>
  (use: RuleInUse): use is Using<R> =>
    is(use.rule);
const taskRule = using((r): r is TaskRule => r.scope === "task");
const requestRule = using((r): r is RequestRule => r.scope === "request");
const unreadRule = using((r): r is UnreadTestRule => r.scope === "test" && r.family === "reading");
const testRule = using((r): r is TestRule => r.scope === "test" && r.family !== "reading");
const lineRule = using((r): r is LineRule => r.scope === "line");

/** Every fail-to-pass test read from the tree and linked to the requests. */
async function readTests(subject: AuditSubject, tree: SourceTree, testDiff: FileHunks[]): Promise<ReadTest[]> {
  const { task, contracts = {} } = subject;
  const tests: ReadTest[] = [];
  for (const id of task.verifier.fail_to_pass) {
    const contract = contracts[id];
    const located = await locateTest(id, tree);
    const { wanted, ...link } = linkTest(id, located, task.requests, testDiff);
    tests.push({
      id,
      ...(located ? { located } : {}),
      link: { test: id, ...link, ...(contract ? { public_contract: contract } : {}) },
      wanted,
      ...(contract ? { contract } : {}),
    });
  }
  return tests;
}

/**
 * One test's flags: a test whose source was not read is said to be so and not judged; a test an
 * auditor's contract covers is not judged either. Otherwise its linkage rules, then each line the
 * test patch added to it asked of every line rule in turn, then the rules that read it whole.
 */
async function testFlags(rules: RuleInUse[], view: TaskView, test: ReadTest): Promise<AuditFlagRecord[]> {
  const flags: AuditFlagRecord[] = [];
  const authored = authoredSubjects(view.task);
  if (!test.located) {
    for (const use of rules.filter(unreadRule)) flags.push(...asFlags(use, await use.rule.check({ ...view, test }), authored));
    return flags;
  }
  if (test.contract) return flags;
  const located = test.located;
  const added = located.lines.filter((l) => l.added && l.text.trim() && !l.text.trim().startsWith("#"));
  const testView: TestView = { ...view, test: { ...test, located }, added };
  const asked = (use: RuleInUse) => !use.rule.needsReference || view.facts !== undefined;
  const judging = rules.filter(testRule).filter(asked);
  for (const use of judging.filter((u) => u.rule.family === "linkage")) flags.push(...asFlags(use, await use.rule.check(testView), authored));
  const lineRules = rules.filter(lineRule).filter(asked);
  const seen = new Map(lineRules.map((u) => [u, new Set<string>()]));
  for (const line of added)
    for (const use of lineRules) flags.push(...asFlags(use, await use.rule.check({ ...testView, line, seen: seen.get(use)! }), authored));
  for (const use of judging.filter((u) => u.rule.family === "fairness")) flags.push(...asFlags(use, await use.rule.check(testView), authored));
  return flags;
}

/**
 * Runs the rules over one task: links every F2P test to the stages that justify it and flags what
 * the rules find, in the registry's order: what could not be read, each test in the verifier's
 * order, the task, each request. Test sources are read from the repository at the base with the
 * test patch applied when there is one (whole files, parametrized cases, class-based tests), else
 * from the test patch; a test whose source cannot be read is said to be so, never judged.
 */
export async function alignTask(subject: AuditSubject, rules: RuleInUse[] = rulesInUse()): Promise<AuditFindings> {
  const { task } = subject;
  const tree = subject.tree ?? new PatchOnlyTree(task.verifier.test_patch, "no repository was given");
  const testDiff = readDiff(task.verifier.test_patch);
  const referenceDiff = subject.referencePatch ? readDiff(subject.referencePatch) : undefined;
  const tests = await readTests(subject, tree, testDiff);
  const view: TaskView = {
    task,
    tree,
    requestText: task.requests.map((r) => r.text).join("\n\n"),
    testDiff,
    ...(referenceDiff ? { referenceDiff, facts: referenceFacts(referenceDiff) } : {}),
    testPatchRemoved: linesOn(testDiff, "removed").join("\n"),
    open: openSentences(task.requests),
    tests,
  };
  const flags: AuditFlagRecord[] = [];
  const authored = authoredSubjects(task);
  const taskRules = rules.filter(taskRule);
  for (const use of taskRules.filter((u) => u.rule.family === "reading")) flags.push(...asFlags(use, await use.rule.check(view), authored));
  for (const test of tests) flags.push(...(await testFlags(rules, view, test)));
  for (const use of taskRules.filter((u) => u.rule.family !== "reading")) flags.push(...asFlags(use, await use.rule.check(view), authored));
  const verified = new Set(tests.flatMap((t) => t.link.stages));
  for (const request of task.requests)
    for (const use of rules.filter(requestRule)) flags.push(...asFlags(use, await use.rule.check({ ...view, request, verified }), authored));
  const distinct = onceEach(flags);
  const signals = await taskSignals(view);
  const sources = tests.map((t) => ({ id: t.id, ...(t.located ? { file: t.located.file, source: t.located.lines.map((l) => l.text).join("\n") } : {}) }));
  return { links: tests.map((t) => t.link), flags: distinct, severity: taskSeverity(distinct), source: tree.kind, signals, sources };
}
