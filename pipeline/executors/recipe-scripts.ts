import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { hashValue } from "../canonical.ts";
import { git } from "../git.ts";
import { ENVIRONMENT_SCHEME } from "./environment.ts";
import type { EnvironmentRecipe, PythonFloor } from "../schemas/repo-profile.ts";
import { type EnvironmentSpec, STEP_MARKER } from "./types.ts";
import { type CheckoutPins, NO_CHECKOUT_PINS } from "./checkout-pins.ts";

/**
 * The shell scripts that build an environment from a recipe, shared by both executors so a recipe
 * means the same thing in a container and on this machine. Two layers:
 *
 * 1. the environment (per recipe and as-of date): a virtual environment with the build tools, the
 *    runner's own requirements and the recipe's `pip_requirements`;
 * 2. the revision (per environment and base revision), only when the recipe installs something
 *    from the checkout (`requirements_files`, `project`, `install`): the checkout at the base
 *    revision, prepared once, with the repository's own install done in it.
 *
 * Everything that needs the network happens here; a test run needs none.
 */

/** Pins are exact, so the date that admits them does not matter: any date after every release. */
const PIN_EXEMPTION = "2100-01-01T00:00:00Z";

/** What each runner needs in the environment besides the recipe's own requirements. */
export function runnerRequirements(recipe: EnvironmentRecipe): string[] {
  switch (recipe.test_runner) {
    case "pytest":
    case "sympy":
      // -o (ini overrides) arrived in pytest 3.0; an older pytest cannot run with our options.
      return ["pytest>=3.0"];
    case "django":
      return ["unittest-xml-reporting"];
  }
}

/** True when the recipe installs from the checkout: the environment then has a revision layer. */
export function needsRevisionLayer(recipe: EnvironmentRecipe): boolean {
  return recipe.requirements_files.length > 0 || recipe.project !== null || recipe.install.length > 0;
}

/**
 * Names the first layer: only what it is built from (the Python, the packages, what uv is told,
 * the runner's requirements, the date), not the repository nor the fields of the second layer,
 * so recipes that differ only in what they install from the checkout, or in how tests run,
 * share it.
 */
export function environmentLayerKey(env: EnvironmentSpec): string {
  const { recipe } = env;
  return hashValue({
    scheme: ENVIRONMENT_SCHEME,
    python: recipe.python,
    debian_packages: recipe.debian_packages,
    requirements: [...new Set([...runnerRequirements(recipe), ...recipe.pip_requirements])],
    uv: uvFiles(env),
  });
}

/**
 * The version of how a revision layer is resolved (revisionScript), joining its key: 2 resolves a
 * revision as of its own commit date when that is later than its environment's; 3 byte-compiles the
 * prepared checkout and what the layer installed. Revision layers
 * built the old way are never reused; the environments under them are.
 */
const REVISION_SCHEME = 3;

/** Names the prepared checkout of one base revision in one environment. */
export function revisionKey(env: EnvironmentSpec, commit: string): string {
  return hashValue({ environment: env.key, base_commit: commit, revision_scheme: REVISION_SCHEME });
}

function packageOf(requirement: string): string {
  return /^[A-Za-z0-9._-]+/.exec(requirement.trim())?.[0]?.toLowerCase() ?? requirement;
}

const later = (a: string | null, b: string): string => (a && Date.parse(a) > Date.parse(b) ? a : b);

const minor = (python: string) => Number(python.split(".")[1]);

/**
 * The recipe's Python floors that take effect for this environment: its Python is the floor's or
 * later, and its as-of date is before the floor's release (a later date already resolves to a
 * release that runs). Each raises its package to at least that release.
 */
export function raisedFloors(env: EnvironmentSpec): PythonFloor[] {
  const { recipe } = env;
  if (!env.asOf) return [];
  return (recipe.python_floors ?? []).filter(
    (floor) => minor(recipe.python) >= minor(floor.python) && Date.parse(env.asOf!) < Date.parse(normaliseInstant(floor.released)),
  );
}

/**
 * The date a base revision's layer resolves as of: its environment's, or the revision's own
 * commit date when that is later (what its requirement files were written against). Null when the
 * environment has no date: nothing is excluded then.
 */
