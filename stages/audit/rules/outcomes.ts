import { nearestBinding, normalSpacing, regexText, STRING_LITERAL, STRING_PREFIX, firstString, wordIn } from "../readers/python-text.ts";
import { requestsName } from "../readers/reference.ts";
import type { SourceLine } from "../readers/source-tree.ts";
import type { Finding, LineView, TestView } from "./types.ts";

/**
 * Outcomes a test requires that no request gives: a public name the reference fix invents, a
 * message it writes, an exception or warning type, a check code, an exact rendering. Each finding
 * carries the test line that shows it. In the terms SWE-bench Verified's annotators use for
 * `false_negative`: tests a reasonable solution of the issue fails.
 */

/** A finding on one line of the test, with that line as its evidence. */
function at(view: TestView, detail: string, line: SourceLine, severity?: number): Finding {
  const { id, located } = view.test;
  return { subject: id, detail, ...(severity === undefined ? {} : { severity }), evidence: [{ file: located.file, line: line.n, text: line.text.trim() }] };
}

/** Pieces of a message between its placeholders (`%s`, `{}`, `{name}`, `%(name)s`) and regex wildcards. */
function messageFragments(message: string): string[] {
  return regexText(message)
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

/** A public name the fix invents (a definition, a parameter, a name or option string), which the test needs and no request gives. */
export async function newName(view: LineView): Promise<Finding[]> {
  const { line } = view;
  const facts = view.facts!;
  const found: Finding[] = [];
  const fresh = (name: string) => !view.seen.has(`name:${name}`) && !requestsName(view.requestText, name);
  for (const name of facts.newDefinitions) {
    if (!fresh(name) || !wordIn(name).test(line.text)) continue;
    if ((await view.tree.baseHas(`def ${name}(`, false)) || (await view.tree.baseHas(`class ${name}`, true))) continue;
    view.seen.add(`name:${name}`);
    found.push(at(view, `uses \`${name}\`, which the reference fix defines and no request names`, line));
  }
  for (const name of facts.newParameters) {
    if (!fresh(name) || !new RegExp(`(?<![\\w])${name}\\s*=(?!=)`).test(line.text)) continue;
    view.seen.add(`name:${name}`);
    found.push(at(view, `passes \`${name}=\`, a parameter the reference fix adds and no request names`, line, 2));
  }
  for (const name of facts.newLiteralNames) {
    if (!fresh(name) || !(line.text.includes(`"${name}"`) || line.text.includes(`'${name}'`))) continue;
    if ((await view.tree.baseHas(`"${name}"`, false)) || (await view.tree.baseHas(`'${name}'`, false))) continue;
    view.seen.add(`name:${name}`);
    const option = name.startsWith("-");
    const detail = `uses ${option ? "the option" : "the name"} "${name}", which the reference fix introduces and no request names`;
    found.push(at(view, detail, line, option ? 3 : 2));
  }
  return found;
}

/** A message the fix writes, asserted word for word, that no request states (nor the base holds). */
export async function exactMessage(view: LineView): Promise<Finding[]> {
  const { line } = view;
  const facts = view.facts!;
  const found: Finding[] = [];
  const squashedRequests = normalSpacing(view.requestText);
  for (const m of line.text.matchAll(STRING_LITERAL)) {
    const message = m[2]!;
    if (message.length < 12 || message.trim().split(/\s+/).length < 3) continue;
    const fragments = messageFragments(message);
    if (!fragments.length || view.seen.has(`message:${message}`)) continue;
    if (!fragments.some((f) => facts.addedText.includes(f) || facts.addedStrings.includes(f))) continue;
    if (fragments.some((f) => facts.removedText.includes(f) || view.testPatchRemoved.includes(f) || squashedRequests.includes(normalSpacing(f)))) continue;
    let atBase = false;
    for (const f of fragments) if (await view.tree.baseHas(f, false)) atBase = true;
    if (atBase) continue;
    view.seen.add(`message:${message}`);
    found.push(at(view, `asserts the message "${message}", which the reference fix writes and no request states`, line));
  }
  return found;
}

/**
 * An outcome the test expects by type that no request asks for: an exception type no request
 * names (another reasonable fix raises another), or a warning where no request names its class or
 * speaks of warning or deprecating at all (matplotlib-24265: the issue wants a style name back,
 * the test wants a deprecation warning when it is used; a fix that does what was asked and stays
 * silent fails).
 */
const EXPECTED_TYPES = {
  exception: {
    call: /\b(?:raises|assertRaises|assertRaisesMessage|assertRaisesRegexp?|assert_raises|assert_raises_regexp?|assert_raise_message)\(\s*(?:[a-z_]\w*\.)*([A-Z]\w*)/g,
    asked: (name: string, requests: string) => requestsName(requests, name),
    detail: (name: string) => `expects \`${name}\`, which no request names`,
  },
  warning: {
    call: /\b(?:warns|assertWarns|assertWarnsMessage|assertWarnsRegexp?|assert_warns|assert_warns_message)\(\s*(?:[a-z_]\w*\.)*([A-Z]\w*)/g,
    asked: (name: string, requests: string) => requestsName(requests, name) || /\b(?:warn\w*|deprecat\w*)\b/i.test(requests),
    detail: (name: string) => `expects the warning \`${name}\` where no request asks for a warning`,
  },
} as const;

/** The rule for one kind of expected type: an exception or a warning. */
function expectedType(kind: keyof typeof EXPECTED_TYPES): (view: LineView) => Finding[] {
  const expected = EXPECTED_TYPES[kind];
  return (view) => {
    const found: Finding[] = [];
    for (const m of view.line.text.matchAll(expected.call)) {
      const name = m[1]!;
      if (view.seen.has(name) || expected.asked(name, view.requestText)) continue;
      view.seen.add(name);
      found.push(at(view, expected.detail(name), view.line));
    }
    return found;
  };
}

export const unrequestedException = expectedType("exception");
export const unrequestedWarning = expectedType("warning");

/**
 * A check or message code the test expects (Django's `admin.E109`, a linter's `W0611`) that no
 * request names: codes are public identifiers, and a solution that follows a request naming
 * another code (django-16816's issue says E108) or none picks its own.
 */
export function unrequestedCode(view: LineView): Finding[] {
  const { line } = view;
  const found: Finding[] = [];
  for (const m of line.text.matchAll(STRING_LITERAL)) {
    const code = /^(?:[a-z_]+\.)?([A-Z]{1,2}\d{3,4})$/.exec(m[2]!);
    if (!code || view.seen.has(`code:${m[2]}`)) continue;
    if (requestsName(view.requestText, m[2]!) || requestsName(view.requestText, code[1]!)) continue;
    view.seen.add(`code:${m[2]}`);
    const named = [...new Set([...view.requestText.matchAll(/\b(?:[a-z_]+\.)?([A-Z]{1,2}\d{3,4})\b/g)].map((n) => n[1]!))];
    const detail = `expects the code "${m[2]}", which no request names${named.length ? ` (they name ${named.join(", ")})` : ""}`;
    found.push(at(view, detail, line));
  }
  return found;
}

/** An exact rendering compared character for character, which no request shows (in any order). */
export async function exactFormat(view: TestView): Promise<Finding[]> {
  const { lines, file } = view.test.located;
  const aliases = printerAliases((await view.tree.lines(file)) ?? lines);
  const bare = (text: string) => normalSpacing(text).replace(/ /g, "");
  const shown = bare(view.requestText);
  for (const { line, literal } of renderingExpectations(lines, printerCall(aliases))) {
    if (shown.includes(bare(literal)) || shown.includes(bare(regexText(literal))) || view.testPatchRemoved.includes(literal)) continue;
    // A request that shows the same shape (every name the expected text holds, in whatever order or with other values) states the form.
    const words = [...new Set(literal.match(/[A-Za-z_]\w{2,}/g) ?? [])];
    if (words.length >= 2 && words.every((w) => requestsName(view.requestText, w))) continue;
    const short = literal.length > 80 ? `${literal.slice(0, 77)}...` : literal;
    return [at(view, `compares rendered output with "${short}" exactly, a form no request shows`, line)];
  }
  return [];
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
