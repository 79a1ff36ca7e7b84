import { z } from "zod";
import { TaskId } from "./common.ts";

/**
 * What the audit can say of a task: one flag per rule of its registry (stages/audit/rules/registry.ts,
 * `switch-swe audit rules`). Linkage (SPEC §2.5): `unjustified_test` (no request mentions
 * what an F2P test checks), `unverified_stage`, `not_substantive`. Fairness, in
 * the terms of SWE-bench Verified's `false_negative` annotations: `new_name`, `exact_message`, `unrequested_exception`, `unrequested_warning`, `unrequested_test`,
 * `exact_format`, `unrequested_behaviour`, `unrequested_code`, `open_choice`, `changed_expectation`, `unchanged_test`, `unshown_case`,
 * `untested_alternative`. What the audit could not read: `no_repository` (per
 * task), `source_not_found` (per test); these never count against a task.
 */
export const AuditFlag = z.enum([
  "unjustified_test",
  "unverified_stage",
  "not_substantive",
  "new_name",
  "exact_message",
  "exact_format",
  "unrequested_exception",
  "unrequested_warning",
  "unrequested_test",
  "unrequested_behaviour",
  "unrequested_code",
  "open_choice",
  "changed_expectation",
  "unchanged_test",
  "unshown_case",
  "untested_alternative",
  "no_repository",
  "source_not_found",
]);
export type AuditFlag = z.infer<typeof AuditFlag>;

/** 0 fine, 1 minor gaps, 2 substantial, 3 severe: the annotators' scale. */
export const Severity = z.number().int().min(0).max(3);

/**
 * Where that scale turns from gaps to unfairness: a score of 2 or more is what SWE-bench Verified
 * excluded, a finding of 2 or more is substantial, a severity of 2 or more is flagged, and every
 * agreement figure counts a record unfair from here.
 */
export const SUBSTANTIAL = 2;

/**
 * What a rule's finding does at the audit's gate, with no decision on the task: it excludes the
 * task by itself; it excludes it when the task's severity reaches the config's
 * `exclude_at_severity`; or it only shows and ranks the task for an auditor, who decides.
 */
export const Gate = z.enum(["excludes alone", "at severity", "only with a decision"]);
export type Gate = z.infer<typeof Gate>;

export const AuditFlagRecord = z.object({
  flag: AuditFlag,
  subject: z.string(),
  detail: z.string(),
  /** What this flag alone makes of the task, on the 0–3 scale. */
  severity: Severity,
  /** Lines a person can check: the file (at the base with the test patch applied), line number and text. */
  evidence: z.array(z.object({ file: z.string(), line: z.number().int().positive(), text: z.string() })).default([]),
  /** What the finding does at the gate: its rule's gate for the kind of stage it concerns, or the config's. */
  gate: Gate,
  /** It concerns a benchmark-authored stage (its request, or a test the stage declares), audited by its own hard checks. */
  authored: z.literal(true).optional(),
});
export type AuditFlagRecord = z.infer<typeof AuditFlagRecord>;

/**
 * General signals of a task, measured alike on every record (stages/audit/risk/signals.ts): lines
 * the reference fix adds, sentences of the requests that leave the outcome open, distinct calls
 * in the tests' added lines, names and literals the tests take from the fix that no request says,
 * the share of the read fail-to-pass tests the test patch adds, and the overlap (Ochiai's, 0–1) of
 * the names the test patch and the fix bring that the requests do not contain.
 */
export const AuditSignals = z.strictObject({
  reference_lines: z.number().int().nonnegative(),
  open_sentences: z.number().int().nonnegative(),
  test_calls: z.number().int().nonnegative(),
  leaked_names: z.number().int().nonnegative(),
  tests_added: z.number().min(0).max(1),
  shared_names: z.number().min(0).max(1),
});
export type AuditSignals = z.infer<typeof AuditSignals>;

/** What a model judge said of a task (`audit --judge`): each pass's severity and rationale, and their consensus. */
export const JudgeVerdict = z.strictObject({
  model: z.string(),
  prompt_version: z.string(),
  /** The mode where two passes agree, else the median. */
  severity: Severity,
  passes: z.array(
    z.strictObject({
      severity: Severity,
      /** Why, quoting the test line and the request sentence it weighs. */
      rationale: z.string(),
      test_line: z.string(),
      request_sentence: z.string(),
    }),
  ),
  /** The tokens its passes took when they were asked (a verdict read from the cache says what it cost then). */
  usage: z.strictObject({ input_tokens: z.number().int().nonnegative(), output_tokens: z.number().int().nonnegative() }),
});
export type JudgeVerdict = z.infer<typeof JudgeVerdict>;

