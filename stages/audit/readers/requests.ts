/**
 * Reading what requests say: whether one states a requested behaviour at all, and the sentences of
 * their prose that leave the outcome open — a hedge, a choice between outcomes, a question of how
 * or whether — with where a person can find them.
 */

/**
 * Words of a request that asks for a behaviour; a request without any asks for nothing. Verbs in
 * the third person count too: a stated behaviour ("`f(1)` returns 2", "it takes a `cap` keyword",
 * "`x` needs a `minimum`") asks as much as an imperative does.
 */
export const REQUIREMENT =
  /\b(should|must|please|(add|raise|return|accept|rename|remove|support|need|make|declare|handle|reject|keep|say|explain|document|take|give)s?)\b/i;

/** A sentence of a request's prose that leaves the outcome open, where a person can find it. */
export interface OpenSentence {
  stage: number;
  /** The line of the request's text it starts on (1-based). */
  line: number;
  text: string;
  /** What marks it as open: the hedge or the alternative. */
  marker: string;
  /** It lists outcomes its author would accept: a test that pins one of them settles the choice even where the request shows it. */
  alternatives: boolean;
}

/**
 * Hedges and alternatives, as people write them in issues. An "or" counts only where it joins
 * two courses the code could take — after `whether`, or after `should`/`would`/`could` as a clause
 * of its own (", or …", "or rather", "or just"): "list or set or tuple" enumerates, "if it is
 * passed, or if it is …" states conditions, "a string or a bool should be rejected" and "would
 * expect it to decode Float or Double Float data" name what a rule covers, while "should be
 * sorted somehow, or returning a set" offers a choice.
 */
const HEDGES: RegExp[] = [
  /\b(?:not sure|unsure|no idea|not clear|unclear)\b/i,
  /\b(?:maybe|perhaps|probably|possibly|alternatively)\b/i,
  /\bI (?:guess|think|suppose|wonder)\b/i,
  /\beither\b[^.?!]*\bor\b/i,
  // "could" as a suggestion ("it could print", "we could configure"), not an ability or a request
  // ("I could reproduce", "could not catch", "could you").
  /(?<!\bI\s)\b(?:could|might)\b(?!\s+(?:not|you|someone|anyone)\b|n't)/i,
  /\bwould be (?:nice|better|great|good|awesome|preferable|more)\b/i,
  /\bwhether\b[^.?!]*\bor\b/i,
  /\b(?:should|would|could)\b[^.?!]*(?:,\s*or\b|\bor\s+(?:rather|instead|just|maybe|perhaps|should|would|could|to)\b)/i,
  // A request that asks whether or how instead of saying what should happen ("Should we make the
  // MMs more like clusterers?", "How can I update a colorbar…?", "Is there a way to do this?").
  /^\s*(?:how (?:can|do|should|would) (?:I|we|one)|should (?:we|it|this|they|the)|is (?:it|there) (?:possible|a way)|would it (?:be|make))\b[^?]*\?/i,
];

/**
 * A hedge about where the fault lies or how to mend it ("I think there's a missing definition of
 * __rand__ somewhere", "what I think is a bug", "something like this might be a solution:") leaves
 * no outcome open: the author is sure what should happen and unsure only of the code.
 */
const ABOUT_CAUSE_OR_FIX =
  /\b(?:a|the|possible|likely|real|actual|root)\s+(?:bug|cause|culprit|solution|fix|workaround|regression|typo)\b|\b(?:missing|wrong)\s+(?:definition|import|check|call|argument)\b|\b(?:bug|problem|issue) (?:is|lies|comes) (?:in|from|with)\b/i;

/**
 * Outcomes an author lists as acceptable ("I would expect the unchanged original expression back,
 * an expression in terms of base units, or an error"; "either return None or raise"): each is
 * shown in the request, and a test that pins one still fails a solution that takes another.
 */
const ACCEPTED_ALTERNATIVES = /\b(?:expect(?:ed)?|accept(?:able)?|prefer(?:able)?|be (?:fine|ok(?:ay)?))\b[^.?!]*,\s*or\b|\beither\b[^.?!]*\bor\b/i;

/** Lines of a request that are code, output or a traceback rather than what its author says. */
function isProse(line: string, inFence: boolean): boolean {
  if (inFence) return false;
  return !/^(?: {4}|\t|>>>|\.\.\. |\s*File "|\s*Traceback |\s*\w+(?:Error|Exception|Warning):)/.test(line) && line.trim() !== "";
}

/** The sentences of the requests' prose that hedge or offer alternatives, each with its stage and line. */
export function openSentences(requests: { stage: number; text: string }[]): OpenSentence[] {
  const out: OpenSentence[] = [];
  for (const request of requests) {
    let inFence = false;
    request.text.split(/\r?\n/).forEach((raw, index) => {
      if (/^\s*(?:```|~~~)/.test(raw)) {
        inFence = !inFence;
        return;
      }
      if (!isProse(raw, inFence)) return;
      // Inline code is what the author quotes, not how they hedge: `a or b` in backticks is code.
      const prose = raw.replace(/`[^`]*`/g, "`…`");
      for (const sentence of prose.split(/(?<=[.?!])\s+/)) {
        const hit = HEDGES.map((h) => h.exec(sentence)).find((m) => m);
        if (!hit || ABOUT_CAUSE_OR_FIX.test(sentence)) continue;
        out.push({ stage: request.stage, line: index + 1, text: raw.trim(), marker: hit[0], alternatives: ACCEPTED_ALTERNATIVES.test(sentence) });
        return;
      }
    });
  }
  return out;
}
