import { z } from "zod";
import { describeEvidence } from "../../pipeline/answers/index.ts";
import { openRepositoryAnswers } from "../../pipeline/answers/open.ts";
import { AnswerExposure } from "../../pipeline/schemas/answers.ts";
import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import { RevertRecord, RuleExclusionRecord, SelectedSession } from "../../pipeline/schemas/selection.ts";
import { SplitChange } from "../../pipeline/schemas/split.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { defineStage, input, type StageContext } from "../../pipeline/engine/stage.ts";
import { NOTHING_TO_ROLL_BACK, revertFocusOutOf, type RevertVerdict } from "./revert.ts";
import { selectSessions, type AnswerRuleView } from "./select.ts";

export { caseSeed, NO_ANSWERS_HELD, selectSessions } from "./select.ts";

export const SelectConfig = z.strictObject({
  near: z.number().int().min(0).default(100),
  far: z.number().int().min(0).default(100),
  min_focus_stages: z.number().int().min(2).default(2),
  /** Interruptions with fewer substantive requests are never drawn (2: every interruption is suspended and resumed). */
  min_interruption_stages: z.number().int().min(1).default(1),
  /** Runs of each state when an interruption is qualified again on a base with the focus's fix reversed out (session.answer_rule.strategy: revert). */
  requalify_runs: z.number().int().min(1).default(3),
  /**
   * With the revert strategy, where the focus's fix does not reverse out of a source file because
   * later work built on it. never: that interruption is not viable. files: that file is set back
   * whole to its version before the fix (with every later change to it), kept only if no other
   * file of the checkout uses a definition this takes away and the interruption still qualifies
   * there; the session names the files (`derived.rolled_back`).
   */
  roll_back: z.enum(["never", "files"]).default("never"),
  /** A shortfall of near or far sessions against the counts above fails the stage, instead of a warning. */
  strict: z.boolean().default(false),
});
type SelectConfig = z.infer<typeof SelectConfig>;

export const selectStage = defineStage({
  name: "select",
  summary: "choose focus tasks (near and far) and their same-repository interruptions, with seeded draws; no checkout holds the focus's answer",
  example: "switch-swe select --config data/demo/pipeline.yaml",
  version: "2",
  module: import.meta.url,
  configSchema: SelectConfig,
  // A revert's verdict depends on its runs alone of this config (rolling back joins its own record's key): new counts or a new roll_back reuse every verdict.
  recordConfig: (config) => ({ requalify_runs: config.requalify_runs }),
  usesSeed: true,
  settings: ["session", "profiles", "execution"],
  flags: [{ flag: "--strict", description: "fewer near or far sessions than configured is an error, not a warning", key: "strict" }],
  inputs: {
    tasks: input("oracle", "tasks", Task),
    heldout: input("oracle", "heldout", HeldoutTask),
    splits: input("split", "splits", SplitChange),
    exposures: input("answers", "exposures", AnswerExposure),
  },
  outputs: [
    { name: "sessions", schema: SelectedSession, key: (s: SelectedSession) => s.focus },
    { name: "exclusions", schema: RuleExclusionRecord, key: (e: RuleExclusionRecord) => `${e.focus}\0${e.group}\0${e.task}` },
    { name: "reverts", schema: RevertRecord, key: (r: RevertRecord) => `${r.focus}\0${r.task_id}` },
  ],
  async run(ctx, { tasks, heldout, splits, exposures }) {
    const held = new Map(exposures.filter((e) => e.held).map((e) => [`${e.task_id}\0${e.checkout_task}`, e]));
    const measured = new Set(exposures.map((e) => `${e.task_id}\0${e.checkout_task}`));
    const reverts: RevertRecord[] = [];
    const view: AnswerRuleView = {
      // A pair the answers stage did not measure (a repository it could not read) is taken as holding it.
      holds: (task, checkout) => held.has(`${task}\0${checkout}`) || !measured.has(`${task}\0${checkout}`),
      why: (task, checkout) => {
        const e = held.get(`${task}\0${checkout}`);
        return e ? describeEvidence(e.evidence[0]!) : "the answers stage did not measure this pair";
      },
      exclusive: ctx.session.answer_rule.interruptions === "exclude",
      ...(ctx.session.answer_rule.strategy === "revert" ? { revert: await reverter(ctx, { heldout, splits, reverts }) } : {}),
    };
    const result = await selectSessions(
      tasks.map((t) => ({ id: t.id, repo: t.snapshot.repo, sourceFiles: t.source_files, sourceDirs: t.source_dirs, stages: t.requests.length })),
      {
        seed: ctx.seed,
        sizes: { near: ctx.config.near, far: ctx.config.far },
        interruptions: ctx.session.interruptions,
        minFocusStages: ctx.config.min_focus_stages,
        minInterruptionStages: ctx.config.min_interruption_stages,
      },
      view,
    );
    await ctx.mapRecords(result.sessions, { id: (s) => s.focus, cache: false, work: () => undefined });
    report(ctx, result, tasks.length);
    return { sessions: result.sessions, exclusions: result.exclusions, reverts };
  },
});

