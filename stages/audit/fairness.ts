import type { AuditFlagRecord } from "../../pipeline/schemas/audit.ts";
import type { LocatedTest } from "./locate.ts";
import { type OpenSentence, openChoiceFlag } from "./open-choice.ts";
import { firstString, nearestBinding, STRING_LITERAL, STRING_PREFIX, stringBodies, wordIn } from "./python-text.ts";
import type { SourceLine, SourceTree } from "./source-tree.ts";

/**
 * What makes a verifier unfair, in the terms SWE-bench Verified's annotators use for
 * `false_negative` (tests that reasonable solutions of the issue fail): the test needs a name
 * the reference fix invents, an exact message or output format, or behaviour no request mentions.
 * Each flag carries the test line that shows it.
 */

/** What the reference fix adds and removes, read from its diff (the removed side is the base). */
export interface ReferenceFacts {
  addedText: string;
  /** The string literals of the added lines run together: a message split over implicitly concatenated literals reads whole. */
  addedStrings: string;
  removedText: string;
  /** Public functions and classes the fix defines that it does not also remove (a move). */
  newDefinitions: Set<string>;
  /** Per function, parameters its new signature has and its old one lacked. */
  newParameters: Set<string>;
  /** String literals shaped like names or options (`"man_make_section_directory"`, `"--co"`) the fix adds. */
  newLiteralNames: Set<string>;
  /** Functions the fix changes (named in its hunk headers or defined in its lines), with the file each is in. */
  changedFunctions: Map<string, string>;
}

function definitions(text: string): Set<string> {
  return new Set([...text.matchAll(/^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)/gm)].map((m) => m[1]!));
}

function signatures(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const m of text.matchAll(/^\s*(?:async\s+)?def\s+(\w+)\s*\(([^)]*)\)/gm)) {
    const params = m[2]!
      .split(",")
      .map((p) => p.trim().split(/[:=]/)[0]!.replace(/^\*+/, "").trim())
      .filter((p) => p && p !== "self" && p !== "cls");
    out.set(m[1]!, new Set([...(out.get(m[1]!) ?? []), ...params]));
  }
  return out;
}

export function referenceFacts(patch: string): ReferenceFacts {
  const lines = patch.split("\n");
  const added = lines.filter((l) => l.startsWith("+") && !l.startsWith("+++")).map((l) => l.slice(1));
  const removed = lines.filter((l) => l.startsWith("-") && !l.startsWith("---")).map((l) => l.slice(1));
  const addedText = added.join("\n");
  const removedText = removed.join("\n");
  const removedDefs = definitions(removedText);
  const newDefinitions = new Set([...definitions(addedText)].filter((d) => !removedDefs.has(d) && !d.startsWith("_")));
  const before = signatures(removedText);
  const newParameters = new Set<string>();
  for (const [fn, params] of signatures(addedText)) {
    const old = before.get(fn);
    // A function that is new as a whole is a new definition; its parameters come with it.
    if (!old) continue;
    for (const p of params) if (!old.has(p) && !p.startsWith("_") && p.length > 1) newParameters.add(p);
  }
  const literals = (text: string) => new Set(stringBodies(text));
  const oldLiterals = literals(removedText);
  const newLiteralNames = new Set(
    [...literals(addedText)].filter((s) => ((/^[A-Za-z_][\w-]{2,}$/.test(s) && !s.startsWith("__")) || /^--?[A-Za-z][\w-]*$/.test(s)) && !oldLiterals.has(s)),
  );
  const changedFunctions = new Map<string, string>();
  let file = "";
  for (const l of lines) {
    const diff = /^diff --git a\/\S+ b\/(\S+)/.exec(l);
    if (diff) file = diff[1]!;
    const fn = /^@@.*@@\s*(?:async\s+)?def\s+(\w+)/.exec(l)?.[1] ?? /^[+ ]\s*(?:async\s+)?def\s+(\w+)/.exec(l)?.[1];
    if (fn && !fn.startsWith("__") && !fn.startsWith("test") && !changedFunctions.has(fn)) changedFunctions.set(fn, file);
  }
  const addedStrings = stringBodies(addedText).join("");
  return { addedText, addedStrings, removedText, newDefinitions, newParameters, newLiteralNames, changedFunctions };
}

