import { z } from "zod";
import { AuditFlag, Gate, Measurement, Severity } from "../../../pipeline/schemas/audit.ts";
import { untestedAlternative } from "./alternatives.ts";
import { changedExpectation, notSubstantive, unjustifiedTest, unrequestedTest, unverifiedStage } from "./linkage.ts";
import { openChoice } from "./open-choice.ts";
import { exactFormat, exactMessage, newName, unrequestedCode, unrequestedException, unrequestedWarning } from "./outcomes.ts";
import { noRepository, sourceNotFound } from "./reading.ts";
import { unchangedTest, unrequestedBehaviour, unshownCase } from "./scope.ts";
import type { Rule } from "./types.ts";

/**
 * Every rule of the audit, in the order the runner asks them (the order of a record's flags):
 * what the audit could not read; for each fail-to-pass test its linkage, then each line the test
 * patch added to it, then the whole test; then the task; then each request. A rule is its flag,
 * what it looks at, what its finding alone weighs, the question it asks and a record it fires on;
 * its check is the function named beside it. `switch-swe audit rules` prints this table, and
 * docs/AUDITING.md's is made from it.
 *
 * Its gate says what its finding does with no decision on the task, on an upstream stage (a
 * request from the record's issue or discussion) and on a benchmark-authored one. Only findings a
 * reader can check in the files exclude by themselves: a test no request names beside tests the
 * requests do name (`unrequested_test`), and, on an authored stage, whose request the benchmark
 * wrote to be complete, a test that checks a name, message, exception, code or literal form its
 * request never states, or a stage none of whose declared tests is fail-to-pass. Every other
 * finding only ranks the task for an auditor: each rule was written looking at the annotated
 * records it could be measured on (docs/AUDITING.md), so none is shown to generalise.
 */
/** The gates a rule's finding can have by default (a config may put a measured rule in force). */
const HARD = "excludes alone" as const;
const DECIDED = "only with a decision" as const;

export const RULES: readonly Rule[] = [
  {
    flag: "no_repository",
    gate: { upstream: DECIDED, authored: DECIDED },
    scope: "task",
    family: "reading",
    severity: 0,
    asks: "Were the test sources read from the test patch alone, without the repository (and why)?",
    example: "django__django-16527 without a mirror: its tests are read from the test patch's hunks",
    check: noRepository,
  },
  {
    flag: "source_not_found",
    gate: { upstream: DECIDED, authored: DECIDED },
    scope: "test",
    family: "reading",
    severity: 0,
    asks: "Is the fail-to-pass test's source nowhere in what was read?",
    example: "django__django-11001 without a mirror: the test patch does not hold the test",
    check: sourceNotFound,
  },
  {
    flag: "unjustified_test",
    gate: { upstream: DECIDED, authored: DECIDED },
    scope: "test",
    family: "linkage",
    severity: 1,
    asks: "Does no request declare the test, or name what it calls and mention something it checks?",
    example: "the demo's `*_listed` tests: no request asks for `__all__`",
    check: unjustifiedTest,
  },
  {
    flag: "changed_expectation",
    gate: { upstream: DECIDED, authored: DECIDED },
    scope: "test",
    family: "linkage",
    severity: 2,
    asks: "Does the test patch change an assertion of a test no request links to, swapping words no request names?",
    example: "sympy__sympy-18057: `test_var` read `assert v == ['d', 'e', 'fg']`; the fix changes it and the issue never asks",
    check: changedExpectation,
  },
  {
    flag: "new_name",
    gate: { upstream: DECIDED, authored: HARD },
    scope: "line",
    family: "fairness",
    severity: 3,
    severityNote: "2 for a parameter or a string key",
    asks: "Does the test use a public name, parameter or option string the reference fix introduces and no request names?",
    example: 'sphinx-doc__sphinx-8273: the test sets "man_make_section_directory", a setting the fix invents',
    needsReference: true,
    check: newName,
  },
  {
    flag: "exact_message",
    gate: { upstream: DECIDED, authored: HARD },
    scope: "line",
    family: "fairness",
    severity: 2,
    asks: "Does the test assert, word for word, a message the reference fix writes that the base lacks and no request states?",
    example: "django__django-14730: the test asserts 'related_name has no effect on ManyToManyField with …', which the fix writes",
    needsReference: true,
    check: exactMessage,
  },
  {
    flag: "unrequested_exception",
    gate: { upstream: DECIDED, authored: HARD },
    scope: "line",
    family: "fairness",
    severity: 2,
    asks: "Does the test expect an exception type no request names?",
    example: "pylint-dev__pylint-6506: the test expects SystemExit, which the issue never names",
    needsReference: true,
    check: unrequestedException,
  },
  {
    flag: "unrequested_warning",
    gate: { upstream: DECIDED, authored: HARD },
    scope: "line",
    family: "fairness",
    severity: 2,
    asks: "Does the test expect a warning where no request names its class or speaks of warning or deprecating?",
    example: "matplotlib__matplotlib-24265: the issue wants a style name back, the test a deprecation warning",
    needsReference: true,
    check: unrequestedWarning,
  },
  {
    flag: "unrequested_code",
    gate: { upstream: DECIDED, authored: HARD },
    scope: "line",
    family: "fairness",
    severity: 2,
    asks: "Does the test expect a check or message code (admin.E109, W0611) no request names?",
    example: "django__django-16816: the test expects admin.E109 where the issue says E108",
    needsReference: true,
    check: unrequestedCode,
  },
  {
    flag: "exact_format",
    gate: { upstream: DECIDED, authored: HARD },
    scope: "test",
    family: "fairness",
    severity: 2,
    asks: "Does the test compare a printer's output with a literal whose form no request shows?",
    example: "sympy__sympy-16106: the test compares printed MathML with <msub><mi>a</mi><mi>b</mi></msub>, which the issue never shows",
    needsReference: true,
    check: exactFormat,
  },
  {
    flag: "unrequested_behaviour",
    gate: { upstream: DECIDED, authored: DECIDED },
    scope: "test",
    family: "fairness",
    severity: 2,
    asks: "Does the test exercise functions the reference fix changes that no request names or points at by their file?",
    example: "matplotlib__matplotlib-23562: the test checks get_edgecolor, which the fix changes and the issue never names",
    needsReference: true,
    check: unrequestedBehaviour,
  },
  {
    flag: "unshown_case",
    gate: { upstream: DECIDED, authored: DECIDED },
    scope: "test",
    family: "fairness",
    severity: 2,
    asks: "Does the test add a case beside the one a request shows, that no request shows nor the test held before?",
    example: "django__django-15202: an empty hostname beside the issue's '////]@N.AN'",
    needsReference: true,
    check: unshownCase,
  },
  {
    flag: "open_choice",
    gate: { upstream: DECIDED, authored: DECIDED },
    scope: "test",
    family: "fairness",
    severity: 2,
    asks: "Does a request leave the outcome open while the test pins one no request states (or one of several it lists)?",
    example: "sympy__sympy-13043: 'it should be sorted somehow, or returning a set'; the test pins `{x}`",
    needsReference: true,
    check: openChoice,
  },
  {
    flag: "unrequested_test",
    gate: { upstream: HARD, authored: DECIDED },
    scope: "task",
    family: "linkage",
    severity: 2,
    asks: "Beside a test that checks what a request asks, is there one no request links to?",
    example: "django__django-12915: two tests check get_response_async, a third a whole static file response",
    check: unrequestedTest,
  },
  {
    flag: "unchanged_test",
    gate: { upstream: DECIDED, authored: DECIDED },
    scope: "task",
    family: "fairness",
    severity: 2,
    asks: "Are the deciding tests all ones the patch leaves alone, while the tests it adds are not fail-to-pass?",
    example: "psf__requests-2674: twelve network tests decide; the one written for the issue does not",
    check: unchangedTest,
  },
  {
    flag: "untested_alternative",
    gate: { upstream: DECIDED, authored: DECIDED },
    scope: "task",
    family: "fairness",
    severity: 2,
    asks: "Does a request name two cases of code joined by 'or' while the tests hold one and not the other?",
    example: "django__django-16041: empty_permitted True or False; the test checks False only",
    check: untestedAlternative,
  },
  {
    flag: "not_substantive",
    gate: { upstream: DECIDED, authored: DECIDED },
    scope: "request",
    family: "linkage",
    severity: 1,
    asks: "Does the request state no requested behaviour at all?",
    example: "a request that only reports what happened, with no should, must, add or return",
    check: notSubstantive,
  },
  {
    flag: "unverified_stage",
    gate: { upstream: DECIDED, authored: HARD },
    scope: "request",
    family: "linkage",
    severity: 1,
    asks: "Does the request ask for something no fail-to-pass test is linked to?",
    example: "a request whose words no fail-to-pass test's names or checks share",
    check: unverifiedStage,
  },
];

