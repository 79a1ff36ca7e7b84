/**
 * Code templates for the demo corpus. A repository's family decides what its functions do; a
 * function grows by request stage (1: the behaviour, 2: input validation, 3: a keyword option,
 * 4: a bound, 5: an answer for None, 6: a second keyword option), and each stage has a test that
 * fails until that stage's code exists. Request texts name the
 * identifiers and literals the tests use, as a real issue and review would.
 */
export type FamilyName = "numeric" | "text" | "money";

/** The request stages a demo function grows through (SPEC §1: a task's cumulative requests). */
export const MAX_STAGE = 6;
export type Stage = 1 | 2 | 3 | 4 | 5 | 6;

export interface DemoFunction {
  name: string;
  /** Dotted import path of the module holding it. */
  module: string;
  stage: Stage;
  /** Family parameters: numeric a/b, text separator, money rate. */
  a: number;
  b: number;
  sep: string;
  /** The module's original function, present from the first commit. */
  base?: boolean;
  /** Set by a regressing change: the base function now rounds (and breaks its old test). */
  regressed?: boolean;
  /** Listed in the module's __all__ (tested without any request asking for it). */
  exported?: boolean;
  /** Its stage-1 test fails at random, half the time. */
  flaky?: boolean;
  /** Its stage-1 test uses the conftest fixture `sample_input`. */
  usesFixture?: boolean;
  /** Its stage-1 test reads a binary data file. */
  binaryData?: boolean;
  /** A list version of this base function: `name(values)` maps it over a list. */
  manyOf?: string;
  /** Added without tests. */
  untested?: boolean;
  /**
   * Its stage-1 test relies on state another test of the file leaves behind, a test defined
   * before it but sorted after it: it passes when the file runs in order, and fails alone.
   */
  orderDependent?: boolean;
}

const SAMPLE: Record<FamilyName, string> = { numeric: "2", text: '"a b"', money: "100" };

export function fixtureValue(family: FamilyName): string {
  return SAMPLE[family];
}

function render(family: FamilyName, fn: DemoFunction): string {
  if (fn.manyOf) {
    const check = fn.stage >= 2 ? `    if not isinstance(values, list):\n        raise TypeError("${fn.name} expects a list")\n` : "";
    return `def ${fn.name}(values):\n${check}    return [${fn.manyOf}(v) for v in values]\n`;
  }
  if (fn.base) {
    if (family === "numeric") return `def ${fn.name}(value):\n    return ${fn.regressed ? `round(value * ${fn.a}, 1)` : `value * ${fn.a}`}\n`;
    if (family === "text") return `def ${fn.name}(text):\n    return text.strip()${fn.regressed ? ".lower()" : ""}\n`;
    return `def ${fn.name}(amounts):\n    return round(sum(amounts), ${fn.regressed ? 1 : 2})\n`;
  }
  const lines: string[] = [];
  // Keyword options in the order their stages add them; each defaults to doing nothing.
  const keywords = (options: [number, string][]) =>
    options
      .filter(([stage]) => fn.stage >= stage)
      .map(([, text]) => `, ${text}`)
      .join("");
  if (family === "numeric") {
    lines.push(
      `def ${fn.name}(value${keywords([
        [3, "precision=None"],
        [4, "maximum=None"],
        [6, "scale=1"],
      ])}):`,
    );
    if (fn.stage >= 5) lines.push(`    if value is None:`, `        return None`);
    if (fn.stage >= 2)
      lines.push(`    if isinstance(value, bool) or not isinstance(value, (int, float)):`, `        raise TypeError("${fn.name} expects a number")`);
    lines.push(`    result = value * ${fn.a} + ${fn.b}`);
    if (fn.stage >= 6) lines.push(`    result = result * scale`);
    if (fn.stage >= 4) lines.push(`    if maximum is not None and result > maximum:`, `        result = maximum`);
    if (fn.stage >= 3) lines.push(`    if precision is not None:`, `        result = round(result, precision)`);
    lines.push(`    return result`);
  } else if (family === "text") {
    lines.push(
      `def ${fn.name}(text${keywords([
        [3, "upper=False"],
        [4, 'prefix=""'],
        [6, "limit=None"],
      ])}):`,
    );
    if (fn.stage >= 5) lines.push(`    if text is None:`, `        return ""`);
    if (fn.stage >= 2) lines.push(`    if not isinstance(text, str):`, `        raise TypeError("${fn.name} expects a string")`);
    lines.push(`    result = text.replace(" ", "${fn.sep}")`);
    if (fn.stage >= 3) lines.push(`    if upper:`, `        result = result.upper()`);
    if (fn.stage >= 4) lines.push(`    result = prefix + result`);
    if (fn.stage >= 6) lines.push(`    if limit is not None:`, `        result = result[:limit]`);
    lines.push(`    return result`);
  } else {
    lines.push(
      `def ${fn.name}(amount${keywords([
        [3, "currency=None"],
        [4, "fee=0"],
        [6, "minimum=None"],
      ])}):`,
    );
    if (fn.stage >= 5) lines.push(`    if amount is None:`, `        return 0.0`);
    if (fn.stage >= 2) lines.push(`    if amount < 0:`, `        raise ValueError("${fn.name} needs a non-negative amount")`);
    lines.push(`    result = round(amount * ${fn.a}${fn.stage >= 4 ? " - fee" : ""}, 2)`);
    if (fn.stage >= 6) lines.push(`    if minimum is not None and result < minimum:`, `        result = minimum`);
    if (fn.stage >= 3) lines.push(`    if currency is not None:`, `        return f"{result:.2f} {currency}"`);
    lines.push(`    return result`);
  }
  return lines.join("\n") + "\n";
}