/** Whether the requests' text mentions `name` as a word (an option's dashes count as part of it). */
export function requestsName(text: string, name: string): boolean {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(?<![\\w-])${escaped}(?![\\w-])`).test(text);
}

const squash = (text: string) => text.replace(/\s+/g, " ").trim().toLowerCase();

/** A regular expression's literal text (`match="Invalid \\(x\\)"` checks "Invalid (x)"). */
const unescape = (text: string) => text.replace(/\\(.)/g, "$1");

/** Pieces of a message between its placeholders (`%s`, `{}`, `{name}`, `%(name)s`) and regex wildcards. */
function messageFragments(message: string): string[] {
  return unescape(message)
    .split(/%\(\w+\)[sdr]|%[sdrif]|\{[^}]*\}|\.\*|\.\+|\\n|\n|\*|\?|\^|\$/)
    .map((f) => f.trim())
    .filter((f) => f.length >= 8);
}

const PRINTER_NAMES = [
  ...["str", "repr", "latex", "pretty", "upretty", "pretty_print", "sstr", "srepr", "mathml", "print_mathml"],
  ...["ccode", "cxxcode", "fcode", "pycode", "octave_code", "julia_code", "jscode", "rcode", "mathematica_code", "maple_code", "rust_code", "glsl_code"],
  ...["format", "as_text", "to_string", "getvalue", "render", "render_to_string", "dumps", "dump"],
];

/** Calls of a printer, by its own name or a name the test file imports it as (`mathematica_code as mcode`). */
function printerCall(aliases: string[] = []): RegExp {
  return new RegExp(`\\b(${[...PRINTER_NAMES, ...aliases].join("|")})\\s*\\(`);
}

/** Names a test file gives printers on import: `from sympy.printing.mathematica import mathematica_code as mcode`. */
export function printerAliases(fileLines: SourceLine[]): string[] {
  const aliases = new Set<string>();
  for (const line of fileLines)
    for (const m of line.text.matchAll(/\b([A-Za-z_]\w*)\s+as\s+([A-Za-z_]\w*)/g)) if (PRINTER_NAMES.includes(m[1]!)) aliases.add(m[2]!);
  return [...aliases];
}

function flag(kind: AuditFlagRecord["flag"], test: string, detail: string, line: SourceLine, file: string, severity: number): AuditFlagRecord {
  return { flag: kind, subject: test, detail, severity, evidence: [{ file, line: line.n, text: line.text.trim() }] };
}

/** What the checks of one test share: the test, what the fix did, what the requests say, and what was said already. */
interface Judging {
  test: string;
  file: string;
  facts: ReferenceFacts;
  requestText: string;
  tree: SourceTree;
  testPatchRemoved: string;
  seen: Set<string>;
  flags: AuditFlagRecord[];
}

/** A public name the fix invents (a definition, a parameter, a name or option string), which the test needs and no request gives. */
async function newNames(j: Judging, line: SourceLine): Promise<void> {
  const fresh = (name: string) => !j.seen.has(`name:${name}`) && !requestsName(j.requestText, name);
  for (const name of j.facts.newDefinitions) {
    if (!fresh(name) || !wordIn(name).test(line.text)) continue;
    if ((await j.tree.baseHas(`def ${name}(`, false)) || (await j.tree.baseHas(`class ${name}`, true))) continue;
    j.seen.add(`name:${name}`);
    j.flags.push(flag("new_name", j.test, `uses \`${name}\`, which the reference fix defines and no request names`, line, j.file, 3));
  }
  for (const name of j.facts.newParameters) {
    if (!fresh(name) || !new RegExp(`(?<![\\w])${name}\\s*=(?!=)`).test(line.text)) continue;
    j.seen.add(`name:${name}`);
    j.flags.push(flag("new_name", j.test, `passes \`${name}=\`, a parameter the reference fix adds and no request names`, line, j.file, 2));
  }
  for (const name of j.facts.newLiteralNames) {
    if (!fresh(name) || !(line.text.includes(`"${name}"`) || line.text.includes(`'${name}'`))) continue;
    if ((await j.tree.baseHas(`"${name}"`, false)) || (await j.tree.baseHas(`'${name}'`, false))) continue;
    j.seen.add(`name:${name}`);
    const option = name.startsWith("-");
    const detail = `uses ${option ? "the option" : "the name"} "${name}", which the reference fix introduces and no request names`;
    j.flags.push(flag("new_name", j.test, detail, line, j.file, option ? 3 : 2));
  }
}

