import { passes, keepDecision } from "../../pipeline/qualification/outcomes.ts";
import { type StageToCheck, stageVerdicts, throughRuns, upstreamVerdict } from "../../pipeline/qualification/extension-checks.ts";
import type { qualifyTask } from "../../pipeline/qualification/qualify-task.ts";
import type { SplitChange } from "../../pipeline/schemas/split.ts";

/** Something that does not hold: its cause (a reject reason, an audit rule) and a message naming the file, the field and why. */
export interface Problem {
  cause: string;
  message: string;
}

/** What qualify's runs show of an extended task: problems, each on the stage to blame (`field`) or the task, and each stage's tests as collected. */
export interface Qualified {
  problems: (Problem & { field?: string })[];
  stageTests: { stage: number; tests: string[] }[];
  failToPass: string[];
}

/**
 * Qualify's stage checks (pipeline/qualification's, every stage's answer rather than the first),
 * the upstream fix's own tests, and the task's keep rule, from one qualification of the composed
 * split. A problem a later stage causes (an earlier stage's or the upstream fix's tests failing
 * with it, a test that passed on the base failing) is put on that later stage.
 */
export function qualifiedProblems(split: SplitChange, result: Awaited<ReturnType<typeof qualifyTask>>): Qualified {
  const extensions = split.extensions ?? [];
  const stages: StageToCheck[] = extensions.map((e) => ({ index: e.index, field: e.field, file: e.file, tests: e.tests }));
  const through = throughRuns(result.runs, stages.length);
  const verdicts = stageVerdicts(stages, result.sets, through);
  const problems: Qualified["problems"] = verdicts.flatMap((v) =>
    v.problems.map((p) => ({ cause: p.reason, message: p.detail, field: (p.culprit ?? stages[v.stage - 1]!).field })),
  );
  const upstream = upstreamVerdict(stages, result.sets, through);
  if (upstream)
    problems.push(
      upstream.culprit
        ? { cause: upstream.reason, message: upstream.detail, field: upstream.culprit.field }
        : { cause: upstream.reason, message: `${split.task_id}: ${upstream.detail}` },
    );
  problems.push(...regressions(split, result.sets.passToFail, through, stages));
  const kept = keepDecision(result.sets);
  if (!kept.kept && kept.reason !== "regression") problems.push({ cause: kept.reason, message: `${split.task_id}: ${kept.detail}` });
  return { problems, stageTests: verdicts.map((v) => ({ stage: v.stage, tests: v.tests })), failToPass: result.sets.failToPass };
}

/** Each test that passed on the base and fails with the whole reference, on the first state it fails in: the upstream fix, or a stage. */
function regressions(split: SplitChange, passToFail: string[], through: ReturnType<typeof throughRuns>, stages: StageToCheck[]): Qualified["problems"] {
  const ordered = [...through].sort((a, b) => a.through - b.through || a.run - b.run);
  return passToFail.map((test) => {
    const first = ordered.find((r) => !passes(r.outcomes[test]));
    const culprit = first && first.through > 0 ? stages[first.through - 1] : undefined;
    if (!culprit)
      return {
        cause: "regression",
        message: `${split.task_id}: ${test} passes before the upstream fix and fails with it: the task is rejected whatever its stages`,
      };
    return {
      cause: "regression",
      message: `${culprit.file}: field ${culprit.field}.implementation: ${test} passes on the base and fails once this stage is applied (run ${first!.run + 1}): a stage must not break what worked`,
      field: culprit.field,
    };
  });
}
