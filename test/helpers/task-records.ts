import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import { Task } from "../../pipeline/schemas/task.ts";
import { parentDir } from "../../stages/split/split.ts";

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

/** A task id's number, for names derived from it. */
function numberOf(id: string): string {
  return id.split("-").at(-1)!;
}