export function revisionAsOf(env: EnvironmentSpec, checkout: CheckoutPins): string | null {
  if (!env.asOf) return null;
  const committed = checkout.committedAt;
  return committed && Date.parse(committed) > Date.parse(normaliseInstant(env.asOf)) ? committed : env.asOf;
}

/**
 * uv's configuration: the as-of date, its per-package exceptions (the recipe's, the build tools'
 * later date, and pins), as a uv.toml; constraints and build constraints as requirements files.
 * Without `checkout`, the environment's (layer 1); with it, one revision's (layer 2): as of the
 * later of the environment's date and the revision's, the checkout's exact pins past it.
 */
export function uvFiles(
  env: EnvironmentSpec,
  checkout: CheckoutPins = NO_CHECKOUT_PINS,
): { "uv.toml": string; "constraints.txt": string; "build-constraints.txt": string } {
  const { recipe } = env;
  const asOf = revisionAsOf(env, checkout);
  const buildToolsAsOf = later(asOf, normaliseInstant(recipe.build_tools.as_of));
  const exceptions = new Map<string, string>();
  for (const name of [...recipe.build_tools.requirements.map(packageOf), ...recipe.build_tools.backends]) exceptions.set(name.toLowerCase(), buildToolsAsOf);
  // an exception moves a package's date later, never earlier than the task's own (pins go older)
  for (const [name, date] of Object.entries(recipe.as_of_exceptions)) exceptions.set(name.toLowerCase(), later(asOf, normaliseInstant(date)));
  for (const pin of recipe.pins) exceptions.set(packageOf(pin), PIN_EXEMPTION);
  // A floor for the Python used: resolved as of its release at the earliest, and never below it.
  const floors = raisedFloors(env);
  for (const floor of floors) exceptions.set(floor.package.toLowerCase(), later(asOf, normaliseInstant(floor.released)));
  // The checkout's own exact pins (lockstep releases) are exact too: past the date, for the revision layer only.
  for (const pin of checkout.exact) exceptions.set(pin.package, PIN_EXEMPTION);
  const toml = ["[pip]"];
  if (asOf) toml.push(`exclude-newer = "${normaliseInstant(asOf)}"`);
  if (asOf && exceptions.size) {
    toml.push(
      `exclude-newer-package = { ${[...exceptions]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([name, date]) => `"${name}" = "${date}"`)
        .join(", ")} }`,
    );
  }
  if (recipe.no_build_isolation.length) toml.push(`no-build-isolation-package = [${recipe.no_build_isolation.map((n) => `"${n}"`).join(", ")}]`);
  return {
    "uv.toml": toml.join("\n") + "\n",
    "constraints.txt": [...recipe.pins, ...floors.map((f) => `${f.package}>=${f.version}`)].map((p) => `${p}\n`).join(""),
    "build-constraints.txt": recipe.build_tools.requirements.map((r) => `${r}\n`).join(""),
  };
}

/** A date alone means midnight UTC; uv would read it in this machine's time zone. */
export function normaliseInstant(value: string): string {
  return /^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value;
}

export const quote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

function heredoc(path: string, text: string): string {
  return `cat > ${quote(path)} <<'SWITCH_SWE_EOF'\n${text}SWITCH_SWE_EOF\n`;
}

/** The variables every uv call (ours and the recipe's install commands) runs with. */
export function uvEnvironment(paths: { venv: string; config: string; cache: string }): Record<string, string> {
  return {
    VIRTUAL_ENV: paths.venv,
    UV_PYTHON: `${paths.venv}/bin/python`,
    UV_CONFIG_FILE: `${paths.config}/uv.toml`,
    UV_CONSTRAINT: `${paths.config}/constraints.txt`,
    UV_BUILD_CONSTRAINT: `${paths.config}/build-constraints.txt`,
    UV_CACHE_DIR: paths.cache,
    // the cache is shared between builds and may sit on another file system than the environment
    UV_LINK_MODE: "copy",
    UV_NO_PROGRESS: "1",
    PIP_DISABLE_PIP_VERSION_CHECK: "1",
  };
}

function exports(vars: Record<string, string>): string {
  return Object.entries(vars)
    .map(([k, v]) => `export ${k}=${quote(v)}\n`)
    .join("");
}

const step = (what: string) => `echo ${quote(`${STEP_MARKER} ${what}`)}\n`;