/**
 * The config's word on rules: one turned off, its findings weighed at another severity, or its
 * gate replaced (for upstream and authored stages alike). A gate that excludes needs the
 * measurement that shows the rule is right where it fires (gate.ts checks it before a run).
 */
export const RuleSettings = z
  .partialRecord(
    AuditFlag,
    z
      .strictObject({ enabled: z.boolean().default(true), severity: Severity.optional(), gate: Gate.optional(), measured: Measurement.optional() })
      .refine((s) => s.gate === undefined || s.gate === "only with a decision" || s.measured !== undefined, {
        message: "a gate that excludes needs `measured`: the annotated records the rule was measured on, those it fired on and those of them scored 2 or more",
        path: ["measured"],
      }),
  )
  .default({});
export type RuleSettings = z.infer<typeof RuleSettings>;

/** A rule as a run asks it: the severity its findings carry where the config sets one, and its gate on each kind of stage. */
export interface RuleInUse {
  rule: Rule;
  severity?: number;
  gate: Rule["gate"];
  /** The config put it in force (or out of it): the gate is the config's, not the registry's. */
  configured?: { measured?: Measurement };
}

/** The rules a run asks, in the registry's order, with the config's settings applied. */
export function rulesInUse(settings: RuleSettings = {}): RuleInUse[] {
  return RULES.flatMap((rule) => {
    const setting = settings[rule.flag];
    if (setting?.enabled === false) return [];
    const gate = setting?.gate ? { upstream: setting.gate, authored: setting.gate } : rule.gate;
    return [
      {
        rule,
        gate,
        ...(setting?.severity === undefined ? {} : { severity: setting.severity }),
        ...(setting?.gate ? { configured: setting.measured ? { measured: setting.measured } : {} } : {}),
      },
    ];
  });
}

/** The registry as rows (flag, scope, family, severity, what it asks, example), as `audit rules` prints it. */
export function ruleRows(): string[][] {
  return RULES.map((r) => [
    r.flag,
    r.scope,
    r.family,
    r.severityNote ? `${r.severity} (${r.severityNote})` : String(r.severity),
    gateText(r.gate),
    r.asks,
    r.example,
  ]);
}

/** A rule's gate in a few words: one, or upstream and authored apart. */
export function gateText(gate: Rule["gate"]): string {
  return gate.upstream === gate.authored ? gate.upstream : `${gate.upstream}; authored: ${gate.authored}`;
}

export const RULE_COLUMNS = ["flag", "scope", "family", "severity", "gate", "asks", "example"];