/** The revert strategy's reverts, each cached as a record of its own (a re-qualification is minutes). */
async function reverter(
  ctx: StageContext<SelectConfig>,
  given: { heldout: HeldoutTask[]; splits: SplitChange[]; reverts: RevertRecord[] },
): Promise<NonNullable<AnswerRuleView["revert"]>> {
  const heldout = new Map(given.heldout.map((h) => [h.task_id, h]));
  const splits = new Map(given.splits.map((s) => [s.task_id, s]));
  const { repositories } = await openRepositoryAnswers(given.heldout, ctx.resources);
  const executor = await ctx.executor();
  return async (focus, candidate) => {
    const f = heldout.get(focus)!;
    const c = heldout.get(candidate)!;
    const split = splits.get(candidate);
    const repository = repositories.get(c.repo);
    if (!split || !repository) return { ok: false, reason: `${candidate} has no split record or its repository cannot be read` };
    const attempt = async (rollBackTo?: string): Promise<RevertVerdict> => {
      const [verdict] = await ctx.mapRecords([{ focus, candidate }], {
        // Rolling back is a record of its own, so that the verdicts without it stay cached as they were.
        id: () => `${candidate} without ${focus}${rollBackTo ? ", files set back" : ""}`,
        dependsOn: () => ({ focus: f, candidate: c, split, executor: executor.kind, ...(rollBackTo ? { rollBackTo } : {}) }),
        work: async (): Promise<RevertVerdict> =>
          revertFocusOutOf(
            {
              focus: f,
              candidate: c,
              split,
              repository: repository.answers,
              mirror: repository.mirror,
              testModules: ctx.profiles.profiles.get(c.repo)?.profile.classification.test_modules,
              runs: ctx.config.requalify_runs,
              ...(rollBackTo ? { rollBackTo } : {}),
            },
            { executor, checkout: ctx.checkout.bind(ctx), saveLog: ctx.saveLog.bind(ctx), log: ctx.log },
          ),
      });
      return verdict ?? { ok: false, reason: `the re-qualification of ${candidate} did not finish (see the stage's rejects)` };
    };
    let outcome = await attempt();
    if (!outcome.ok && ctx.config.roll_back === "files") {
      const before = await repository.answers.beforeFix(f);
      const rolled = before ? await attempt(before) : undefined;
      if (rolled && !(!rolled.ok && rolled.reason === NOTHING_TO_ROLL_BACK)) outcome = rolled;
    }
    given.reverts.push({
      focus,
      task_id: candidate,
      viable: outcome.ok,
      ...(outcome.ok
        ? {
            commit: outcome.commit,
            ...(outcome.removedTests.length ? { removed_tests: outcome.removedTests } : {}),
            ...(outcome.rolledBack ? { rolled_back: outcome.rolledBack } : {}),
          }
        : { reason: outcome.reason }),
    });
    return outcome;
  };
}

