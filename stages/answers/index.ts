import { z } from "zod";
import { answerEvidence, describeEvidence } from "../../pipeline/answers/index.ts";
import { openRepositoryAnswers } from "../../pipeline/answers/open.ts";
import { AnswerExposure, TaskAnswer } from "../../pipeline/schemas/answers.ts";
import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import { LocalityPair } from "../../pipeline/schemas/locality.ts";
import { defineStage, input } from "../../pipeline/engine/stage.ts";

export const AnswersConfig = z.strictObject({});

/**
 * SPEC §2.7, "no answer in the container", measured: for every task, the commit that brought its
 * fix and what its answer is made of; for every pair of tasks of one repository (any two may
 * share a session: a focus and an interruption are disjoint, two interruptions need not be),
 * whether each one's base holds the other's answer, with the
 * evidence. select chooses by it; validate checks the emitted sessions again on its own.
 */
export const answersStage = defineStage({
  name: "answers",
  summary: "find where each task's answer is (its fix in history, its hunks, the names only it defines) and which other tasks' checkouts hold it",
  example: "switch-swe answers --config data/demo/pipeline.yaml",
  version: "1",
  module: import.meta.url,
  configSchema: AnswersConfig,
  settings: ["profiles"],
  inputs: { heldout: input("oracle", "heldout", HeldoutTask), pairs: input("locality", "pairs", LocalityPair) },
  outputs: [
    { name: "answers", schema: TaskAnswer, key: (a: TaskAnswer) => a.task_id },
    { name: "exposures", schema: AnswerExposure, key: (e: AnswerExposure) => `${e.task_id}\0${e.checkout_task}` },
  ],
  async run(ctx, { heldout, pairs }) {
    const { repositories, unavailable } = await openRepositoryAnswers(heldout, ctx.resources);
    for (const [repo, why] of unavailable)
      ctx.log.warn(`answers: ${repo} cannot be read (${why}); its tasks get no answer record and select will not use them`);
    const byId = new Map(heldout.map((h) => [h.task_id, h]));
    const answers = await ctx.mapRecords(
      heldout.filter((h) => repositories.has(h.repo)),
      {
        id: (h) => h.task_id,
        cache: false,
        work: async (task): Promise<TaskAnswer> => {
          const { fix, facts } = await repositories.get(task.repo)!.answers.of(task);
          return { task_id: task.task_id, repo: task.repo, base_commit: task.base_commit, fix, hunks: facts.hunks.length, new_names: facts.newNames };
        },
      },
    );
    const directions = pairs
      .filter((p) => repositories.has(p.repo) && byId.has(p.task_a) && byId.has(p.task_b))
      .flatMap((p) => [
        { task: p.task_a, checkout: p.task_b, repo: p.repo },
        { task: p.task_b, checkout: p.task_a, repo: p.repo },
      ]);
    const exposures: AnswerExposure[] = [];
    for (const { task, checkout, repo } of directions) {
      const { answers: repository } = repositories.get(repo)!;
      const { facts } = await repository.of(byId.get(task)!);
      const evidence = await answerEvidence(repository.reader, facts, { commit: byId.get(checkout)!.base_commit, reversed: false });
      exposures.push({ task_id: task, checkout_task: checkout, held: evidence.length > 0, evidence });
    }
    const held = exposures.filter((e) => e.held);
    ctx.log.info(
      `answers: ${answers.length} task(s); fix commits found for ${answers.filter((a) => a.fix.commit).length}; ${held.length} of ${exposures.length} pair direction(s) of a repository have a checkout holding the other task's answer`,
    );
    for (const e of held.slice(0, 5)) ctx.log.info(`  ${e.checkout_task}'s base holds ${e.task_id}'s answer: ${describeEvidence(e.evidence[0]!)}`);
    return { answers, exposures };
  },
});