/** A message the fix writes, asserted word for word, that no request states (nor the base holds). */
async function exactMessages(j: Judging, line: SourceLine): Promise<void> {
  const squashedRequests = squash(j.requestText);
  for (const m of line.text.matchAll(STRING_LITERAL)) {
    const message = m[2]!;
    if (message.length < 12 || message.trim().split(/\s+/).length < 3) continue;
    const fragments = messageFragments(message);
    if (!fragments.length || j.seen.has(`message:${message}`)) continue;
    if (!fragments.some((f) => j.facts.addedText.includes(f) || j.facts.addedStrings.includes(f))) continue;
    if (fragments.some((f) => j.facts.removedText.includes(f) || j.testPatchRemoved.includes(f) || squashedRequests.includes(squash(f)))) continue;
    let atBase = false;
    for (const f of fragments) if (await j.tree.baseHas(f, false)) atBase = true;
    if (atBase) continue;
    j.seen.add(`message:${message}`);
    j.flags.push(flag("exact_message", j.test, `asserts the message "${message}", which the reference fix writes and no request states`, line, j.file, 2));
  }
}

/**
 * An outcome the test expects by type that no request asks for: an exception type no request
 * names (another reasonable fix raises another), or a warning where no request names its class or
 * speaks of warning or deprecating at all (matplotlib-24265: the issue wants a style name back,
 * the test wants a deprecation warning when it is used; a fix that does what was asked and stays
 * silent fails).
 */
