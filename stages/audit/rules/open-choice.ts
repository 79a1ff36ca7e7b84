import { nearestBinding, squashed } from "../readers/python-text.ts";
import type { SourceLine } from "../readers/source-tree.ts";
import type { Finding, TestView } from "./types.ts";

/**
 * A request that leaves the outcome open and a test that settles it. SWE-bench Verified's
 * annotators score a verifier unfair when "the issue suggests two solutions and the tests check
 * one" (sympy-13043: "it should be sorted somehow, or returning a set"; sympy-16503: "I'm not sure
 * if the x should be lower or if the +3 should be higher"): a reasonable solution takes the other
 * branch and fails. The request's side is a sentence of its prose that hedges or offers
 * alternatives; the test's side is an assertion of an outcome (an expected value, an exception, a
 * warning) that no request states.
 */

/**
 * Values any solution produces alike: saying them pins nothing. A count or collection of the
 * test's own objects (`len(conflicting_objects)`, `sorted(names)`) is what the test set up, not an
 * outcome a solution chooses.
 */
const UNREMARKABLE = /^(?:True|False|None|-?\d+(?:\.\d+)?|\[\]|\(\)|\{\}|""|''|[A-Za-z_]\w*|(?:len|list|set|tuple|sorted|dict)\(\s*[A-Za-z_][\w.]*\s*\))$/;

