import fc from "fast-check";
import type { SessionSpec } from "../../pipeline/schemas/session.ts";
import { parentDir } from "../../stages/split/split.ts";
import { sessionSpec } from "../../stages/schedule/schedule.ts";
import type { SelectableTask, SelectionResult } from "../../stages/select/select.ts";

/**
 * Pools of synthetic tasks and the sessions select and schedule make of them, for the tests of
 * select, schedule and validate: the same builders, so each stage's test checks what the others
 * hand it.
 */
export const PATHS = ["/workspace/w00", "/workspace/w01", "/workspace/w02", "/workspace/w03", "/workspace/w04"];

/** A session spec as the schedule stage builds it, from synthetic tasks. */
export function specFor(session: SelectionResult["sessions"][number], tasks: Map<string, SelectableTask>): SessionSpec {
  return sessionSpec({
    session,
    benchmark: "t",
    seed: "s",
    task: (id) => ({ stages: tasks.get(id)!.stages, baseCommit: "0".repeat(40) }),
    text: (s) => (s.finalization ? "Finish." : `${s.task} stage ${s.stage}`),
    checkoutPaths: PATHS,
    budget: { per_request_seconds: 900, timeout_continuations: 3 },
  });
}

export interface PoolEntry {
  dir: string;
  file: string;
  extra?: string;
  stages: number;
  repo: string;
}

/** One synthetic task's shape: where its source file is, how many stages, which repository. */
export const taskArb: fc.Arbitrary<PoolEntry> = fc.record({
  dir: fc.constantFrom("pkg", "pkg/a", "pkg/b", "lib", "."),
  file: fc.constantFrom("x.py", "y.py", "z.py", "w.py"),
  extra: fc.option(fc.constantFrom("pkg/c/q.py", "lib/r.py", "s.py"), { nil: undefined }),
  stages: fc.integer({ min: 1, max: 5 }),
  repo: fc.constantFrom("o/one", "o/two"),
});

/** Tasks from their shapes, numbered in order within the ids (`o__one-1`, …). */
export function pool(entries: PoolEntry[]): SelectableTask[] {
  return entries.map((e, i) => {
    const files = [...new Set([e.dir === "." ? e.file : `${e.dir}/${e.file}`, ...(e.extra ? [e.extra] : [])])].sort();
    return {
      id: `${e.repo.replace("/", "__")}-${i + 1}`,
      repo: e.repo,
      sourceFiles: files,
      sourceDirs: [...new Set(files.map(parentDir))].sort(),
      stages: e.stages,
    };
  });
}