/** The stage's rejects and log: foci skipped with the rule's part in it, shortfalls, and what the rule cost. */
function report(ctx: StageContext<SelectConfig>, result: Awaited<ReturnType<typeof selectSessions>>, pool: number): void {
  const chosen = new Set(result.sessions.map((s) => s.focus));
  const skippedOnce = new Map<string, string[]>();
  for (const s of result.skipped) if (!chosen.has(s.focus)) skippedOnce.set(s.focus, [...(skippedOnce.get(s.focus) ?? []), `${s.group}: ${s.reason}`]);
  for (const [focus, reasons] of skippedOnce)
    ctx.reject({ record_id: focus, reason: "not_enough_interruptions", message: `${focus}: skipped as a focus (${reasons.join("; ")})` });
  const short = result.sessions.filter((s) => s.single_request_interruptions > 0);
  if (short.length)
    ctx.log.info(
      `${short.length} session(s) had to take interruptions of a single request (too few eligible ones had two or more): ${short.map((s) => `${s.focus} (${s.single_request_interruptions})`).join(", ")}`,
    );
  const byReason = new Map<string, number>();
  for (const e of result.exclusions) byReason.set(e.reason, (byReason.get(e.reason) ?? 0) + 1);
  const foci = new Set(result.exclusions.map((e) => e.focus)).size;
  ctx.note(
    `answer rule (${ctx.session.answer_rule.strategy}): ${result.exclusions.length} candidate interruption(s) kept out over ${foci} focus task(s)${
      byReason.size ? ` (${[...byReason].map(([r, n]) => `${r} ${n}`).join(", ")})` : ""
    }; ${result.sessions.reduce((n, s) => n + s.derived_checkouts.length, 0)} interruption checkout(s) with the focus's fix reversed out; ${result.sessions.reduce((n, s) => n + s.interruption_answers.length, 0)} interruption answer(s) in other checkouts (${ctx.session.answer_rule.interruptions === "exclude" ? "excluded" : "reported"})`,
  );
  const perFocus = new Map<string, Map<string, number>>();
  for (const e of result.exclusions) {
    const reasons = perFocus.get(e.focus) ?? new Map<string, number>();
    reasons.set(e.reason, (reasons.get(e.reason) ?? 0) + 1);
    perFocus.set(e.focus, reasons);
  }
  if (perFocus.size)
    ctx.note(
      `kept out per focus candidate: ${[...perFocus]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([focus, reasons]) => `${focus} ${[...reasons].map(([r, n]) => `${r} ${n}`).join(" + ")}${chosen.has(focus) ? "" : " (skipped)"}`)
        .join("; ")}`,
    );
  const shortfalls = (["near", "far"] as const).flatMap((group) => {
    const got = result.sessions.filter((s) => s.locality === group).length;
    const wanted = ctx.config[group];
    return got < wanted
      ? [
          `${got} ${group} session(s) of the ${wanted} configured: ${result.skipped.filter((s) => s.group === group && !chosen.has(s.focus)).length} focus candidate(s) of ${pool} task(s) lacked eligible interruptions (see the rejects: not_enough_interruptions, and artifacts/select/exclusions.jsonl)`,
        ]
      : [];
  });
  if (shortfalls.length && ctx.config.strict) throw new Error(`select (--strict): ${shortfalls.join("; ")}`);
  for (const shortfall of shortfalls) {
    ctx.log.warn(`select: ${shortfall}`);
    ctx.note(`shortfall: ${shortfall}`);
  }
  ctx.log.info(
    `${result.sessions.filter((s) => s.locality === "near").length} near and ${result.sessions.filter((s) => s.locality === "far").length} far sessions; ${Object.keys(result.interruptionReuse).length} distinct interruption tasks`,
  );
}
