import { wordIn } from "../readers/python-text.ts";
import { removedFromTest } from "../readers/evidence.ts";
import { REQUIREMENT } from "../readers/requests.ts";
import type { Finding, RequestView, TaskView, TestView } from "./types.ts";

/**
 * Whether tests and requests name each other (SPEC §2.5): a test no request mentions, a request
 * no test checks, a request that asks for nothing; and the two readings of an unlinked test that
 * say something of fairness: beside linked tests it checks more than the requests ask, and where
 * the patch rewrote what it expected the fix changes behaviour no request asks about.
 */

/** The test's `def` line, as evidence. */
function defLineOf(view: TestView) {
  const { file, defLine } = view.test.located;
  return { file, line: defLine.n, text: defLine.text.trim() };
}

/** An F2P test no stage justifies, its def line as the evidence. */
export function unjustifiedTest(view: TestView): Finding[] {
  const { link, id } = view.test;
  if (link.stages.length) return [];
  const { wanted } = view.test;
  return [
    {
      subject: id,
      detail: `no request mentions what it checks (${wanted.map((t) => JSON.stringify(t)).join(", ") || "nothing distinctive"})`,
      evidence: [defLineOf(view)],
    },
  ];
}

const ASSERTION = /^\s*(?:assert\b|self\.assert\w*\s*\(|(?:with\s+)?(?:pytest\.)?(?:raises|warns)\s*\(|assert_\w+\s*\()/;

/**
 * An F2P test no request links to whose existing expectation the test patch changes: the fix
 * changes behaviour a project's test pinned and no request asks about, so a fix that keeps it
 * (sympy-18057's `var` result still equal to its names) fails. Not where a request names a word
 * the change swaps in or out (pvlib-1154's issue says NaN, which the change turns into 0). Evidence: the assertion as it now
 * reads; the detail quotes the one removed.
 */
export function changedExpectation(view: TestView): Finding[] {
  const { id, located, link } = view.test;
  if (link.stages.length) return [];
  const before = removedFromTest(view.testDiff, located.file, located.name).find((l) => ASSERTION.test(l));
  if (!before) return [];
  // The assertion that took its place: the first the patch added to the test.
  const line = located.lines.find((l) => l.added && ASSERTION.test(l.text)) ?? located.lines.find((l) => l.added) ?? located.defLine;
  // Words and values (django-10914's `0o644`, which its issue's title names), three characters or more.
  const words = (text: string) => new Set(text.toLowerCase().match(/[a-z0-9_]{3,}/g) ?? []);
  const was = words(before);
  const now = words(line.text);
  const swapped = [...[...was].filter((w) => !now.has(w)), ...[...now].filter((w) => !was.has(w))];
  const asked = view.requestText.toLowerCase();
  if (swapped.some((w) => wordIn(w).test(asked))) return [];
  const quoted = before.trim().length > 100 ? `${before.trim().slice(0, 97)}...` : before.trim();
  return [
    {
      subject: id,
      detail: `changes what the test expected before the fix (it read \`${quoted}\`) where no request asks about what it checks`,
      evidence: [{ file: located.file, line: line.n, text: line.text.trim() }],
    },
  ];
}

/**
 * Tests that check more than the requests ask: where some F2P test checks what an upstream
 * request asks in its own words, another that no request mentions checks what "the issue does not
 * ask", in the annotators' words (django-12915: two tests check the `get_response_async` the
 * issue asks for, a third a whole static file response). Where no test links to any request, the
 * requests' words are not their tests' at all, and an unlinked test says nothing of fairness. A
 * benchmark-authored stage's declared tests are linked by their declaration, not by the issue's
 * words: they show nothing of how the issue speaks, and are never the unlinked test (the stage's
 * own checks read them). Evidence: the unlinked test's `def`.
 */
export function unrequestedTest(view: TaskView): Finding[] {
  const declared = new Set(view.task.requests.flatMap((r) => r.tests ?? []));
  const upstream = new Set(view.task.requests.filter((r) => r.tests === undefined).map((r) => r.stage));
  const linked = view.tests.find((t) => !declared.has(t.id) && t.link.stages.some((s) => upstream.has(s)));
  if (!linked) return [];
  return view.tests.flatMap((t) =>
    t.located && !t.contract && !declared.has(t.id) && !t.link.stages.length
      ? [
          {
            subject: t.id,
            detail: `checks what no request asks, while \`${linked.id}\` checks what a request does`,
            evidence: [{ file: t.located.file, line: t.located.defLine.n, text: t.located.defLine.text.trim() }],
          },
        ]
      : [],
  );
}

/** A request that states no requested behaviour at all. */
export function notSubstantive(view: RequestView): Finding[] {
  if (REQUIREMENT.test(view.request.text)) return [];
  return [{ subject: `stage ${view.request.stage}`, detail: "states no requested behaviour", evidence: [] }];
}

/** A request that asks for something no fail-to-pass test is linked to. */
export function unverifiedStage(view: RequestView): Finding[] {
  if (!REQUIREMENT.test(view.request.text) || view.verified.has(view.request.stage)) return [];
  return [{ subject: `stage ${view.request.stage}`, detail: "no fail-to-pass test checks what it asks", evidence: [] }];
}
