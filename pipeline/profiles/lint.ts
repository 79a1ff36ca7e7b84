import { acceptedPythons, recipeFor } from "./recipes.ts";
import { effectiveAsOf } from "./environments.ts";
import { runnerRequirements } from "../executors/recipe-scripts.ts";
import type { EnvironmentRecipe, RepoProfile } from "../schemas/repo-profile.ts";
import { clausesNamePrerelease, isPrerelease, normaliseName, parseRequirement, parseVersion, satisfies } from "./pep440.ts";
import { type PypiIndex, type PypiRelease, PypiUnreachable } from "./pypi.ts";

/**
 * `repo lint`: every contradiction in a profile that can be seen without building anything,
 * named by file, field and rule, so a profile that cannot work is refused before a build is tried.
 */

export const LINT_RULES = {
  "pin-vs-build-tools": "a pin that the build tools' own requirement excludes (setuptools==70.0.0 beside setuptools<70): no resolution exists",
  "pin-twice": "one package pinned twice with different versions",
  "pin-vs-requirement": "a pin outside the version range a requirement of the same recipe asks for",
  "pin-not-on-pypi": "a pinned version PyPI does not have",
  "python-not-offered": "a recipe whose every accepted Python needs a download the executors cannot make offline: add a fallback they offer",
  "override-never-applies":
    "an override naming a version no record has and that is no release line of the project (X.Y, or the development line after a released X.(Y-1)), a task no record is, or a Python no era accepts",
  "no-release-as-of": "a requirement with no release satisfying it (for the Python of the recipe) as of the era's date: uv finds no solution",
  "unknown-project": "a requirement or pin of a project PyPI does not know",
  "python-floor":
    "a Python floor (python_floors) PyPI does not bear out (no such release, or one published at another time than `released` says), or that a pin of the same package below it contradicts where it applies",
} as const;
export type LintRule = keyof typeof LINT_RULES;

export interface LintFinding {
  file: string;
  field: string;
  rule: LintRule;
  message: string;
}

/** A record the lint knows of: its era (SWE-bench version) and date. */
export interface LintRecord {
  instance_id: string;
  repo: string;
  version?: string;
  created_at?: string;
}

export interface LintOptions {
  /** Versions the executors offer without a download (the Docker executor's Debian suites). */
  offered: string[];
  pypi: PypiIndex;
  /** The profile's project name on PyPI, for telling real release lines from typos (default: the repository's name). */
  records: LintRecord[];
}

const packageName = (requirement: string): string => normaliseName(/^[A-Za-z0-9._-]+/.exec(requirement.trim())?.[0] ?? requirement);

/** Which field of the profile gave a resolved recipe's value: the last applying override that set it, else the base recipe. */
function fieldSource(profile: RepoProfile, task: { id: string; version?: string }, python: string, field: keyof EnvironmentRecipe): string {
  let source = `environment.${field}`;
  profile.environment_overrides.forEach((o, i) => {
    const names = (!o.versions.length && !o.tasks.length) || o.tasks.includes(task.id) || (task.version !== undefined && o.versions.includes(task.version));
    const applies = names && (!o.pythons.length || o.pythons.includes(python));
    if (applies && (o.recipe as Record<string, unknown>)[field] !== undefined) source = `environment_overrides[${i}].recipe.${field}`;
  });
  return source;
}

interface Era {
  label: string;
  task: { id: string; version?: string };
  /** The earliest record of the era: dependencies are resolved as of it. */
  asOf: string | null;
}

/** The eras to check: each version a record has or an override names, each task an override names, and the base recipe. */
function erasOf(profile: RepoProfile, records: LintRecord[]): Era[] {
  const mine = records.filter((r) => r.repo === profile.repo);
  const earliest = (rs: LintRecord[]) =>
    rs
      .map((r) => r.created_at)
      .filter((d): d is string => Boolean(d))
      .sort()[0] ?? null;
  const versions = new Set<string | undefined>([undefined, ...mine.map((r) => r.version), ...profile.environment_overrides.flatMap((o) => o.versions)]);
  const eras: Era[] = [...versions].map((version) => ({
    label: version === undefined ? "the base recipe" : `version ${version}`,
    task: { id: `${profile.repo.replace("/", "__")}-lint`, ...(version !== undefined ? { version } : {}) },
    asOf: earliest(mine.filter((r) => r.version === version)),
  }));
  for (const id of new Set(profile.environment_overrides.flatMap((o) => o.tasks))) {
    const record = mine.find((r) => r.instance_id === id);
    eras.push({ label: `task ${id}`, task: { id, ...(record?.version ? { version: record.version } : {}) }, asOf: record?.created_at ?? null });
  }
  return eras;
}