/** A module's source: its functions in the order they were added, and __all__ when one is exported. */
export function renderModule(family: FamilyName, functions: DemoFunction[], extraLines: string[] = []): string {
  const parts: string[] = [`"""${functions[0]?.module ?? "module"}."""\n`];
  const exported = functions.filter((f) => f.exported).map((f) => `"${f.name}"`);
  if (exported.length) parts.push(`__all__ = [${exported.join(", ")}]\n`);
  for (const fn of functions) parts.push("\n" + render(family, fn));
  for (const line of extraLines) parts.push("\n" + line);
  return parts.join("\n");
}

function numericExpected(fn: DemoFunction, value: number): string {
  return String(value * fn.a + fn.b);
}

/** The tests of one function at its current stage, each importing its module at call time. */
export function renderTests(family: FamilyName, fn: DemoFunction): string[] {
  if (fn.untested) return [];
  const imp = `importlib.import_module("${fn.module}")`;
  if (fn.manyOf) {
    const input = family === "numeric" ? "[1, 2]" : family === "text" ? '[" a ", "b "]' : "[[1.25], [2.5]]";
    const tests = [`def test_${fn.name}():\n    module = ${imp}\n    assert module.${fn.name}(${input}) == [module.${fn.manyOf}(v) for v in ${input}]\n`];
    if (fn.stage >= 2)
      tests.push(
        `def test_${fn.name}_rejects_tuple():\n    with pytest.raises(TypeError, match="${fn.name} expects a list"):\n        ${imp}.${fn.name}(tuple())\n`,
      );
    return tests;
  }
  if (fn.base) {
    if (family === "numeric") return [`def test_${fn.name}():\n    assert ${imp}.${fn.name}(1.25) == ${1.25 * fn.a}\n`];
    if (family === "text") return [`def test_${fn.name}():\n    assert ${imp}.${fn.name}("  Ab  ") == "Ab"\n`];
    return [`def test_${fn.name}():\n    assert ${imp}.${fn.name}([1.25, 2.5]) == 3.75\n`];
  }
  const tests: string[] = [];
  const arg = fn.usesFixture ? "sample_input" : "";
  const input = fn.usesFixture ? "sample_input" : SAMPLE[family];
  let basic: string;
  if (family === "numeric") basic = `assert ${imp}.${fn.name}(${input}) == ${numericExpected(fn, 2)}`;
  else if (family === "text") basic = `assert ${imp}.${fn.name}(${input}) == "a${fn.sep}b"`;
  else basic = `assert ${imp}.${fn.name}(${input}) == pytest.approx(${Math.round(100 * fn.a * 100) / 100})`;
  const body = [basic];
  // Flaky on purpose, the way real tests often are: state leaks between runs of one checkout,
  // so it passes on the first run and fails on the second, every time.
  if (fn.flaky)
    body.push(
      `marker = pathlib.Path(__file__).with_name(".${fn.name}.runs")`,
      `runs = int(marker.read_text()) if marker.exists() else 0`,
      `marker.write_text(str(runs + 1))`,
      `assert runs % 2 == 0, "flaky on purpose: fails on every second run"`,
    );
  if (fn.binaryData) body.unshift(`assert (pathlib.Path(__file__).parent / "data" / "${fn.name}.bin").read_bytes()[:4] == b"\\x89BIN"`);
  if (fn.orderDependent) {
    tests.push(`_registered = []\n\n\ndef test_${fn.name}_zz_registry():\n    _registered.append("${fn.module}")\n    assert _registered\n`);
    body.unshift("assert _registered");
  }
  tests.push(`def test_${fn.name}_basic(${arg}):\n    ${body.join("\n    ")}\n`);
  if (fn.exported) tests.push(`def test_${fn.name}_listed():\n    assert "${fn.name}" in ${imp}.__all__\n`);
  if (fn.stage >= 2) {
    if (family === "numeric")
      tests.push(
        `def test_${fn.name}_rejects_text():\n    with pytest.raises(TypeError, match="${fn.name} expects a number"):\n        ${imp}.${fn.name}("2")\n    with pytest.raises(TypeError):\n        ${imp}.${fn.name}(True)\n`,
      );
    else if (family === "text")
      tests.push(
        `def test_${fn.name}_rejects_bytes():\n    with pytest.raises(TypeError, match="${fn.name} expects a string"):\n        ${imp}.${fn.name}(b"a b")\n`,
      );
    else
      tests.push(
        `def test_${fn.name}_rejects_negative():\n    with pytest.raises(ValueError, match="${fn.name} needs a non-negative amount"):\n        ${imp}.${fn.name}(-1)\n`,
      );
  }
  if (fn.stage >= 3) {
    if (family === "numeric")
      tests.push(`def test_${fn.name}_precision():\n    assert ${imp}.${fn.name}(0.123456, precision=2) == round(0.123456 * ${fn.a} + ${fn.b}, 2)\n`);
    else if (family === "text") tests.push(`def test_${fn.name}_upper():\n    assert ${imp}.${fn.name}("a b", upper=True) == "A${fn.sep.toUpperCase()}B"\n`);
    else
      tests.push(
        `def test_${fn.name}_currency():\n    assert ${imp}.${fn.name}(100, currency="EUR") == "${(Math.round(100 * fn.a * 100) / 100).toFixed(2)} EUR"\n`,
      );
  }
  tests.push(...laterStageTests(family, fn, imp));
  return tests;
}

