import { parseTestId } from "../../../pipeline/test-results/test-ids.ts";
import type { Finding, TaskView, UnreadTestView } from "./types.ts";

/**
 * What the audit could not read. These findings never count against a task: they say where the
 * audit saw less than it should, so that a reader weighs its silence.
 */

/** The task's test sources came from the test patch alone, and why. */
export function noRepository(view: TaskView): Finding[] {
  if (view.tree.kind !== "test_patch" || !view.tree.unavailable) return [];
  return [{ subject: view.task.id, detail: `test sources read from the test patch only: ${view.tree.unavailable}`, evidence: [] }];
}

/** A test whose source could not be read: said so, and never judged. */
export function sourceNotFound(view: UnreadTestView): Finding[] {
  if (view.test.located) return [];
  const where = parseTestId(view.test.id)
    ? view.tree.kind === "repository"
      ? "the repository at the base with the test patch applied"
      : "the test patch"
    : undefined;
  return [{ subject: view.test.id, detail: where ? `its source is not in ${where}` : "its id names no Python test function", evidence: [] }];
}
