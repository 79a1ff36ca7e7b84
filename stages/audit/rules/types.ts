import type { FileHunks } from "../../../pipeline/changes/hunks.ts";
import type { AuditFlag, AuditFlagRecord, AuditRecord, Gate } from "../../../pipeline/schemas/audit.ts";
import type { Request, Task } from "../../../pipeline/schemas/task.ts";
import type { LocatedTest } from "../readers/locate.ts";
import type { ReferenceFacts } from "../readers/reference.ts";
import type { OpenSentence } from "../readers/requests.ts";
import type { SourceLine, SourceTree } from "../readers/source-tree.ts";

/**
 * What a rule is and what it reads. A rule asks one question of one thing — a task, one of its
 * requests, one of its fail-to-pass tests, or one line a test patch added — and answers with
 * findings, each with the lines a person can check. Every rule has the same shape; what differs
 * is the view the runner gives it, named by its scope.
 */

/** What a rule looks at: the whole task, one request, one fail-to-pass test, or one line the test patch added to it. */
export type Scope = "task" | "request" | "test" | "line";

/**
 * What a rule is about: `reading` says what the audit could not read (it never counts against a
 * task), `linkage` whether tests and requests name each other (SPEC §2.5), `fairness` whether a
 * reasonable solution of the requests would pass the tests (SWE-bench Verified's `false_negative`).
 */
export type Family = "reading" | "linkage" | "fairness";

/** What the audit reads of a task: its requests and verifier. */
export type AuditedTaskInput = Pick<Task, "id" | "requests"> & { verifier: Pick<Task["verifier"], "test_patch" | "fail_to_pass"> };

export type Link = AuditRecord["links"][number];

/** One fail-to-pass test as read: where its source is (if it was found), its link to the requests, an auditor's contract. */
export interface ReadTest {
  id: string;
  located?: LocatedTest;
  link: Link;
  /** What the test checks that a request must mention to justify it (empty when its source was not read). */
  wanted: string[];
  contract?: string;
}

/** What every rule may read of the task. */
export interface TaskView {
  task: AuditedTaskInput;
  tree: SourceTree;
  /** Every request's text, joined. */
  requestText: string;
  /** The test patch, read into files and hunks. */
  testDiff: FileHunks[];
  /** The reference fix's diff, read into files and hunks; undefined when the task has none. */
  referenceDiff?: FileHunks[];
  /** What the reference fix defines and writes; undefined when the task has none. */
  facts?: ReferenceFacts;
  /** The lines the test patch removed, joined: what the tests held before the fix. */
  testPatchRemoved: string;
  /** Sentences of the requests' prose that leave the outcome open. */
  open: OpenSentence[];
  /** Every fail-to-pass test, in the verifier's order. */
  tests: ReadTest[];
}

export interface RequestView extends TaskView {
  request: Request;
  /** The stages some fail-to-pass test is linked to. */
  verified: Set<number>;
}

/** A test whose source was not found. */
export interface UnreadTestView extends TaskView {
  test: ReadTest;
}

export interface TestView extends TaskView {
  test: ReadTest & { located: LocatedTest };
  /** The test's lines the test patch added, comments and blank lines aside. */
  added: SourceLine[];
}

export interface LineView extends TestView {
  line: SourceLine;
  /** What this rule already said of this test: a name, message or type is said once per test. */
  seen: Set<string>;
}

/** What a rule found: the runner adds the rule's flag, its gate and, unless the finding says otherwise, its severity. */
export type Finding = Omit<AuditFlagRecord, "flag" | "severity" | "gate" | "authored"> & { severity?: number };

interface RuleFacts {
  flag: AuditFlag;
  family: Family;
  /** What its finding alone makes of a task on the annotators' 0–3 scale (a finding may say otherwise). */
  severity: number;
  /** When some findings carry another severity: which. */
  severityNote?: string;
  /** What the rule asks, in one sentence. */
  asks: string;
  /** A record it fires on, and what it found there. */
  example: string;
  /** It compares the tests with the reference fix: without one it is not asked. */
  needsReference?: boolean;
  /** What its finding does at the gate with no decision, on an upstream stage and on a benchmark-authored one. */
  gate: { upstream: Gate; authored: Gate };
}

type Check<V> = (view: V) => Finding[] | Promise<Finding[]>;

export type TaskRule = RuleFacts & { scope: "task"; check: Check<TaskView> };
export type RequestRule = RuleFacts & { scope: "request"; check: Check<RequestView> };
export type UnreadTestRule = RuleFacts & { scope: "test"; family: "reading"; check: Check<UnreadTestView> };
export type TestRule = RuleFacts & { scope: "test"; family: "linkage" | "fairness"; check: Check<TestView> };
export type LineRule = RuleFacts & { scope: "line"; check: Check<LineView> };
export type Rule = TaskRule | RequestRule | UnreadTestRule | TestRule | LineRule;