/** The outcome an added assertion line pins: what it compares with, or the exception or warning it expects. */
export function pinnedOutcome(text: string): string | undefined {
  const line = text.trim();
  const compared =
    /^assert\s+.+?\s*==\s*(.+?)\s*(?:,\s*["'].*)?\\?$/.exec(line)?.[1] ??
    /^self\.assert(?:Equal|Equals|HTMLEqual|JSONEqual|XMLEqual|QuerysetEqual|CountEqual|ItemsEqual)\s*\(.+?,\s*(.+?)\)?\s*$/.exec(line)?.[1];
  if (compared !== undefined) {
    const value = compared
      .replace(/\s+#.*$/, "")
      .replace(/[,\\]$/, "")
      .trim();
    return value && !UNREMARKABLE.test(value) ? value : undefined;
  }
  // Text the output must contain: `assertIn("...", out)`, `assert "..." in out`.
  const contained = /^self\.assert(?:In|Contains)\s*\(\s*([rbuf]?(["']).+?\2)\s*,/.exec(line)?.[1] ?? /^assert\s+([rbuf]?(["']).+?\2)\s+in\s+/.exec(line)?.[1];
  if (contained !== undefined && contained.length >= 6) return contained;
  return /\b(?:raises|assertRaises\w*|assert_raises\w*|assert_raise_message|warns|assertWarns\w*|assert_warns\w*)\(\s*([A-Z]\w*(?:\.\w+)*)/.exec(line)?.[1];
}

/** Brackets a text opens and does not close (negative when it closes more). */
const bracketDepth = (text: string) => (text.match(/[[({]/g)?.length ?? 0) - (text.match(/[\])}]/g)?.length ?? 0);

/**
 * A string literal the test patch added as an argument of an assertion that opened on an earlier
 * line (`self.assertEqual(\n    render(...),\n    "<a><br></a>",\n)`): what that call checks.
 */
function literalArgument(lines: SourceLine[], index: number): string | undefined {
  const literal = /^\s*([rbuf]?(["']).*\2)\s*[,)]?\s*$/.exec(lines[index]!.text)?.[1];
  if (!literal || literal.length < 6) return undefined;
  let depth = 0;
  for (let i = index - 1; i >= 0 && i >= index - 8; i--) {
    const text = lines[i]!.text;
    depth += bracketDepth(text);
    if (depth > 0 && /(?:\bself\.assert\w*|^\s*assert\b)/.test(text)) return literal;
    if (/^\s*(?:def|class)\s/.test(text)) return undefined;
  }
  return undefined;
}

/** A value that opens a bracket on its line, read on until the bracket closes (at most 40 lines). */
function wholeValue(value: string, lines: SourceLine[], index: number): string {
  let text = value;
  for (let i = index + 1; bracketDepth(text) > 0 && i < lines.length && i <= index + 40; i++) text += `\n${lines[i]!.text.trim()}`;
  return text;
}

/** An outcome a test pins, and the line that gave it when an assertion names it through a variable. */
interface Pinned {
  value: string;
  givenAt?: SourceLine;
}

/**
 * The value the test's own added lines last gave `name` above line `index`: an assignment, or, for
 * a loop variable (`for v, label in zip(X, labels)`), the literal the loop runs over.
 */
function assignedValue(lines: SourceLine[], index: number, name: string, followLoops: boolean): Pinned | undefined {
  const given = nearestBinding(lines, index, name, true);
  if (!given) return undefined;
  if (given.kind === "assignment") {
    const value = given.value.trim();
    if (!lines[given.at]!.added || UNREMARKABLE.test(value)) return undefined;
    return { value: wholeValue(value, lines, given.at), givenAt: lines[given.at]! };
  }
  if (!followLoops) return undefined;
  for (const source of given.value.match(/[A-Za-z_]\w*/g) ?? []) {
    const pinned = source === name ? undefined : assignedValue(lines, given.at, source, false);
    if (pinned && /^[[({]/.test(pinned.value)) return pinned;
  }
  return undefined;
}

/**
 * What a test line pins, in full: a bare name stands for the value the test's own added lines
 * last gave it (`expected = "..."; assert f() == expected`), whether or not the assertion itself
 * is new; any other assertion counts where the test patch added it.
 */
function outcomeAt(lines: SourceLine[], index: number): Pinned | undefined {
  const line = lines[index]!;
  const name =
    /^\s*assert\s+.+?\s*==\s*([A-Za-z_]\w*)\s*$/.exec(line.text)?.[1] ?? /^\s*self\.assert\w*Equal\s*\(.+?,\s*([A-Za-z_]\w*)\s*\)\s*$/.exec(line.text)?.[1];
  if (name && !/^(?:True|False|None)$/.test(name)) return assignedValue(lines, index, name, true);
  if (!line.added) return undefined;
  const outcome = pinnedOutcome(line.text);
  const value = outcome === undefined ? literalArgument(lines, index) : wholeValue(outcome, lines, index);
  return value === undefined ? undefined : { value };
}

/**
 * An outcome the test pinned before the fix too: an assertion the patch only moved or re-indented
 * (the same line among its removed ones), or a case of a list it rewrote (django-13230's
 * `assertChildNodes` list, spread over lines to add `'comments'`, still holds `'title'`). A
 * solution that keeps what the base did passes it.
 */
function heldBefore(text: string, value: string, removed: { text: string; lines: Set<string> }): boolean {
  const line = text.trim();
  return removed.lines.has(line) || (pinnedOutcome(line) === undefined && removed.text.includes(value));
}

/**
 * The flag for one test: the requests leave the outcome open (the first open sentence is the
 * evidence) and one of the test's added lines pins an outcome no request states.
 */
export function openChoice(view: TestView): Finding[] {
  const { open, requestText, testPatchRemoved } = view;
  const { id: test, located } = view.test;
  const { file, lines } = located;
  if (!open.length) return [];
  const removed = { text: testPatchRemoved, lines: new Set(testPatchRemoved.split("\n").map((l) => l.trim())) };
  const shown = squashed(requestText);
  // A sentence that lists acceptable outcomes is the evidence where there is one.
  const listing = open.find((o) => o.alternatives);
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    if (line.text.trim().startsWith("#")) continue;
    // An unchanged assertion pins what the patch changed when it compares with a name the patch assigned anew.
    const pinned = outcomeAt(lines, index);
    if (!pinned) continue;
    if (!pinned.givenAt && heldBefore(line.text, pinned.value, removed)) continue;
    const stated = shown.includes(squashed(pinned.value));
    if (stated && !listing) continue;
    const sentence = listing ?? open[0]!;
    const flat = pinned.value.replace(/\s*\n\s*/g, " ");
    const short = flat.length > 60 ? `${flat.slice(0, 57)}...` : flat;
    const detail = `the request leaves the outcome open ("${sentence.marker}") and the test pins \`${short}\`, ${stated ? "one outcome where the request would accept several" : "which no request states"}`;
    return [
      {
        subject: test,
        detail,
        evidence: [
          { file: `request ${sentence.stage}`, line: sentence.line, text: sentence.text },
          ...(pinned.givenAt ? [{ file, line: pinned.givenAt.n, text: pinned.givenAt.text.trim() }] : []),
          { file, line: line.n, text: line.text.trim() },
        ],
      },
    ];
  }
  return [];
}