/**
 * Layer 1. `interpreter` is a command giving the recipe's Python; when it is absent the script
 * asks uv for a managed Python of that version (downloaded: needs the internet).
 */
export function environmentScript(env: EnvironmentSpec, paths: { venv: string; config: string; cache: string; interpreter: string | null }): string {
  const { recipe } = env;
  const files = uvFiles(env);
  const uv = `${paths.venv}/bin/uv`;
  const buildToolsAsOf = later(env.asOf, normaliseInstant(recipe.build_tools.as_of));
  const requirements = [...new Set([...runnerRequirements(recipe), ...recipe.pip_requirements])];
  let script = "set -eu\n";
  script += `mkdir -p ${quote(paths.config)} ${quote(paths.cache)}\n`;
  for (const [name, text] of Object.entries(files)) script += heredoc(`${paths.config}/${name}`, text);
  script += heredoc(`${paths.config}/${SYNC_SCRIPT_NAME}`, SYNC_SCRIPT);
  if (paths.interpreter) {
    script += step(`creating the virtual environment (Python ${recipe.python})`);
    script += `${paths.interpreter} -m venv ${quote(paths.venv)}\n`;
    script += step("installing uv");
    script += `${quote(`${paths.venv}/bin/python`)} -m pip install --quiet --disable-pip-version-check uv\n`;
  } else {
    // No interpreter of that version here: uv's managed Python, downloaded by a uv installed in a
    // scratch environment of the Python we have, and kept beside the environment.
    const seed = `${paths.config}/seed`;
    script += step(`downloading a uv-managed Python ${recipe.python}`);
    script += `python3 -m venv ${quote(seed)} && ${quote(`${seed}/bin/python`)} -m pip install --quiet --disable-pip-version-check uv\n`;
    script += `export UV_PYTHON_INSTALL_DIR=${quote(`${paths.config}/python`)}\n`;
    script += `${quote(`${seed}/bin/uv`)} python install ${quote(recipe.python)}\n`;
    script += step(`creating the virtual environment (Python ${recipe.python})`);
    script += `${quote(`${seed}/bin/uv`)} venv --quiet --seed --python ${quote(recipe.python)} ${quote(paths.venv)}\n`;
    script += step("installing uv");
    script += `${quote(`${paths.venv}/bin/python`)} -m pip install --quiet --disable-pip-version-check uv\n`;
  }
  script += exports(uvEnvironment(paths));
  script += step(`installing the build tools as of ${buildToolsAsOf}: ${recipe.build_tools.requirements.join(" ")}`);
  // --upgrade: the interpreter's own pip and setuptools (Debian's, say) satisfy "setuptools<70" but are older than the floor
  script += `${uv} pip install --quiet --upgrade --exclude-newer ${quote(buildToolsAsOf)} ${recipe.build_tools.requirements.map(quote).join(" ")}\n`;
  script += step(`installing the requirements${env.asOf ? ` as of ${env.asOf}` : ""}: ${requirements.join(" ")}`);
  script += `${uv} pip install --quiet ${requirements.map(quote).join(" ")}\n`;
  script += `${uv} pip freeze > ${quote(`${paths.config}/environment.txt`)}\n`;
  script += compileStep(`${paths.venv}/bin/python`, paths.config, [`${paths.venv}/lib`]);
  return script;
}

/** Byte-compiles what a layer installed (sync.py compile): test runs write no byte-code, so each would compile it all again. */
function compileStep(python: string, config: string, dirs: string[]): string {
  return step("compiling the installed Python files") + `${quote(python)} ${quote(`${config}/${SYNC_SCRIPT_NAME}`)} compile ${dirs.map(quote).join(" ")}\n`;
}

/**
 * Layer 2, run in the checkout at the base revision: its list of files is taken first (a test run
 * removes those its own checkout lacks), then the requirements files, the project and the
 * recipe's install commands.
 */