/** The tests of stages 4 to 6 (a bound, an answer for None, a second keyword), where `fn` has reached them. */
function laterStageTests(family: FamilyName, fn: DemoFunction, imp: string): string[] {
  const tests: string[] = [];
  if (fn.stage >= 4) {
    if (family === "numeric")
      tests.push(
        `def test_${fn.name}_maximum():\n    assert ${imp}.${fn.name}(1000, maximum=5) == 5\n    assert ${imp}.${fn.name}(2, maximum=1000) == ${numericExpected(fn, 2)}\n`,
      );
    else if (family === "text") tests.push(`def test_${fn.name}_prefix():\n    assert ${imp}.${fn.name}("a b", prefix="> ") == "> a${fn.sep}b"\n`);
    else tests.push(`def test_${fn.name}_fee():\n    assert ${imp}.${fn.name}(100, fee=1) == pytest.approx(${Math.round((100 * fn.a - 1) * 100) / 100})\n`);
  }
  if (fn.stage >= 5) {
    if (family === "numeric") tests.push(`def test_${fn.name}_none():\n    assert ${imp}.${fn.name}(None) is None\n`);
    else if (family === "text") tests.push(`def test_${fn.name}_none():\n    assert ${imp}.${fn.name}(None) == ""\n`);
    else tests.push(`def test_${fn.name}_none():\n    assert ${imp}.${fn.name}(None) == 0.0\n`);
  }
  if (fn.stage >= 6) {
    if (family === "numeric") tests.push(`def test_${fn.name}_scale():\n    assert ${imp}.${fn.name}(2, scale=10) == ${numericExpected(fn, 2)} * 10\n`);
    else if (family === "text") tests.push(`def test_${fn.name}_limit():\n    assert ${imp}.${fn.name}("a b c", limit=3) == "a${fn.sep}b"[:3]\n`);
    else tests.push(`def test_${fn.name}_minimum():\n    assert ${imp}.${fn.name}(0, minimum=5) == 5\n`);
  }
  return tests;
}

