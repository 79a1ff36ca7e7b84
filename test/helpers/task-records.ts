import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import type { SelectedSession } from "../../pipeline/schemas/selection.ts";
import type { SessionSpec } from "../../pipeline/schemas/session.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { sessionSpec } from "../../stages/schedule/schedule.ts";
import { parentDir } from "../../stages/split/split.ts";
import { PATHS } from "./session-pool.ts";

/** What a synthetic task is made of: its id, repository, source files (C_t), number of requests and base. */
export interface TaskShape {
  id: string;
  repo: string;
  files: string[];
  stages?: number;
  base?: string;
}

const RECIPE = { python: "3.11", pip_requirements: ["pytest"] };

/** A task as the oracle passes it on (SPEC §1's t = (R_t, Q_t, V_t)), its D_t the parents of its C_t. */
export function taskRecord({ id, repo, files, stages = 2, base = "a".repeat(40) }: TaskShape): Task {
  const sourceFiles = [...files].sort();
  return Task.parse({
    id,
    snapshot: { repo, base_commit: base, environment: RECIPE },
    requests: Array.from({ length: stages }, (_, i) => ({
      stage: i + 1,
      text: `${id}: request ${i + 1}`,
      provenance: { sources: [{ kind: "issue", record_id: `${id}#${i + 1}`, author: "someone" }] },
    })),
    verifier: {
      test_patch: "",
      test_command: "python -m pytest",
      fail_to_pass: [`tests/test_${numberOf(id)}.py::test_new`],
      pass_to_pass: [`tests/test_${numberOf(id)}.py::test_old`],
    },
    source_files: sourceFiles,
    source_dirs: [...new Set(sourceFiles.map(parentDir))].sort(),
    focus_candidate: stages >= 2,
    curated: false,
  });
}

/** The held-out assets the oracle writes beside a task. */
export function heldoutRecord(task: Task): HeldoutTask {
  return HeldoutTask.parse({
    task_id: task.id,
    repo: task.snapshot.repo,
    base_commit: task.snapshot.base_commit,
    implementation_patch: `diff --git a/${task.source_files[0]} b/${task.source_files[0]}\n`,
    test_patch: "",
    fail_to_pass: task.verifier.fail_to_pass,
    pass_to_pass: task.verifier.pass_to_pass,
    test_command: task.verifier.test_command,
    environment: task.snapshot.environment,
    environment_as_of: null,
    upstream: { patch: "", pull_number: null, merge_commit: null },
  });
}

/**
 * A session's specification as schedule builds it over task records (its requests' texts, their
 * bases), for benchmark "benchmark" and seed "1"; the repository is the focus's.
 */
export function sessionOver(
  tasks: readonly Task[],
  session: Pick<SelectedSession, "focus" | "interruptions"> & Partial<Pick<SelectedSession, "locality" | "case_seed" | "derived_checkouts">>,
  checkoutPaths: string[] = PATHS,
): SessionSpec {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  return sessionSpec({
    session: { repo: byId.get(session.focus)!.snapshot.repo, locality: "far", case_seed: `case-${session.focus}`, ...session },
    benchmark: "benchmark",
    seed: "1",
    task: (id) => ({ stages: byId.get(id)!.requests.length, baseCommit: byId.get(id)!.snapshot.base_commit }),
    text: (slot) => (slot.finalization ? "Finish." : byId.get(slot.task)!.requests[slot.stage! - 1]!.text),
    checkoutPaths,
    budget: { per_request_seconds: 900, timeout_continuations: 3 },
  });
}

/** A task id's number, for names derived from it. */
function numberOf(id: string): string {
  return id.split("-").at(-1)!;
}