const later = (a: string | null, b: string): string => (a && Date.parse(a) > Date.parse(b) ? a : b);
const day = (instant: string) => instant.slice(0, 10);

export async function lintProfile(file: string, profile: RepoProfile, options: LintOptions): Promise<LintFinding[]> {
  const findings = new Map<string, LintFinding>();
  const add = (field: string, rule: LintRule, message: string) => findings.set(`${field}\u0000${rule}\u0000${message}`, { file, field, rule, message });
  const pypi = async (name: string, version?: string): Promise<PypiRelease[] | null | "unreachable"> => {
    try {
      return await options.pypi.releases(name, version);
    } catch (error) {
      if (error instanceof PypiUnreachable) return "unreachable";
      throw error;
    }
  };
  const unreachable = (field: string, what: string) =>
    add(field, "unknown-project", `${what} could not be checked: PyPI could not be asked (see the message above); run the lint again`);

  const eras = erasOf(profile, options.records);
  const everAccepted = new Set<string>();
  for (const era of eras) {
    const accepted = acceptedPythons(profile, era.task);
    accepted.forEach((p) => everAccepted.add(p));
    if (!accepted.some((p) => options.offered.includes(p))) {
      add(
        fieldSource(profile, era.task, accepted[0]!, "python"),
        "python-not-offered",
        `${era.label} accepts Python ${accepted.join(", ")}; the executors offer ${options.offered.join(", ")} without a download, so offline it can never be built: add one of those as a fallback`,
      );
    }
    for (const python of accepted) await lintRecipe(profile, era, python, recipeFor(profile, era.task, python), options, add, pypi, unreachable);
  }
  await lintOverrides(profile, options, everAccepted, add, pypi, unreachable);
  return [...findings.values()].sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : a.message < b.message ? -1 : 1));
}

type Add = (field: string, rule: LintRule, message: string) => void;
type Ask = (name: string, version?: string) => Promise<PypiRelease[] | null | "unreachable">;

/** What the checks of one recipe (an era on one Python) share. */
interface RecipeContext {
  era: Era;
  python: string;
  recipe: EnvironmentRecipe;
  /** Where a field of this recipe comes from, as a finding names it. */
  where: (field: keyof EnvironmentRecipe) => string;
  /** The era and Python, as a message starts. */
  on: string;
  /** Pinned versions by normalised package name. */
  pins: Map<string, string[]>;
  add: Add;
  pypi: Ask;
  unreachable: (field: string, what: string) => void;
}

async function lintRecipe(
  profile: RepoProfile,
  era: Era,
  python: string,
  recipe: EnvironmentRecipe,
  options: LintOptions,
  add: Add,
  pypi: Ask,
  unreachable: (field: string, what: string) => void,
): Promise<void> {
  const pins = new Map<string, string[]>();
  for (const pin of recipe.pins) {
    const [name, version] = pin.split("==") as [string, string];
    const key = normaliseName(name.replace(/\[.*\]$/, ""));
    pins.set(key, [...(pins.get(key) ?? []), version]);
  }
  const context: RecipeContext = {
    era,
    python,
    recipe,
    where: (field) => fieldSource(profile, era.task, python, field),
    on: `${era.label} on Python ${python}`,
    pins,
    add,
    pypi,
    unreachable,
  };
  lintPinsAgainstRequirements(context);
  await lintPinsOnPypi(context);
  await lintPythonFloors(context);
  await lintRequirementsAsOf(context);
}

/** Each package pinned once, and every pin within what the build tools, the requirements and the runner ask of it. */
function lintPinsAgainstRequirements({ recipe, where, on, pins, add }: RecipeContext): void {
  for (const [name, versions] of pins) {
    if (new Set(versions).size > 1) add(where("pins"), "pin-twice", `${on}: ${name} is pinned to ${[...new Set(versions)].join(" and ")}`);
  }
  const requirementSets: [keyof EnvironmentRecipe | "runner", string[]][] = [
    ["build_tools", recipe.build_tools.requirements],
    ["pip_requirements", recipe.pip_requirements],
    ["runner", runnerRequirements(recipe)],
  ];
  for (const [field, requirements] of requirementSets) {
    for (const text of requirements) {
      const parsed = parseRequirement(text);
      const pinned = parsed && pins.get(parsed.name);
      if (!parsed || !pinned) continue;
      for (const version of new Set(pinned)) {
        const v = parseVersion(version);
        if (v && !satisfies(v, parsed.clauses)) {
          const rule: LintRule = field === "build_tools" ? "pin-vs-build-tools" : "pin-vs-requirement";
          const whose =
            field === "build_tools"
              ? `the build tools' requirement ${text} (${where("build_tools")})`
              : field === "runner"
                ? `the ${recipe.test_runner} runner's own requirement ${text}`
                : `the requirement ${text}`;
          add(where("pins"), rule, `${on}: the pin ${parsed.name}==${version} contradicts ${whose}`);
        }
      }
    }
  }
}