const EXPECTED_TYPES = [
  {
    kind: "unrequested_exception",
    call: /\b(?:raises|assertRaises|assertRaisesMessage|assertRaisesRegexp?|assert_raises|assert_raises_regexp?|assert_raise_message)\(\s*(?:[a-z_]\w*\.)*([A-Z]\w*)/g,
    asked: (name: string, requests: string) => requestsName(requests, name),
    detail: (name: string) => `expects \`${name}\`, which no request names`,
  },
  {
    kind: "unrequested_warning",
    call: /\b(?:warns|assertWarns|assertWarnsMessage|assertWarnsRegexp?|assert_warns|assert_warns_message)\(\s*(?:[a-z_]\w*\.)*([A-Z]\w*)/g,
    asked: (name: string, requests: string) => requestsName(requests, name) || /\b(?:warn\w*|deprecat\w*)\b/i.test(requests),
    detail: (name: string) => `expects the warning \`${name}\` where no request asks for a warning`,
  },
] as const;

function unrequestedTypes(j: Judging, line: SourceLine): void {
  for (const expected of EXPECTED_TYPES)
    for (const m of line.text.matchAll(expected.call)) {
      const name = m[1]!;
      if (j.seen.has(`${expected.kind}:${name}`) || expected.asked(name, j.requestText)) continue;
      j.seen.add(`${expected.kind}:${name}`);
      j.flags.push(flag(expected.kind, j.test, expected.detail(name), line, j.file, 2));
    }
}

/**
 * A check or message code the test expects (Django's `admin.E109`, a linter's `W0611`) that no
 * request names: codes are public identifiers, and a solution that follows a request naming
 * another code (django-16816's issue says E108) or none picks its own.
 */
function unrequestedCodes(j: Judging, line: SourceLine): void {
  for (const m of line.text.matchAll(STRING_LITERAL)) {
    const code = /^(?:[a-z_]+\.)?([A-Z]{1,2}\d{3,4})$/.exec(m[2]!);
    if (!code || j.seen.has(`code:${m[2]}`)) continue;
    if (requestsName(j.requestText, m[2]!) || requestsName(j.requestText, code[1]!)) continue;
    j.seen.add(`code:${m[2]}`);
    const named = [...new Set([...j.requestText.matchAll(/\b(?:[a-z_]+\.)?([A-Z]{1,2}\d{3,4})\b/g)].map((n) => n[1]!))];
    const detail = `expects the code "${m[2]}", which no request names${named.length ? ` (they name ${named.join(", ")})` : ""}`;
    j.flags.push(flag("unrequested_code", j.test, detail, line, j.file, 2));
  }
}

/** An exact rendering compared character for character, which no request shows (in any order). */
function exactFormat(j: Judging, lines: SourceLine[], aliases: string[]): void {
  const bare = (text: string) => squash(text).replace(/ /g, "");
  const shown = bare(j.requestText);
  for (const { line, literal } of renderingExpectations(lines, printerCall(aliases))) {
    if (shown.includes(bare(literal)) || shown.includes(bare(unescape(literal))) || j.testPatchRemoved.includes(literal)) continue;
    // A request that shows the same shape (every name the expected text holds, in whatever order or with other values) states the form.
    const words = [...new Set(literal.match(/[A-Za-z_]\w{2,}/g) ?? [])];
    if (words.length >= 2 && words.every((w) => requestsName(j.requestText, w))) continue;
    const short = literal.length > 80 ? `${literal.slice(0, 77)}...` : literal;
    j.flags.push(flag("exact_format", j.test, `compares rendered output with "${short}" exactly, a form no request shows`, line, j.file, 2));
    return;
  }
}

/**
 * Behaviour of functions no request mentions: the test exercises what the fix changed, but only
 * where the requests are silent. sympy's `_eval_is_x` backs the `is_x` property; `_name` backs `name`.
 */
function unrequestedBehaviour(j: Judging, added: SourceLine[]): void {
  const changedBy = new Map<string, string>();
  for (const fn of j.facts.changedFunctions.keys()) {
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
  const prose = j.requestText
    .split("\n")
    .filter((l) => !/^\s*File "/.test(l))
    .join("\n");
  const pointsAt = (fn: string) => {
    const path = j.facts.changedFunctions.get(fn) ?? "";
    const module = path.split("/").at(-1)!.replace(/\.py$/, "");
    return (path !== "" && prose.includes(path)) || (module.length >= 5 && module !== "__init__" && requestsName(prose, `${module}.py`));
  };
  const mentioned = names.filter((n) => requestsName(j.requestText, n) || requestsName(j.requestText, changedBy.get(n)!) || pointsAt(changedBy.get(n)!));
  if (!names.length || mentioned.length) return;
  const detail = `checks \`${names.join("`, `")}\`, which the reference fix changes and no request mentions`;
  j.flags.push(flag("unrequested_behaviour", j.test, detail, used.get(names[0]!)!, j.file, 2));
}

/** A line that is one element of a list of cases: a whole string literal and its comma. */
const CASE_ELEMENT = /^\s*[rbuRBU]?(["'])((?:\\.|(?!\1).){4,})\1\s*,\s*(?:#.*)?$/;

/**
 * Cases a test adds beside the one the request shows (django-15202: the issue's `'////]@N.AN'`
 * and an empty hostname, `'#@A.bO'`, no request mentions): a fix for the case the issue reports
 * need not handle the other. Cases the test held before (the patch's removed lines) are not new.
 */
function unshownCases(j: Judging, added: SourceLine[]): void {
  const bare = (text: string) => text.replace(/\s+/g, "");
  const shownText = bare(j.requestText);
  const cases = added.flatMap((line) => {
    const m = CASE_ELEMENT.exec(line.text);
    return m && !j.testPatchRemoved.includes(m[2]!) ? [{ line, value: m[2]! }] : [];
  });
  // A bare name the request happens to use (pydicom-1458's `Columns`, an attribute) is no input it shows.
  const shown = cases.find((c) => !/^\w+$/.test(c.value) && (shownText.includes(bare(c.value)) || shownText.includes(bare(unescape(c.value)))));
  const other = cases.find((c) => !shownText.includes(bare(c.value)) && !shownText.includes(bare(unescape(c.value))));
  if (!shown || !other) return;
  const detail = `adds the case "${other.value}" beside the one the request shows ("${shown.value}"); no request mentions it`;
  j.flags.push(flag("unshown_case", j.test, detail, other.line, j.file, 2));
}

/**
 * The unfairness flags of one located test. Only lines the test patch added count: a test that
 * only exists at the base checks what the base already did.
 */
export async function fairnessFlags(
  test: string,
  located: LocatedTest,
  facts: ReferenceFacts,
  requestText: string,
  tree: SourceTree,
  testPatchRemoved: string,
  open: OpenSentence[] = [],
): Promise<AuditFlagRecord[]> {
  const added = located.lines.filter((l) => l.added && l.text.trim() && !l.text.trim().startsWith("#"));
  const j: Judging = { test, file: located.file, facts, requestText, tree, testPatchRemoved, seen: new Set(), flags: [] };
  for (const line of added) {
    await newNames(j, line);
    await exactMessages(j, line);
    unrequestedTypes(j, line);
    unrequestedCodes(j, line);
  }
  exactFormat(j, located.lines, printerAliases((await tree.lines(located.file)) ?? located.lines));
  unrequestedBehaviour(j, added);
  unshownCases(j, added);
  const choice = openChoiceFlag(test, located.file, located.lines, open, requestText, testPatchRemoved);
  if (choice) j.flags.push(choice);
  return j.flags;
}

const TRIPLE_QUOTE = new RegExp(`${STRING_PREFIX}("""|''')`);

/** The string literal that starts on line `index` (a triple-quoted one may run over later lines), and the line it ends on. */
function literalSpan(lines: SourceLine[], index: number, from = 0): { text: string; end: number } | undefined {
  const text = lines[index]!.text.slice(from);
  const triple = TRIPLE_QUOTE.exec(text);
  const single = firstString(text);
  if (triple && (!single || triple.index <= single.index)) {
    const quote = triple[1]!;
    const rest = text.slice(triple.index + triple[0].length);
    const close = rest.indexOf(quote);
    if (close >= 0) return { text: rest.slice(0, close), end: index };
    const parts = [rest];
    for (let i = index + 1; i < lines.length && i < index + 80; i++) {
      const at = lines[i]!.text.indexOf(quote);
      if (at >= 0) return { text: [...parts, lines[i]!.text.slice(0, at)].join("\n"), end: i };
      parts.push(lines[i]!.text);
    }
    return undefined;
  }
  return single ? { text: single[2]!, end: index } : undefined;
}

function literalAt(lines: SourceLine[], index: number, from = 0): string | undefined {
  return literalSpan(lines, index, from)?.text;
}

/**
 * Literals the test compares a printer's output with, directly (`latex(x) == r"..."`) or through
 * a name assigned a literal (`s = r"..."; assert latex(x) == s`, the literal perhaps on the lines
 * after `s = \` or `s = u(`), where the test patch added or changed the literal.
 */
function renderingExpectations(lines: SourceLine[], printers: RegExp): { line: SourceLine; literal: string }[] {
  const out: { line: SourceLine; literal: string }[] = [];
  lines.forEach((line, index) => {
    if (!printers.test(line.text)) return;
    const comparison = /==\s*(.*)$|^(.*?)==|assertEqual\((.*)$/.exec(line.text);
    if (!comparison) return;
    const right = /==\s*([A-Za-z_]\w*)\s*$/.exec(line.text)?.[1] ?? /^\s*assert\s+([A-Za-z_]\w*)\s*==/.exec(line.text)?.[1];
    if (right && !printers.test(`${right}(`)) {
      // The latest assignment of that name above the comparison.
      const given = nearestBinding(lines, index, right, false);
      if (!given) return;
      const i = given.at;
      // `s = \` or `s = u(` opens the literal on the next line.
      const opensBelow = /^(?:\\|[A-Za-z_]\w*\(|\()\s*$/.test(given.value);
      const span = literalSpan(lines, i, given.column) ?? (opensBelow && i + 1 < index ? literalSpan(lines, i + 1) : undefined);
      if (span && span.text.length >= 4 && lines.slice(i, span.end + 1).some((l) => l.added)) out.push({ line: lines[i]!, literal: span.text });
      return;
    }
    if (!line.added) return;
    const at = line.text.indexOf("==");
    const literal = literalAt(lines, index, at >= 0 ? at + 2 : 0) ?? literalAt(lines, index);
    if (literal !== undefined && literal.length >= 4) out.push({ line, literal });
  });
  return out;
}
