import { type FileHunks, linesOn } from "../../../pipeline/changes/hunks.ts";
import { parseTestId } from "../../../pipeline/test-results/test-ids.ts";
import { regexText, STRING_LITERAL } from "../readers/python-text.ts";
import type { SourceLine } from "../readers/source-tree.ts";
import { requestsName } from "../readers/reference.ts";
import type { Finding, TaskView, TestView } from "./types.ts";

/**
 * Tests whose scope is not the requests': behaviour of code no request mentions, cases beside the
 * one a request shows, and tests that decide though the patch never wrote them for the issue.
 */

/**
 * Behaviour of functions no request mentions: the test exercises what the fix changed, but only
 * where the requests are silent. sympy's `_eval_is_x` backs the `is_x` property; `_name` backs `name`.
 */
export function unrequestedBehaviour(view: TestView): Finding[] {
  const facts = view.facts!;
  const { added } = view;
  const { id, located } = view.test;
  const changedBy = new Map<string, string>();
  for (const fn of facts.changedFunctions.keys()) {
    changedBy.set(fn, fn);
    const bare = fn.replace(/^_eval_/, "").replace(/^_+/, "");
    if (bare.length > 2) changedBy.set(bare, fn);
  }
  const used = new Map<string, SourceLine>();
  for (const line of added) {
    // A call named in a string (a docstring's "Test debug(True, False).") is no call the test makes.
    const code = line.text.replace(STRING_LITERAL, '""');
    for (const m of code.matchAll(/(?:\.|\b)([A-Za-z_]\w*)\s*(\()?/g)) {
      const name = m[1]!;
      if ((m[2] || code[m.index] === ".") && changedBy.has(name) && !used.has(name)) used.set(name, line);
    }
  }
  const names = [...used.keys()];
  // A request that points at the file a function is in (its path or its module's name) asks about
  // that code; a traceback's frames only say where a failure passed.
  const prose = view.requestText
    .split("\n")
    .filter((l) => !/^\s*File "/.test(l))
    .join("\n");
  const pointsAt = (fn: string) => {
    const path = facts.changedFunctions.get(fn) ?? "";
    const module = path.split("/").at(-1)!.replace(/\.py$/, "");
    return (path !== "" && prose.includes(path)) || (module.length >= 5 && module !== "__init__" && requestsName(prose, `${module}.py`));
  };
  const mentioned = names.filter((n) => requestsName(view.requestText, n) || requestsName(view.requestText, changedBy.get(n)!) || pointsAt(changedBy.get(n)!));
  if (!names.length || mentioned.length) return [];
  const detail = `checks \`${names.join("`, `")}\`, which the reference fix changes and no request mentions`;
  const line = used.get(names[0]!)!;
  return [{ subject: id, detail, evidence: [{ file: located.file, line: line.n, text: line.text.trim() }] }];
}

/** A line that is one element of a list of cases: a whole string literal and its comma. */
const CASE_ELEMENT = /^\s*[rbuRBU]?(["'])((?:\\.|(?!\1).){4,})\1\s*,\s*(?:#.*)?$/;

/**
 * Cases a test adds beside the one the request shows (django-15202: the issue's `'////]@N.AN'`
 * and an empty hostname, `'#@A.bO'`, no request mentions): a fix for the case the issue reports
 * need not handle the other. Cases the test held before (the patch's removed lines) are not new.
 */
export function unshownCase(view: TestView): Finding[] {
  const { added } = view;
  const { id, located } = view.test;
  const bare = (text: string) => text.replace(/\s+/g, "");
  const shownText = bare(view.requestText);
  const cases = added.flatMap((line) => {
    const m = CASE_ELEMENT.exec(line.text);
    return m && !view.testPatchRemoved.includes(m[2]!) ? [{ line, value: m[2]! }] : [];
  });
  // A bare name the request happens to use (pydicom-1458's `Columns`, an attribute) is no input it shows.
  const shown = cases.find((c) => !/^\w+$/.test(c.value) && (shownText.includes(bare(c.value)) || shownText.includes(bare(regexText(c.value)))));
  const other = cases.find((c) => !shownText.includes(bare(c.value)) && !shownText.includes(bare(regexText(c.value))));
  if (!shown || !other) return [];
  const detail = `adds the case "${other.value}" beside the one the request shows ("${shown.value}"); no request mentions it`;
  return [{ subject: id, detail, evidence: [{ file: located.file, line: other.line.n, text: other.line.text.trim() }] }];
}

/** The test functions a test patch adds (an added `def test…` line). */
function addedTestNames(testDiff: FileHunks[]): string[] {
  const def = /^[ \t]*(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\(/;
  return [...new Set(linesOn(testDiff, "added").flatMap((line) => def.exec(line)?.[1] ?? []))];
}

/**
 * Every F2P test the patch leaves as it was, while it adds tests of its own that are not F2P
 * (requests-2674: twelve network tests decide, the one test written for the issue does not):
 * the tests that decide fail before the fix for a reason the issue never states. Said only
 * when every F2P test was read and none is a parametrized case (a case may be new where its
 * function is not).
 */
export function unchangedTest(view: TaskView): Finding[] {
  const located = view.tests.flatMap((t) => (t.located && !t.contract ? [{ test: t.id, at: t.located }] : []));
  if (!located.length || located.length !== view.task.verifier.fail_to_pass.length) return [];
  if (located.some(({ test, at }) => parseTestId(test)?.caseId !== undefined || at.lines.some((l) => l.added))) return [];
  const deciding = new Set(located.map(({ at }) => at.name));
  const own = addedTestNames(view.testDiff).filter((n) => !deciding.has(n));
  if (!own.length) return [];
  return located.map(({ test, at }) => ({
    subject: test,
    detail: `the test patch neither adds nor changes it, and the tests it adds (\`${own.join("`, `")}\`) are not fail-to-pass: it fails before the fix for a reason no request states`,
    evidence: [{ file: at.file, line: at.defLine.n, text: at.defLine.text.trim() }],
  }));
}
