/**
 * Versions and specifiers as PEP 440 defines them, as far as a profile's lint needs: to tell
 * whether a release satisfies a requirement such as `setuptools<70` or `pytest>=3.0,!=3.1.*`.
 * Versions that are not PEP 440 (old "legacy" ones) parse as null and satisfy nothing.
 */

export interface Version {
  epoch: number;
  release: number[];
  /** a, b or rc with its number; null for a final release. */
  pre: [string, number] | null;
  post: number | null;
  dev: number | null;
  local: (string | number)[];
  text: string;
}

const VERSION =
  /^v?(?:(?<epoch>\d+)!)?(?<release>\d+(?:\.\d+)*)(?:[-_.]?(?<pre>a|alpha|b|beta|c|rc|pre|preview)[-_.]?(?<preN>\d+)?)?(?:-(?<postImplicit>\d+)|[-_.]?(?<post>post|rev|r)[-_.]?(?<postN>\d+)?)?(?:[-_.]?(?<dev>dev)[-_.]?(?<devN>\d+)?)?(?:\+(?<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?$/i;

const PRE_NAMES: Record<string, string> = { a: "a", alpha: "a", b: "b", beta: "b", c: "rc", rc: "rc", pre: "rc", preview: "rc" };

export function parseVersion(text: string): Version | null {
  const g = VERSION.exec(text.trim())?.groups;
  if (!g) return null;
  const post = g.postImplicit !== undefined ? Number(g.postImplicit) : g.post ? Number(g.postN ?? 0) : null;
  return {
    epoch: g.epoch ? Number(g.epoch) : 0,
    release: g.release!.split(".").map(Number),
    pre: g.pre ? [PRE_NAMES[g.pre.toLowerCase()]!, Number(g.preN ?? 0)] : null,
    post,
    dev: g.dev ? Number(g.devN ?? 0) : null,
    local: g.local
      ? g.local
          .toLowerCase()
          .split(/[-_.]/)
          .map((p) => (/^\d+$/.test(p) ? Number(p) : p))
      : [],
    text,
  };
}

export const isPrerelease = (v: Version): boolean => v.pre !== null || v.dev !== null;

function compareRelease(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d) return Math.sign(d);
  }
  return 0;
}

const PRE_ORDER: Record<string, number> = { a: 0, b: 1, rc: 2 };

/** PEP 440's order: a dev release before its pre-releases before the release before its post-releases. */
function phaseKey(v: Version): number[] {
  // [pre phase, pre number, post, dev]: missing parts sort as the spec says
  const pre = v.pre ? [PRE_ORDER[v.pre[0]]!, v.pre[1]] : v.post === null && v.dev !== null ? [-1, 0] : [3, 0];
  const post = v.post === null ? -1 : v.post;
  const dev = v.dev === null ? Number.POSITIVE_INFINITY : v.dev;
  return [...pre, post, dev];
}

export function compareVersions(a: Version, b: Version, withLocal = true): number {
  if (a.epoch !== b.epoch) return Math.sign(a.epoch - b.epoch);
  const release = compareRelease(a.release, b.release);
  if (release) return release;
  const ka = phaseKey(a);
  const kb = phaseKey(b);
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1;
  if (!withLocal) return 0;
  for (let i = 0; i < Math.max(a.local.length, b.local.length); i++) {
    const x = a.local[i];
    const y = b.local[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (typeof x !== typeof y) return typeof x === "number" ? 1 : -1;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

export interface Clause {
  op: "==" | "!=" | "<=" | ">=" | "<" | ">" | "~=" | "===";
  version: string;
}

/** A requirement as a profile writes one: `name[extras] clauses`, without markers or URLs. */
export interface ParsedRequirement {
  name: string;
  clauses: Clause[];
}

/** PyPI's normalised form of a distribution name (PEP 503). */
export const normaliseName = (name: string): string => name.toLowerCase().replace(/[-_.]+/g, "-");

export function parseRequirement(text: string): ParsedRequirement | null {
  const m = /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$/.exec(text);
  if (!m) return null;
  const rest = m[3]!.trim().replace(/^\((.*)\)$/, "$1");
  const clauses: Clause[] = [];
  if (rest) {
    for (const part of rest.split(",")) {
      const c = /^\s*(===|==|!=|<=|>=|~=|<|>)\s*([^\s,]+)\s*$/.exec(part);
      if (!c) return null;
      clauses.push({ op: c[1] as Clause["op"], version: c[2]! });
    }
  }
  return { name: normaliseName(m[1]!), clauses };
}

/** Whether `version` satisfies one clause, as PEP 440 says (wildcards with == and !=, ~= as a compatible release). */
export function satisfiesClause(version: Version, clause: Clause): boolean {
  if (clause.op === "===") return version.text === clause.version;
  if ((clause.op === "==" || clause.op === "!=") && clause.version.endsWith(".*")) {
    const prefix = parseVersion(clause.version.slice(0, -2));
    if (!prefix) return false;
    const matches = version.epoch === prefix.epoch && prefix.release.every((n, i) => (version.release[i] ?? 0) === n);
    return clause.op === "==" ? matches : !matches;
  }
  const target = parseVersion(clause.version);
  if (!target) return false;
  switch (clause.op) {
    case "==":
      return compareVersions(version, target, target.local.length > 0) === 0;
    case "!=":
      return compareVersions(version, target, target.local.length > 0) !== 0;
    case "<=":
      return compareVersions(version, target, false) <= 0;
    case ">=":
      return compareVersions(version, target, false) >= 0;
    // < and > exclude the pre- and post-releases of the version named (PEP 440)
    case "<":
      return (
        compareVersions(version, target, false) < 0 &&
        !(isPrerelease(version) && !isPrerelease(target) && compareRelease(version.release, target.release) === 0)
      );
    case ">":
      return (
        compareVersions(version, target, false) > 0 &&
        !(version.post !== null && target.post === null && compareRelease(version.release, target.release) === 0 && version.pre === null)
      );
    case "~=": {
      if (target.release.length < 2) return false;
      const upper = target.release.slice(0, -1);
      return compareVersions(version, target, false) >= 0 && upper.every((n, i) => (version.release[i] ?? 0) === n);
    }
  }
}

export const satisfies = (version: Version, clauses: Clause[]): boolean => clauses.every((c) => satisfiesClause(version, c));

/** True when the clauses admit a pre-release on their own terms (one of them names one). */
export const clausesNamePrerelease = (clauses: Clause[]): boolean =>
  clauses.some((c) => {
    const v = parseVersion(c.version.replace(/\.\*$/, ""));
    return v !== null && isPrerelease(v);
  });
