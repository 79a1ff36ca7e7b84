import type { FileHunks } from "../../../pipeline/changes/hunks.ts";
import type { Request } from "../../../pipeline/schemas/task.ts";
import { changedEvidence, mentions, testSource } from "./evidence.ts";
import type { LocatedTest } from "./locate.ts";

/**
 * Linkage (SPEC §2.5): which requests justify a fail-to-pass test. A request justifies a test it
 * declares (a benchmark-authored stage names the tests its own test patch adds), or one whose
 * subject it names (if the test calls public code) and of whose checks it mentions some: a
 * literal, a keyword, an exception, an attribute.
 */

export interface TestLink {
  stages: number[];
  evidence: { stage: number; token: string }[];
  /** What the test checks that a request must mention to justify it. */
  wanted: string[];
}

/** The declaration of `test` in a request, as evidence: the reviewed file that states it. */
function declaration(request: Request, test: string): string | undefined {
  if (!request.tests?.includes(test)) return undefined;
  const file = request.provenance.sources.find((s) => s.kind === "authored" && s.file)?.file;
  return file ? `declared in ${file}` : "declared by the request";
}

/** The tokens of what a located test checks that `request` mentions, if it justifies the test. */
function mentionedBy(request: Request, evidence: { subject: string[]; behaviour: string[] }): string[] | undefined {
  const subjects = evidence.subject.filter((t) => mentions(request.text, t));
  const behaviours = evidence.behaviour.filter((t) => mentions(request.text, t));
  const subjectOk = evidence.subject.length === 0 || subjects.length > 0;
  const behaviourOk = evidence.behaviour.length === 0 ? subjects.length > 0 : behaviours.length > 0;
  return subjectOk && behaviourOk ? [...subjects, ...behaviours] : undefined;
}

/** What the located test checks: for a test the patch only changed, what the change added. */
function evidenceOfTest(located: LocatedTest, testPatch: FileHunks[]) {
  const defAt = located.lines.indexOf(located.defLine);
  const ordered = [...located.lines.slice(defAt), ...located.lines.slice(0, defAt)];
  const fromPatch = testSource(testPatch, located.file, located.name);
  const added = located.lines
    .filter((l) => l.added)
    .map((l) => l.text)
    .join("\n");
  return changedEvidence({ source: ordered.map((l) => l.text).join("\n"), added, removed: fromPatch?.removed ?? "" }, located.name);
}

/** The stages that justify a test, with their evidence; a test whose source was not read is linked by declarations alone. */
export function linkTest(test: string, located: LocatedTest | undefined, requests: Request[], testPatch: FileHunks[]): TestLink {
  const evidence = located ? evidenceOfTest(located, testPatch) : undefined;
  const found: TestLink["evidence"] = [];
  const stages: number[] = [];
  for (const request of requests) {
    const declared = declaration(request, test);
    const tokens = evidence ? mentionedBy(request, evidence) : undefined;
    if (declared === undefined && tokens === undefined) continue;
    stages.push(request.stage);
    if (declared !== undefined) found.push({ stage: request.stage, token: declared });
    for (const token of tokens ?? []) found.push({ stage: request.stage, token });
  }
  return { stages, evidence: found, wanted: evidence ? [...evidence.subject, ...evidence.behaviour] : [] };
}
