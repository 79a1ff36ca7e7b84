import { RecordError } from "../../pipeline/engine/stage.ts";
import type { ExtensionStage } from "../../pipeline/schemas/split.ts";
import type { Request } from "../../pipeline/schemas/task.ts";

/**
 * The task's requests with its benchmark-authored stages placed among the upstream ones (each
 * after the upstream stage its file names, else after the last), renumbered. An authored request
 * is provenance `authored` (its file, author and reason), never mixed with upstream text, and
 * declares the fail-to-pass tests qualify found for it.
 */
export function withAuthoredStages(
  taskId: string,
  upstream: Request[],
  stages: readonly ExtensionStage[],
  stageTests: readonly { stage: number; tests: string[] }[],
): Request[] {
  const last = upstream.length;
  const out: Omit<Request, "stage">[] = [];
  const authoredAfter = (position: number) => stages.filter((s) => (s.after ?? last) === position);
  for (const stage of stages) {
    if ((stage.after ?? last) > last)
      throw new RecordError(
        "invalid_extension",
        `${taskId}: ${stage.file}: field ${stage.field}.after: ${stage.after}, but the task has ${last} upstream stage(s)`,
        { file: stage.file, field: `${stage.field}.after` },
      );
  }
  for (let position = 1; position <= last; position++) {
    out.push(upstream[position - 1]!);
    for (const stage of authoredAfter(position)) {
      const tests = stageTests.find((s) => s.stage === stage.index)?.tests;
      if (!tests?.length) throw new Error(`${taskId}: qualify kept the task without the tests of its extension's stage ${stage.index}`);
      // A stage of the pull request's own commits: upstream code and tests, a written request.
      const source = stage.commit
        ? { kind: "upstream_commit" as const, record_id: stage.commit, author: stage.author, file: stage.file, reason: stage.reason }
        : { kind: "authored" as const, record_id: `extension:${stage.file}#${stage.index}`, author: stage.author, file: stage.file, reason: stage.reason };
      out.push({ text: stage.request, provenance: { sources: [source] }, tests });
    }
  }
  return out.map((r, i) => ({ ...r, stage: i + 1 }));
}