/** Each pin a release PyPI has. */
async function lintPinsOnPypi({ where, on, pins, add, pypi, unreachable }: RecipeContext): Promise<void> {
  for (const [name, versions] of pins) {
    for (const version of new Set(versions)) {
      const releases = await pypi(name, version);
      if (releases === "unreachable") {
        unreachable(where("pins"), `the pin ${name}==${version}`);
        continue;
      }
      if (releases === null) {
        add(where("pins"), "unknown-project", `${on}: PyPI has no project ${name}`);
        continue;
      }
      const sameVersion = (r: PypiRelease) => {
        const a = parseVersion(r.version);
        return a !== null && parseVersion(version) !== null && satisfies(a, [{ op: "==", version }]);
      };
      const release = releases.find((r) => r.version === version) ?? releases.find(sameVersion);
      if (!release) add(where("pins"), "pin-not-on-pypi", `${on}: PyPI has no release ${version} of ${name}`);
    }
  }
}

/**
 * A floor raises a package to the oldest release that runs on the Python used: that release must
 * exist on PyPI and have been published when `released` says (the date is what moves uv), and a
 * pin of the same package below it, where it applies, leaves no resolution.
 */
async function lintPythonFloors({ python, recipe, where, on, pins, add, pypi, unreachable }: RecipeContext): Promise<void> {
  for (const floor of recipe.python_floors ?? []) {
    const name = normaliseName(floor.package);
    const applies = Number(python.split(".")[1]) >= Number(floor.python.split(".")[1]);
    const floorVersion = parseVersion(floor.version);
    for (const pinned of pins.get(name) ?? []) {
      const v = parseVersion(pinned);
      if (applies && v && floorVersion && !satisfies(v, [{ op: ">=", version: floor.version }]))
        add(
          where("pins"),
          "python-floor",
          `${on}: the pin ${name}==${pinned} is below the floor ${name}>=${floor.version} for Python ${floor.python} (${where("python_floors")})`,
        );
    }
    const releases = await pypi(name, floor.version);
    if (releases === "unreachable") {
      unreachable(where("python_floors"), `the floor ${name}>=${floor.version}`);
      continue;
    }
    const release = releases?.find((r) => r.version === floor.version);
    if (!release) {
      add(where("python_floors"), "python-floor", `${on}: PyPI has no release ${floor.version} of ${name}`);
      continue;
    }
    const stated = Date.parse(floor.released.length === 10 ? `${floor.released}T00:00:00Z` : floor.released);
    // uv compares upload times: a `released` before the upload would not admit the release.
    if (stated < Date.parse(release.uploaded) || stated - Date.parse(release.uploaded) > 86_400_000)
      add(
        where("python_floors"),
        "python-floor",
        `${on}: ${name} ${floor.version} was uploaded at ${release.uploaded}, not at ${floor.released}: set released to that time (no earlier, or uv will not admit it)`,
      );
  }
}