/** Stage 5's output: requirement ↔ verifier alignment for one task. */
export const AuditRecord = z.object({
  task_id: TaskId,
  /** Where test sources were read: the repository at the base with the test patch applied, or the test patch alone. */
  source: z.enum(["repository", "test_patch"]),
  /**
   * The task's severity on the 0–3 scale: the band its risk falls in (the risk model's thresholds),
   * or, where no risk model is used, the highest of its flags', 3 when two kinds of substantial flag meet.
   */
  severity: Severity,
  /** The probability that annotators would score the task's tests unfair (`false_negative` ≥ 2), from the risk model; absent without one. */
  risk: z.number().min(0).max(1).optional(),
  signals: AuditSignals,
  judge: JudgeVerdict.optional(),
  links: z.array(
    z.object({
      test: z.string(),
      stages: z.array(z.number().int().positive()),
      evidence: z.array(z.object({ stage: z.number().int().positive(), token: z.string() })),
      public_contract: z.string().optional(),
    }),
  ),
  flags: z.array(AuditFlagRecord),
  /** An auditor's decision, from the config's decisions file: it covers the whole task. */
  decision: z.object({ verdict: z.enum(["approve", "exclude"]), auditor: z.string(), reason: z.string() }).optional(),
  /** A decision imported from human annotations (`audit import-annotations`): it covers the upstream stage. */
  imported: z
    .strictObject({
      verdict: z.enum(["approve", "exclude"]),
      reason: z.string(),
      annotators: z.string(),
      scores: z.strictObject({
        false_negative: Severity,
        underspecified: Severity,
        other_major_issues: z.number().int().min(0).max(1),
        filter_out: z.boolean(),
      }),
      file: z.string(),
    })
    .optional(),
  /** Why the gate excluded the task, when it did: the reject's reason, what decided, and the message. */
  exclusion: z
    .strictObject({
      reason: z.enum(["audit_excluded", "unjustified_test", "unfair_verifier"]),
      by: z.enum(["local decision", "imported decision", "hard finding", "rule in force", "judge in force"]),
      message: z.string(),
    })
    .optional(),
});
export type AuditRecord = z.infer<typeof AuditRecord>;

/** What the risk model reads of a record: one number per feature (stages/audit/risk/features.ts). */
export const RiskFeature = z.enum([
  "findings",
  "unlinked",
  "open_sentences",
  "reference_lines",
  "test_calls",
  "leaked_names",
  "tests_added",
  "shared_names",
  "judge",
]);
export type RiskFeature = z.infer<typeof RiskFeature>;

/** One fitted logistic model: P(false_negative ≥ 2) = sigmoid(intercept + Σ weight · feature), and its severity bands. */
export const FittedRisk = z.strictObject({
  features: z.array(RiskFeature).min(1),
  /** The L2 penalty it was fitted with (on standardised features). */
  lambda: z.number().nonnegative(),
  intercept: z.number(),
  weights: z.partialRecord(RiskFeature, z.number()),
  /** Each feature's mean over the records fitted: a signal's share is its weight times its distance from the mean. */
  means: z.partialRecord(RiskFeature, z.number()),
  /** The risks from which a task's severity is 1, 2 and 3, chosen for the best kappa on the records fitted. */
  thresholds: z.tuple([z.number(), z.number(), z.number()]),
});
export type FittedRisk = z.infer<typeof FittedRisk>;

/** data/audit/risk-model.json: the risk model's weights, with the records they came from (`switch-swe audit fit-risk`). */
export const RiskModel = z.strictObject({
  why: z.string(),
  model: FittedRisk,
  /** The model with the judge's score among its features, fitted where the judge had judged the annotated records. */
  with_judge: FittedRisk.extend({ judge: z.strictObject({ model: z.string(), prompt_version: z.string() }) }).optional(),
  fitted_on: z.strictObject({
    records_file: z.string(),
    annotations_file: z.string(),
    /** The annotated records the weights were fitted on, and how many annotators scored 2 or more. */
    records: z.array(z.string()),
    scored_2_or_more: z.number().int().nonnegative(),
  }),
});
export type RiskModel = z.infer<typeof RiskModel>;

/** data/audit/rules.yaml: per rule, the records it was written from and the commits that wrote it; and every record the audit's authors looked at. */
export const RuleProvenance = z.strictObject({
  /** Records every rule's author had read (both SWE-bench Lite files held here): no measurement on them is out of sample. */
  looked_at: z.strictObject({ why: z.string(), files: z.array(z.string()), records: z.array(z.string()) }),
  rules: z.partialRecord(AuditFlag, z.strictObject({ written_from: z.array(z.string()), commits: z.array(z.string()) })),
});
export type RuleProvenance = z.infer<typeof RuleProvenance>;

