import { squashed, wordIn } from "../readers/python-text.ts";
import type { Finding, TaskView } from "./types.ts";

/**
 * A request that names two cases of code joined by "or" — django-16041's "form_kwargs =
 * {'empty_permitted':True} or form_kwargs = {'empty_permitted':False}" both crash — and tests
 * that check one of them. SWE-bench Verified's annotators score such tests unfair ("the testcase
 * here is only checking the case when `empty_permitted` is False"): they decide on a case the
 * request does not single out, and a solution that mends only that case passes.
 */

/** Code as people quote it in prose: in backticks, a call, a mapping, or an assignment of one. */
const CODE = String.raw`(\x60[^\x60\n]+\x60|[\w.]+\s*=\s*\{[^}\n]*\}|\{[^}\n]*\}|[\w.]+\([^)\n]*\))`;
const NAMED_PAIR = new RegExp(String.raw`${CODE}\s*(?:#\s*)?or\s+${CODE}`, "g");

/** Where a squashed case stands in squashed test text as a whole, not as part of a longer name. */
const holds = (text: string, squashedCase: string) => wordIn(squashedCase).test(text);

interface NamedPair {
  stage: number;
  line: number;
  text: string;
  /** Each case as the request quotes it, and squashed for matching. */
  cases: [{ quoted: string; flat: string }, { quoted: string; flat: string }];
}

function namedPairs(requests: { stage: number; text: string }[]): NamedPair[] {
  const out: NamedPair[] = [];
  for (const request of requests) {
    request.text.split(/\r?\n/).forEach((raw, index) => {
      for (const m of raw.matchAll(NAMED_PAIR)) {
        const quote = (code: string) => ({ quoted: code.replace(/^`|`$/g, "").trim(), flat: squashed(code) });
        const cases: NamedPair["cases"] = [quote(m[1]!), quote(m[2]!)];
        // A case of two letters matches too much to say anything (`A` or `B`); a bare name is a
        // kind of thing, not a case (`list` or `tuple` a parameter accepts: a test of one is no narrower).
        if (cases[0].flat === cases[1].flat || cases.some((c) => c.flat.replace(/\W/g, "").length < 3 || /^[A-Za-z_][\w.]*$/.test(c.flat))) continue;
        out.push({ stage: request.stage, line: index + 1, text: raw.trim(), cases });
      }
    });
  }
  return out;
}

/**
 * One flag per pair of cases a request names where the fail-to-pass tests' lines hold one case
 * and not the other; the evidence is the request's line and the test line that holds the case.
 * Said only when every fail-to-pass test was read: an unread test may hold the other case.
 */
export function untestedAlternative(view: TaskView): Finding[] {
  // The tests an auditor's contract does not cover, each read from its source.
  const located = view.tests.flatMap((t) => (t.located && !t.contract ? [{ test: t.id, at: t.located }] : []));
  if (located.length !== view.task.verifier.fail_to_pass.length || !located.length) return [];
  const lines = located.flatMap(({ test, at }) => at.lines.map((line) => ({ test, file: at.file, line, flat: squashed(line.text) })));
  const all = lines.map((l) => l.flat).join("\n");
  const flags: Finding[] = [];
  const said = new Set<string>();
  for (const pair of namedPairs(view.task.requests)) {
    const held = pair.cases.filter((c) => holds(all, c.flat));
    if (held.length !== 1) continue;
    // The same two cases named again (in prose, then in the example's comment) are one finding.
    const key = pair.cases
      .map((c) => c.flat)
      .sort()
      .join("\n");
    if (said.has(key)) continue;
    said.add(key);
    const checked = held[0]!;
    const at = lines.find((l) => holds(l.flat, checked.flat))!;
    flags.push({
      subject: at.test,
      detail: `the request names \`${pair.cases[0].quoted}\` or \`${pair.cases[1].quoted}\`; the fail-to-pass tests check \`${checked.quoted}\` only`,
      evidence: [
        { file: `request ${pair.stage}`, line: pair.line, text: pair.text },
        { file: at.file, line: at.line.n, text: at.line.text.trim() },
      ],
    });
  }
  return flags;
}