/** The names of the test functions `renderTests` writes for `fn`. */
export function testNames(family: FamilyName, fn: DemoFunction): string[] {
  return renderTests(family, fn).map((t) => /^def (test_\w+)\(/m.exec(t)![1]!);
}

export function renderTestFile(family: FamilyName, functions: DemoFunction[], extra: string[] = []): string {
  const header = "import importlib\nimport pathlib\n\nimport pytest\n";
  const bodies = functions.flatMap((fn) => renderTests(family, fn)).concat(extra);
  return [header, ...bodies].join("\n\n");
}

/** Stage texts: 1 from the issue (or PR body), 2 to 6 from review rounds. */
export function requestText(family: FamilyName, stage: Stage, fns: DemoFunction[]): string {
  const each = (f: (fn: DemoFunction) => string) => fns.map(f).join(" ");
  const many = fns.find((fn) => fn.manyOf);
  if (many && stage === 1)
    return `Add \`${many.name}(values)\` to \`${many.module}\`: it applies \`${many.manyOf}\` to every value of a list and returns the results as a list.`;
  if (many) return `\`${many.name}\` must raise TypeError with the message "${many.name} expects a list" when it is given anything but a list.`;
  if (stage === 1) {
    if (family === "numeric")
      return each(
        (fn) =>
          `\`${fn.name}(value)\` in \`${fn.module}\` should return the value multiplied by ${fn.a}, plus ${fn.b}; for example \`${fn.name}(2)\` returns ${numericExpected(fn, 2)}.`,
      );
    if (family === "text")
      return each(
        (fn) =>
          `\`${fn.name}(text)\` in \`${fn.module}\` should return the text with every space replaced by "${fn.sep}"; for example \`${fn.name}("a b")\` returns "a${fn.sep}b".`,
      );
    return each(
      (fn) =>
        `\`${fn.name}(amount)\` in \`${fn.module}\` should convert an amount at the rate ${fn.a}, rounded to cents; for example \`${fn.name}(100)\` returns ${Math.round(100 * fn.a * 100) / 100}.`,
    );
  }
  if (stage === 2) {
    if (family === "numeric")
      return each(
        (fn) =>
          `\`${fn.name}\` must reject input that is not a number: a string or a bool should raise TypeError with the message "${fn.name} expects a number".`,
      );
    if (family === "text")
      return each(
        (fn) => `\`${fn.name}\` must raise TypeError with the message "${fn.name} expects a string" when it is given anything but a str (bytes included).`,
      );
    return each((fn) => `A negative amount passed to \`${fn.name}\` must raise ValueError with the message "${fn.name} needs a non-negative amount".`);
  }
  if (stage >= 4) return laterRequestText(family, stage, each);
  if (family === "numeric")
    return each((fn) => `\`${fn.name}\` should accept a \`precision\` keyword (default None); when it is given, round the result to that many digits.`);
  if (family === "text") return each((fn) => `Please add an \`upper\` keyword to \`${fn.name}\` (default False) that returns the result in upper case.`);
  return each(
    (fn) =>
      `Add a \`currency\` keyword to \`${fn.name}\` (default None): when it is given, return the amount with two decimals followed by the currency code, like "115.00 EUR".`,
  );
}

/** Stages 4 to 6 of a function: a bound, an answer for None, a second keyword. */
function laterRequestText(family: FamilyName, stage: Stage, each: (f: (fn: DemoFunction) => string) => string): string {
  if (stage === 4) {
    if (family === "numeric")
      return each(
        (fn) =>
          `Give \`${fn.name}\` a \`maximum\` keyword (default None): a result above it comes back as the maximum, so \`${fn.name}(1000, maximum=5)\` returns 5.`,
      );
    if (family === "text")
      return each(
        (fn) =>
          `\`${fn.name}\` should take a \`prefix\` keyword (default "") and put it before the result: \`${fn.name}("a b", prefix="> ")\` starts with "> ".`,
      );
    return each((fn) => `Add a \`fee\` keyword to \`${fn.name}\` (default 0), subtracted from the converted amount before rounding.`);
  }
  if (stage === 5) {
    if (family === "numeric") return each((fn) => `\`${fn.name}(None)\` should return None instead of raising: a missing value stays missing.`);
    if (family === "text") return each((fn) => `\`${fn.name}(None)\` must return the empty string "" rather than raise.`);
    return each((fn) => `\`${fn.name}(None)\` should return 0.0: treat a missing amount as nothing.`);
  }
  if (family === "numeric")
    return each((fn) => `One more: a \`scale\` keyword for \`${fn.name}\` (default 1) that multiplies the result before any maximum or rounding.`);
  if (family === "text")
    return each((fn) => `Please add a \`limit\` keyword to \`${fn.name}\` (default None) that cuts the result to at most that many characters.`);
  return each((fn) => `\`${fn.name}\` needs a \`minimum\` keyword (default None): a result below it comes back as the minimum.`);
}
