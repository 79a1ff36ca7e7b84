import type { AnswerEvidence } from "../schemas/answers.ts";
import { containsBlock, type AnswerFacts } from "./answer.ts";
import type { TreeReader } from "./tree-reader.ts";

/** At most this many pieces of evidence of each kind are kept: one is proof, a few show its extent. */
const EVIDENCE_PER_KIND = 3;

/**
 * Where a checkout's files (the tree of `commit`) hold a task's answer (SPEC §2.7):
 * - by history: `commit` descends from the task's fix, unless the checkout was derived with that
 *   task's upstream reference reversed out of it (`reversed`), where only its content decides;
 * - by content: a hunk of the reference is there verbatim with its context, or a name only the
 *   reference defines occurs in it.
 * No evidence: the checkout does not hold it.
 */
export async function answerEvidence(reader: TreeReader, answer: AnswerFacts, checkout: { commit: string; reversed: boolean }): Promise<AnswerEvidence[]> {
  const evidence: AnswerEvidence[] = [];
  if (answer.fix && !checkout.reversed && (await reader.descends(checkout.commit, answer.fix))) evidence.push({ by: "history", commit: answer.fix });
  let hunks = 0;
  for (const hunk of answer.hunks) {
    if (hunks >= EVIDENCE_PER_KIND) break;
    const text = await reader.file(checkout.commit, hunk.path);
    if (text !== undefined && containsBlock(text, hunk.lines)) {
      evidence.push({ by: "hunk", path: hunk.path, line: hunk.line, part: hunk.part });
      hunks++;
    }
  }
  if (answer.newNames.length) {
    const where = await reader.whereNames(checkout.commit, answer.newNames);
    const found = answer.newNames.filter((n) => where.get(n) !== undefined).slice(0, EVIDENCE_PER_KIND);
    for (const name of found) evidence.push({ by: "name", name, path: where.get(name)! });
  }
  return evidence;
}

/** One line for a person: what the evidence is, without the answer's text. */
export function describeEvidence(evidence: AnswerEvidence): string {
  switch (evidence.by) {
    case "history":
      return `its base descends from the fix ${evidence.commit.slice(0, 12)}`;
    case "hunk":
      return `the ${evidence.part === "tests" ? "held-out tests'" : "reference's"} hunk at ${evidence.path}:${evidence.line} is there verbatim`;
    case "name":
      return `${evidence.name}, which only the reference defines, is in ${evidence.path}`;
  }
}