/** data/audit/judges/<name>.yaml: a model judge, reached through its provider's official SDK (`audit --judge`). */
export const JudgeAdapter = z.strictObject({
  /** Anthropic Messages, or an OpenAI-compatible Chat Completions API. */
  protocol: z.enum(["anthropic", "openai"]),
  model: z.string().min(1),
  /** The environment variable holding the API key (never printed). */
  key_env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, "expected an environment variable's name"),
  /** The API's base URL, or the environment variable that holds it; the provider's own by default. */
  base_url: z.string().url().optional(),
  base_url_env: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/)
    .optional(),
  /** Dollars per million input and output tokens, for the report's cost. */
  price_per_million: z.strictObject({ input: z.number().nonnegative(), output: z.number().nonnegative() }),
  max_output_tokens: z.number().int().positive().default(1024),
});
export type JudgeAdapter = z.infer<typeof JudgeAdapter>;

/**
 * How a figure was measured against human annotations: on records the audit's authors looked at
 * (in sample), by cross-validation on those records (every weight and threshold fitted without
 * the record it scores), or on records nobody here looked at (unseen).
 */
export const MeasurementMethod = z.enum(["in sample", "cross-validated on the given records", "unseen"]);
export type MeasurementMethod = z.infer<typeof MeasurementMethod>;

/**
 * A measurement that puts a rule (or the model judge) in force at the gate: the annotated records
 * it was measured on, those it fired on as it is gated, and those of them annotators scored
 * `false_negative` 2 or more. The audit computes the precision's Wilson interval and the base rate
 * itself, and refuses a measurement on records the rule's author looked at, or whose lower bound
 * is not above the base rate.
 */
export const Measurement = z.strictObject({
  records_file: z.string().min(1),
  annotations_file: z.string().min(1),
  records: z.array(z.string()).min(1),
  fired: z.array(z.string()).min(1),
  unfair: z.array(z.string()),
  /** How many of `records` annotators scored 2 or more. */
  scored_2_or_more: z.number().int().nonnegative(),
});
export type Measurement = z.infer<typeof Measurement>;

/** A precision with its 95 % Wilson interval, and how it was measured. */
export const MeasuredPrecision = z.strictObject({
  /** Records it fired on, and how many of them annotators scored 2 or more. */
  fired: z.number().int().nonnegative(),
  unfair: z.number().int().nonnegative(),
  precision: z.number().min(0).max(1).nullable(),
  interval: z.tuple([z.number(), z.number()]).nullable(),
  method: MeasurementMethod,
});
export type MeasuredPrecision = z.infer<typeof MeasuredPrecision>;

/**
 * data/audit/measurements.json: the audit measured against the annotated records it was built on
 * (`switch-swe audit fit-risk` writes it), for the auditors' page: each rule's precision, the
 * shipped gate's exclusions, the risk's agreement and how many tasks an auditor reads, in its
 * order, to find half of the unfair ones; every figure with how it was measured.
 */
export const AuditMeasurements = z.strictObject({
  why: z.string(),
  records_file: z.string(),
  annotations_file: z.string(),
  annotated: z.number().int().nonnegative(),
  scored_2_or_more: z.number().int().nonnegative(),
  rules: z.partialRecord(AuditFlag, MeasuredPrecision),
  /** What the gate shipped excludes of the annotated records with no decision. */
  gate: MeasuredPrecision.extend({ zeros_excluded: z.number().int().nonnegative(), zeros: z.number().int().nonnegative() }),
  /** The risk's order: tasks read, riskiest first, until half of the unfair ones are found; a random order's expectation beside. */
  triage: z.array(
    z.strictObject({
      scheme: z.string(),
      method: MeasurementMethod,
      read: z.number().int().nonnegative(),
      of: z.number().int().nonnegative(),
      found: z.number().int().nonnegative(),
      unfair: z.number().int().nonnegative(),
      random: z.number().nonnegative(),
    }),
  ),
  /** The risk's bands against the annotations (flagged: severity 2 or more). */
  agreement: z.array(
    z.strictObject({
      scope: z.string(),
      method: MeasurementMethod,
      records: z.number().int().nonnegative(),
      kappa: z.number().nullable(),
      auc: z.number().nullable(),
      flagged_of_score0: z.string(),
      flagged_of_score3: z.string(),
    }),
  ),
});
export type AuditMeasurements = z.infer<typeof AuditMeasurements>;