/** Requirements resolved as of the era's date: some release for this Python must satisfy each. */
async function lintRequirementsAsOf({ era, python, recipe, where, on, pins, add, pypi, unreachable }: RecipeContext): Promise<void> {
  const eraAsOf = effectiveAsOf(era.asOf, recipe.as_of_not_before);
  if (!eraAsOf) return;
  const buildToolsAsOf = later(eraAsOf, recipe.build_tools.as_of.length === 10 ? `${recipe.build_tools.as_of}T00:00:00Z` : recipe.build_tools.as_of);
  const exceptions = new Map(
    Object.entries(recipe.as_of_exceptions).map(([k, v]) => [normaliseName(k), later(eraAsOf, v.length === 10 ? `${v}T00:00:00Z` : v)]),
  );
  // A floor for this Python moves its package's date to the floor's release, as the build does.
  for (const floor of recipe.python_floors ?? [])
    if (Number(python.split(".")[1]) >= Number(floor.python.split(".")[1])) {
      const name = normaliseName(floor.package);
      exceptions.set(name, later(exceptions.get(name) ?? eraAsOf, floor.released.length === 10 ? `${floor.released}T00:00:00Z` : floor.released));
    }
  const buildToolNames = new Set([...recipe.build_tools.requirements.map(packageName), ...recipe.build_tools.backends.map(normaliseName)]);
  const resolved: [string, string][] = [
    ...recipe.pip_requirements.map((r): [string, string] => [r, "pip_requirements"]),
    ...runnerRequirements(recipe).map((r): [string, string] => [r, "runner"]),
  ];
  for (const [text, field] of resolved) {
    const parsed = parseRequirement(text);
    if (!parsed || pins.has(parsed.name)) continue;
    const asOf = buildToolNames.has(parsed.name) ? buildToolsAsOf : (exceptions.get(parsed.name) ?? eraAsOf);
    const releases = await pypi(parsed.name);
    const fieldName = field === "runner" ? where("test_runner") : where("pip_requirements");
    if (releases === "unreachable") {
      unreachable(fieldName, `the requirement ${text}`);
      continue;
    }
    if (releases === null) {
      add(fieldName, "unknown-project", `${on}: PyPI has no project ${parsed.name} (${text})`);
      continue;
    }
    const allowPre = clausesNamePrerelease(parsed.clauses);
    const fits = (r: PypiRelease) => {
      const v = parseVersion(r.version);
      if (!v || r.yanked || (!allowPre && isPrerelease(v)) || !satisfies(v, parsed.clauses)) return false;
      const requires = r.requires_python ? parseRequirement(`python${r.requires_python}`) : null;
      const py = parseVersion(python);
      return !requires || !py || satisfies(py, requires.clauses);
    };
    if (!releases.some((r) => r.uploaded <= asOf && fits(r))) {
      const first = releases.find(fits);
      const whose = field === "runner" ? ` (the ${recipe.test_runner} runner's own requirement)` : "";
      const moved = exceptions.has(parsed.name)
        ? "moved by as_of_exceptions"
        : eraAsOf !== era.asOf
          ? "the recipe's as_of_not_before"
          : "the era's earliest record";
      add(
        fieldName,
        "no-release-as-of",
        `${on}: ${text}${whose} has no release for Python ${python} as of ${day(asOf)} (${moved})${first ? `; the first is ${first.version} of ${day(first.uploaded)}: add ${parsed.name} to as_of_exceptions, or pin it` : "; none at all"}`,
      );
    }
  }
}

async function lintOverrides(
  profile: RepoProfile,
  options: LintOptions,
  everAccepted: Set<string>,
  add: Add,
  pypi: Ask,
  unreachable: (field: string, what: string) => void,
): Promise<void> {
  const mine = options.records.filter((r) => r.repo === profile.repo);
  const versions = new Set(mine.map((r) => r.version).filter(Boolean));
  const ids = new Set(mine.map((r) => r.instance_id));
  const projectName = profile.pypi_name ?? profile.repo.split("/")[1]!;
  for (const [i, override] of profile.environment_overrides.entries()) {
    for (const version of override.versions) {
      if (versions.has(version)) continue;
      // A version no record names may still be a real era: one the project released on PyPI.
      const releases = await pypi(projectName);
      if (releases === "unreachable") {
        unreachable(`environment_overrides[${i}].versions`, `version ${version}`);
        continue;
      }
      if (!isReleaseLine(version, releases ?? []))
        add(
          `environment_overrides[${i}].versions`,
          "override-never-applies",
          `no record has version ${version}${releases ? `, and it is no release line of ${projectName} on PyPI (nor the development line after one)` : ` (and PyPI has no project ${projectName}: set pypi_name)`}`,
        );
    }
    if (mine.length)
      for (const id of override.tasks) if (!ids.has(id)) add(`environment_overrides[${i}].tasks`, "override-never-applies", `no record is task ${id}`);
    for (const python of override.pythons)
      if (!everAccepted.has(python))
        add(
          `environment_overrides[${i}].pythons`,
          "override-never-applies",
          `no era of the profile accepts Python ${python}, so this override is never chosen`,
        );
  }
}

/**
 * Whether a SWE-bench version names an era of the project: a release line X.Y it published (1.3 for
 * 1.3.0, 1.3.2, …), or the development line after a released X.(Y-1) that was never released under
 * that name (SWE-bench calls pytest's road from 6.2 to 7.0 "6.3"). "v5.3" is read as 5.3.
 */
export function isReleaseLine(version: string, releases: PypiRelease[]): boolean {
  const m = /^v?(\d+)\.(\d+)$/.exec(version);
  if (!m) return false;
  const lines = new Set(
    releases.flatMap((r) => {
      const v = parseVersion(r.version);
      return v ? [`${v.release[0]}.${v.release[1] ?? 0}`] : [];
    }),
  );
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return lines.has(`${major}.${minor}`) || (minor > 0 && lines.has(`${major}.${minor - 1}`));
}
