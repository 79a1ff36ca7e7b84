/**
 * A fail-to-pass test id in the formats the SWE-bench family uses, turned into where its source
 * lives: pytest node ids (`path::Class::name[case]`), Django's runner (`name (module.Class)`, and
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
  const django = /^(\w+) \(([\w.]+)\)$/.exec(trimmed);
  if (django) {
    const name = django[1]!;
    const dotted = django[2]!.split(".");
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
