import type { TestRunner } from "../schemas/repo-profile.ts";

/**
 * Test ids per runner: reading one (where its source lives), writing one from a JUnit report's
 * `classname` / `name` / `file` (never from log text), and their mapping to the form SWE-bench
 * records. One module, so that qualification, fidelity and the audit read an id alike.
 */

/** unittest's own name for a test, as Django's runner prints it: its form changed in Python 3.11. */
export function unittestId(method: string, className: string, python: string): string {
  const [major, minor] = python.split(".").map(Number) as [number, number];
  return major > 3 || (major === 3 && minor >= 11) ? `${method} (${className}.${method})` : `${method} (${className})`;
}

/**
 * A unittest id as Django's runner prints it, `name (module.Class)` or, since Python 3.11,
 * `name (module.Class.name)`: its method and what owns it, or undefined for another form.
 */
function unittestParts(id: string): { method: string; owner: string } | undefined {
  const m = /^(\S+) \(([\w.]+)\)$/.exec(id);
  return m ? { method: m[1]!, owner: m[2]! } : undefined;
}

/**
 * A test argument (a test file, a pytest node id, or a unittest id) as a label Django's
 * `tests/runtests.py` takes: `tests/admin_views/tests.py` → `admin_views.tests`;
 * `test_x (admin_views.tests.Case)` → `admin_views.tests.Case.test_x`.
 */
export function djangoLabel(arg: string): string {
  const unittest = unittestParts(arg);
  if (unittest) {
    const { method, owner } = unittest;
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

/**
 * Where a fail-to-pass test's source lives, read from its id in the formats the SWE-bench family
 * uses: pytest node ids (`path::Class::name[case]`), Django's runner (`name (module.Class)`, and
 * `name (module.Class.name)` since Django 4.1) and sympy's bare function names (`test_name`).
 */
export interface TestLocation {
  /** The file, when the id names one (pytest). */
  file?: string;
  /** Files the test may live in, best first, when the id names a module instead (Django). */
  candidateFiles: string[];
  /** Enclosing classes, outermost first. */
  classes: string[];
  /** The function or method name, without a parametrized case. */
  name: string;
  /** The parametrized case (`[...]`), if any. */
  caseId?: string;
}

const PY_NAME = /^[A-Za-z_]\w*$/;

/** A test id's location; undefined when it names no Python test function (a Django test named by its docstring). */
export function parseTestId(id: string): TestLocation | undefined {
  const trimmed = id.trim();
  if (trimmed.includes("::")) {
    const parts = trimmed.split("::");
    const last = parts.at(-1)!;
    const bracket = last.indexOf("[");
    const name = bracket < 0 ? last : last.slice(0, bracket);
    if (!PY_NAME.test(name)) return undefined;
    return {
      file: parts[0]!,
      candidateFiles: [parts[0]!],
      classes: parts.slice(1, -1),
      name,
      ...(bracket < 0 ? {} : { caseId: last.slice(bracket + 1, last.endsWith("]") ? -1 : undefined) }),
    };
  }
  const unittest = unittestParts(trimmed);
  if (unittest && PY_NAME.test(unittest.method)) {
    const name = unittest.method;
    const dotted = unittest.owner.split(".");
    if (dotted.at(-1) === name) dotted.pop();
    const cls = dotted.pop();
    if (!cls || !dotted.length) return undefined;
    const path = dotted.join("/");
    // Django's runner names modules relative to tests/; a module may be a package.
    return { candidateFiles: [`tests/${path}.py`, `tests/${path}/__init__.py`, `${path}.py`, `${path}/__init__.py`], classes: [cls], name };
  }
  if (PY_NAME.test(trimmed)) return { candidateFiles: [], classes: [], name: trimmed };
  return undefined;
}