export function revisionScript(
  env: EnvironmentSpec,
  paths: { venv: string; config: string; cache: string; work: string; baseFiles: string; python: string },
  version: string,
  checkout: CheckoutPins = NO_CHECKOUT_PINS,
): string {
  const { recipe } = env;
  const uv = `${paths.venv}/bin/uv`;
  let script = "set -eu\n";
  script += `cd ${quote(paths.work)}\n`;
  // The copy has no .git, and setuptools-scm (and its kin) read the version from git: a repository
  // of one commit, tagged with the revision's nearest tag, gives them that version. Made after the
  // file list, so it is not part of the checkout. Without git (an old base image), the version is
  // pretended instead, for every package built here (an sdist dependency built with setuptools-scm
  // then gets it too: a reason to have git).
  script += "if command -v git >/dev/null 2>&1; then\n";
  script += `  git init -q && git add -A -f && git -c user.name=switch-swe -c user.email=switch-swe@localhost -c commit.gpgsign=false commit -q --no-verify -m ${quote(`base revision (switch-swe), version ${version}`)} && git tag -- ${quote(version)}\n`;
  script += "else\n";
  script += `  export SETUPTOOLS_SCM_PRETEND_VERSION=${quote(version)}\n`;
  script += "fi\n";
  script += `${paths.python} ${quote(`${paths.config}/${SYNC_SCRIPT_NAME}`)} list . > ${quote(paths.baseFiles)}\n`;
  script += exports(uvEnvironment(paths));
  script += revisionDating(env, paths.config, checkout);
  // The recipe's install commands find the environment's uv, python and pip first.
  script += `export PATH=${quote(`${paths.venv}/bin`)}:"$PATH"\n`;
  for (const file of recipe.requirements_files) {
    script += step(`installing ${file} from the checkout`);
    script += `${uv} pip install --quiet -r ${quote(file)}\n`;
  }
  if (recipe.project) {
    const target = recipe.project.extras.length ? `.[${recipe.project.extras.join(",")}]` : ".";
    script += step(`installing the repository${recipe.project.editable ? " (editable)" : ""}: ${target}`);
    script += `${uv} pip install --quiet ${recipe.project.editable ? "-e " : ""}${quote(target)}\n`;
  }
  for (const command of recipe.install) {
    script += step(`running ${command}`);
    script += `${command}\n`;
  }
  script += `${uv} pip freeze > ${quote(`${paths.config}/revision.txt`)}\n`;
  // The checkout too: its unchanged modules then load compiled in every run (their hash is checked).
  script += compileStep(`${paths.venv}/bin/python`, paths.config, [`${paths.venv}/lib`, "."]);
  return script;
}

/**
 * The revision's own uv.toml, when the revision asks more than its environment's date: a later
 * commit date (a later task of a shared environment; pylint's `typing-extensions~=4.3`), or exact
 * pins (pylint pins the astroid released beside it, after the commit).
 */
function revisionDating(env: EnvironmentSpec, config: string, checkout: CheckoutPins): string {
  const asOf = revisionAsOf(env, checkout);
  if (!env.asOf || (asOf === env.asOf && !checkout.exact.length)) return "";
  let script = "";
  if (asOf !== env.asOf) script += step(`resolving the revision as of its own commit date ${asOf}, later than the environment's ${env.asOf}`);
  if (checkout.exact.length) {
    const pins = checkout.exact.map((p) => `${p.package}==${p.version} (${p.file})`).join(", ");
    script += step(`letting past the as-of date what the checkout pins exactly: ${pins}`);
  }
  script += heredoc(`${config}/revision-uv.toml`, uvFiles(env, checkout)["uv.toml"]);
  return script + `export UV_CONFIG_FILE=${quote(`${config}/revision-uv.toml`)}\n`;
}

/**
 * The version a checkout was at, from its nearest tag (v1.2.3 → 1.2.3), for build backends that
 * read it from git; "0.0.0" when there is no usable tag (a mirror without tags, say).
 */
export async function revisionVersion(checkoutDir: string): Promise<string> {
  const tag = (await git(["describe", "--tags", "--abbrev=0"], { cwd: checkoutDir }).catch(() => "")).trim().replace(/^v/i, "");
  return /^\d+(\.\d+)*([.-]?(a|b|rc|post|dev)\d*)*$/i.test(tag) ? tag : "0.0.0";
}

/** Makes a prepared checkout match a run's checkout (see sync.py); written next to uv.toml. */
export const SYNC_SCRIPT = readFileSync(fileURLToPath(new URL("./sync.py", import.meta.url)), "utf8");
export const SYNC_SCRIPT_NAME = "switch_swe_sync.py";
