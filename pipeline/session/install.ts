/**
 * Harnesses installed from their own registries at the adapter's pinned version, each into a
 * directory of its own under a tools directory (`switch-swe agents install`): npm packages with
 * npm, PyPI packages into a virtual environment. A harness is installed whole or not at all (a
 * partial directory renamed into place), so a killed install is never taken for one.
 */
import { existsSync, readdirSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { runProcess } from "../executors/processes.ts";
import type { AgentInstall, AgentSpec } from "../schemas/agent.ts";

/** Seconds one install command may take. */
const INSTALL_SECONDS = 900;

/** The directory an adapter's pinned harness is installed in. */
export function installDir(toolsDir: string, install: AgentInstall): string {
  return join(toolsDir, `${install.registry}-${install.package.replace(/^@/, "").replace(/\//g, "+")}-${install.version}`);
}

/** Where an installed harness's executables are. */
export function binDir(dir: string, install: AgentInstall): string {
  return install.registry === "npm" ? join(dir, "node_modules", ".bin") : join(dir, "venv", "bin");
}

/** The path of `name` in the agent's installed harness; the bare name when the adapter installs nothing. */
export function agentExecutable(toolsDir: string, agent: AgentSpec, name: string): string {
  if (!agent.install) return name;
  const path = join(binDir(installDir(toolsDir, agent.install), agent.install), name);
  if (!existsSync(path)) throw notInstalled(toolsDir, agent.name, agent.install);
  return path;
}

/**
 * Where `name` is in the agent's installed harness, as a path relative to its install directory,
 * for a run in the environment (where that directory is mounted): the adapter's
 * `environment_executables` entry (its `*`s matched here), else the package's bin entry.
 */
export function environmentExecutable(toolsDir: string, agent: AgentSpec & { install: AgentInstall }, name: string): { installed: string; path: string } {
  const installed = installDir(toolsDir, agent.install);
  const bin = relative(installed, binDir(installed, agent.install));
  const pattern = agent.install.environment_executables[name] ?? join(bin, name);
  if (!existsSync(join(installed, "installed.json"))) throw notInstalled(toolsDir, agent.name, agent.install);
  let matches = [""];
  for (const part of pattern.split("/").filter((p) => p !== "")) {
    if (!part.includes("*")) {
      matches = matches.map((m) => join(m, part));
      continue;
    }
    const re = globSegment(part);
    matches = matches.flatMap((m) => {
      const dir = join(installed, m);
      return existsSync(dir)
        ? readdirSync(dir)
            .filter((n) => re.test(n))
            .sort()
            .map((n) => join(m, n))
        : [];
    });
  }
  matches = matches.filter((m) => existsSync(join(installed, m)));
  if (matches.length !== 1)
    throw new Error(
      `${agent.name}: ${pattern} names ${matches.length === 0 ? "no file" : `${matches.length} files (${matches.join(", ")})`} in ${installed}, where the environment's ${name} was to be`,
    );
  return { installed, path: matches[0]! };
}

/** One path segment's `*` pattern as a regular expression (`*` is any run of characters but `/`). */
function globSegment(part: string): RegExp {
  const literal = (text: string) => text.replace(/[.+?^$(){}|[\]\\]/g, "\\$&");
  return new RegExp(`^${part.split("*").map(literal).join("[^/]*")}$`);
}

const notInstalled = (toolsDir: string, agent: string, install: AgentInstall) =>
  new AgentNotInstalled(
    `${agent}: ${install.package} ${install.version} is not installed in ${toolsDir}: run 'switch-swe agents install <adapter> --tools-dir ${toolsDir}'`,
  );

export class AgentNotInstalled extends Error {
  override name = "AgentNotInstalled";
}

async function run(command: string, args: string[], cwd: string, what: string): Promise<void> {
  const env: Record<string, string> = {};
  for (const key of [
    "PATH",
    "HOME",
    "LANG",
    "TMPDIR",
    "USER",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "NODE_EXTRA_CA_CERTS",
    "PIP_INDEX_URL",
    "PIP_CERT",
    "npm_config_registry",
  ])
    if (process.env[key] !== undefined) env[key] = process.env[key]!;
  const done = await runProcess(command, args, { cwd, env, timeoutSeconds: INSTALL_SECONDS, killWhenOrphaned: true });
  if (done.timedOut || done.code !== 0)
    throw new Error(
      `${what}: ${command} ${args.join(" ")} ${done.timedOut ? `took more than ${INSTALL_SECONDS}s` : `exited with ${done.code}`}:\n${done.output.slice(-2000)}`,
    );
}

/**
 * Installs the adapter's pinned harness unless it is there; returns its directory and whether it
 * was installed now.
 */
export async function installAgent(agent: AgentSpec, toolsDir: string): Promise<{ dir: string; installed: boolean }> {
  const install = agent.install;
  if (!install) throw new Error(`${agent.name}: the adapter names no install (registry, package, version)`);
  const dir = installDir(toolsDir, install);
  if (existsSync(join(dir, "installed.json"))) return { dir, installed: false };
  const partial = `${dir}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  try {
    const what = `installing ${install.package} ${install.version}`;
    if (install.registry === "npm") {
      await writeFile(join(partial, "package.json"), JSON.stringify({ name: "switch-swe-agent", private: true }) + "\n");
      await run("npm", ["install", "--no-audit", "--no-fund", "--save-exact", `${install.package}@${install.version}`], partial, what);
    } else {
      const python = await firstPython(install.python);
      // The virtual environment is made where it stays: its scripts name their interpreter by path.
      await run(python, ["-m", "venv", join(dir, "venv")], partial, what).catch(async (error) => {
        await rm(join(dir, "venv"), { recursive: true, force: true });
        throw error;
      });
      await run(
        join(dir, "venv", "bin", "pip"),
        ["install", "--disable-pip-version-check", "--no-input", `${install.package}==${install.version}`],
        partial,
        what,
      );
      await rename(join(dir, "venv"), join(partial, "venv"));
    }
    await writeFile(join(partial, "installed.json"), JSON.stringify({ ...install, agent: agent.name }, null, 2) + "\n");
    await rm(dir, { recursive: true, force: true });
    await rename(partial, dir);
  } catch (error) {
    await rm(partial, { recursive: true, force: true });
    throw error;
  }
  return { dir, installed: true };
}

async function firstPython(candidates: string[]): Promise<string> {
  for (const name of candidates) {
    const found = await runProcess("sh", ["-c", `command -v ${name}`], { cwd: "/", env: { PATH: process.env.PATH ?? "" }, timeoutSeconds: 10 }).catch(
      () => undefined,
    );
    if (found?.code === 0) return found.output.trim();
  }
  throw new Error(`none of ${candidates.join(", ")} is on PATH`);
}
