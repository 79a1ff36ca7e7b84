import type { TestRunner } from "../schemas/repo-profile.ts";

/**
 * Test ids per runner, and their mapping to the form SWE-bench records. Every id comes from a
 * JUnit report's `classname` / `name` / `file`, never from log text.
 */

/** unittest's own name for a test, as Django's runner prints it: its form changed in Python 3.11. */
export function unittestId(method: string, className: string, python: string): string {
  const [major, minor] = python.split(".").map(Number) as [number, number];
  return major > 3 || (major === 3 && minor >= 11) ? `${method} (${className}.${method})` : `${method} (${className})`;
}

const UNITTEST_ID = /^(\S+) \(([\w.]+)\)$/;

/**
 * A test argument (a test file, a pytest node id, or a unittest id) as a label Django's
 * `tests/runtests.py` takes: `tests/admin_views/tests.py` → `admin_views.tests`;
 * `test_x (admin_views.tests.Case)` → `admin_views.tests.Case.test_x`.
 */
export function djangoLabel(arg: string): string {
  const unittest = UNITTEST_ID.exec(arg);
  if (unittest) {
    const [, method, owner] = unittest as unknown as [string, string, string];
    return owner.endsWith(`.${method}`) ? owner : `${owner}.${method}`;
  }
  const [file, ...rest] = arg.split("::");
  const module = file!
    .replace(/^tests\//, "")
    .replace(/\.py$/, "")
    .replace(/\/__init__$/, "")
    .replaceAll("/", ".");
  return [module, ...rest].join(".");
}

/**
 * The id SWE-bench's records use for one of ours: sympy's are bare function names (its `bin/test`
 * prints no module); pytest node ids and Django's unittest ids are already SWE-bench's.
 */
export function swebenchTestId(runner: TestRunner, id: string): string {
  if (runner === "sympy") return id.split("::").at(-1)!.replace(/\[.*$/, "");
  return id;
}

/**
 * An id reduced to what two spellings of the same test share, for comparing our ids with a
 * record's: SWE-bench cuts long parametrized ids at the first space and keeps `\n` docstring lines.
 */
export function normaliseTestId(id: string): string {
  let normal = id.trim();
  const bracket = normal.indexOf("[");
  // SWE-bench's log parser cut parametrized ids at their first space
  if (bracket >= 0) normal = normal.slice(0, bracket) + normal.slice(bracket).split(" ")[0];
  return normal;
}
