import { GitError } from "../git.ts";
import type { FixCommit } from "../schemas/answers.ts";
import type { HeldoutTask } from "../schemas/heldout.ts";
import { answerFacts, type AnswerFacts } from "./answer.ts";
import { findFixCommit, PullRequestMerges } from "./fix-commit.ts";
import { TreeReader } from "./tree-reader.ts";

type Git = (args: string[]) => Promise<string>;

/**
 * The answers of one repository's tasks, read once from its mirror: each task's fix commit and
 * the facts its checkouts are searched for. Shared by the answers stage, select and validate,
 * which each read the repository themselves (validate never takes another stage's word for it).
 */
export class RepositoryAnswers {
  readonly reader: TreeReader;
  private merges?: Promise<PullRequestMerges>;
  private readonly facts = new Map<string, Promise<{ fix: FixCommit; facts: AnswerFacts }>>();

  constructor(readonly git: Git) {
    this.reader = new TreeReader(git);
  }

  /** A task's fix commit and answer facts, from its held-out assets (computed once). */
  of(task: HeldoutTask): Promise<{ fix: FixCommit; facts: AnswerFacts }> {
    let found = this.facts.get(task.task_id);
    if (!found) {
      found = this.read(task);
      this.facts.set(task.task_id, found);
    }
    return found;
  }

  /** The commit before a task's fix (its first parent): what select's roll_back sets files back to; undefined where history holds no fix, or the fix has no parent. */
  async beforeFix(task: HeldoutTask): Promise<string | undefined> {
    const { facts } = await this.of(task);
    if (!facts.fix) return undefined;
    try {
      return (await this.git(["rev-parse", "--verify", `${facts.fix}^1^{commit}`])).trim();
    } catch (error) {
      // A root commit has no parent: nothing to set back to.
      if (error instanceof GitError && error.code === 128) return undefined;
      throw error;
    }
  }

  private async read(task: HeldoutTask): Promise<{ fix: FixCommit; facts: AnswerFacts }> {
    this.merges ??= PullRequestMerges.read(this.git);
    const upstream = await answerFacts(this.reader, {
      taskId: task.task_id,
      base: task.base_commit,
      fix: null,
      implementationPatch: task.upstream.patch,
      testPatch: "",
    });
    const fix = await findFixCommit(this.reader, this.git, await this.merges, {
      base: task.base_commit,
      pullNumber: task.upstream.pull_number,
      mergeCommit: task.upstream.merge_commit,
      upstream: upstream.hunks,
    });
    const facts = await answerFacts(this.reader, {
      taskId: task.task_id,
      base: task.base_commit,
      fix: fix.commit,
      implementationPatch: task.implementation_patch,
      testPatch: task.test_patch,
    });
    return { fix, facts };
  }
}
