import { existsSync } from "node:fs";
import { sessionRunLayout } from "../work-layout.ts";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import type { Logger } from "../logger.ts";
import { buildNetworkSettings } from "../executors/types.ts";
import { AgentEnvironment, type Attempt } from "./environment.ts";
import { isLoopbackUrl, RELAY_MOUNT, startModelRelay } from "./model-relay.ts";
import { environmentExecutable, installDir } from "./install.ts";
import { agentSettings, agentVariables, installedCommand, modelNameOf, runCommand } from "./agent-commands.ts";
import type { AgentPaths, AgentRunOptions } from "./types.ts";

/** Where a command agent runs (on the host, or in the focus task's environment) and how one attempt is run there. */

/** Where a command agent runs, and how one attempt is run there. */
export interface AgentPlace {
  paths: AgentPaths;
  /** The path the agent is given for a checkout of the session. */
  checkout: (sessionPath: string) => string;
  /** Where a file the agent names (its message file, its usage log) is on this machine. */
  hostFile: (path: string) => string;
  attempt: (argv: string[], checkout: string, budgetSeconds: number, logFile: string, input: string) => Promise<Attempt>;
  close: () => Promise<void>;
}

/** The agent's own directory in its environment (its home): the run's `agent` directory on this machine. */
const AGENT_HOME = "/agent";

/** The session paths' common parent (/workspace for /workspace/w00 ...), or / when they have none. */
function commonParent(paths: string[]): string {
  const parents = new Set(paths.map((p) => p.replace(/\/[^/]+\/?$/, "") || "/"));
  return parents.size === 1 ? [...parents][0]! : "/";
}

/**
 * The agent's place: on the host, the checkouts under the run's directory; in the environment,
 * one container of the focus task's image with each checkout mounted at its session path, the
 * agent's own directory at /agent (its home), and the spec's setup commands run first.
 */
export async function agentPlace(options: AgentRunOptions, hostPath: (path: string) => string, logs: string): Promise<AgentPlace> {
  const { agent, runDir } = options;
  if (agent.runs === "host") {
    // An isolated home is the run's own: the harness's settings, state and conversations stay in the run.
    const home = agent.isolated_home ? join(runDir, "home") : (process.env.HOME ?? runDir);
    if (agent.isolated_home) await mkdir(home, { recursive: true });
    const isolated: Record<string, string> = agent.isolated_home
      ? {
          HOME: home,
          XDG_CONFIG_HOME: join(home, ".config"),
          XDG_DATA_HOME: join(home, ".local", "share"),
          XDG_CACHE_HOME: join(home, ".cache"),
          XDG_STATE_HOME: join(home, ".local", "state"),
        }
      : {};
    const env = { ...agentVariables(agent, true), ...isolated, ...(await agentSettings(agent, options.model, home, home)) };
    return {
      paths: { workspace: sessionRunLayout(runDir).workspace, sessionDir: runDir, ...modelNameOf(agent, options.model) },
      checkout: hostPath,
      hostFile: (path) => path,
      attempt: (argv, checkout, budget, logFile, input) => runCommand(installedCommand(agent, options.toolsDir, argv), checkout, env, budget, logFile, input),
      close: async () => undefined,
    };
  }
  return environmentPlace(options, hostPath, logs);
}

/** Where an installed harness's directory is mounted in the environment (read-only). */
const AGENT_TOOLS = "/opt/switch-swe-agent";
/** Where a request's standard input is put for the environment to read (in the agent's directory). */
const REQUEST_INPUT = "request-input.txt";

/** Docker's names for machines, as Node names them. */
const NODE_ARCH: Record<string, string> = { amd64: "x64", arm64: "arm64", arm: "arm", "386": "ia32", ppc64le: "ppc64", s390x: "s390x" };

/**
 * An installed harness for the environment: its directory, to mount, and its commands' paths in
 * the container. It was installed for this machine, so the engine must run this machine's kind
 * of binaries (a Docker Desktop's Linux engine on macOS does not).
 */
async function environmentTools(
  options: AgentRunOptions,
): Promise<{ mount: { host: string; container: string; readOnly: true }; command: (argv: string[]) => string[] } | undefined> {
  const { agent, toolsDir } = options;
  if (!agent.install) return undefined;
  const install = agent.install;
  if (!toolsDir) throw new Error(`${agent.name}: the harness is installed from ${install.registry} (${install.package}), and no tools directory was given`);
  const engine = await options.environment!.docker.version();
  const engineArch = NODE_ARCH[engine.Arch] ?? engine.Arch;
  if (engine.Os !== "linux" || process.platform !== "linux" || engineArch !== process.arch)
    throw new Error(
      `${agent.name}: the harness installed in ${toolsDir} is for this machine (${process.platform}-${process.arch}), and the Docker engine runs ${engine.Os}-${engineArch}: it could not run in the environment`,
    );
  const paths = new Map<string, string>();
  const at = (name: string) => {
    if (!paths.has(name)) paths.set(name, environmentExecutable(toolsDir, { ...agent, install }, name).path);
    return `${AGENT_TOOLS}/${paths.get(name)!}`;
  };
  // Every executable a command names is found before the container starts: a missing one is the adapter's error, said once.
  for (const argv of [agent.command, agent.continue_command]) if (argv) at(argv[0]!);
  return { mount: { host: installDir(toolsDir, install), container: AGENT_TOOLS, readOnly: true }, command: (argv) => [at(argv[0]!), ...argv.slice(1)] };
}

/** The agent's place in the focus task's environment: its container, setup run, and a relay to a loopback endpoint. */
async function environmentPlace(options: AgentRunOptions, hostPath: (path: string) => string, logs: string): Promise<AgentPlace> {
  const { agent, spec, runDir } = options;
  if (!options.environment) throw new Error(`the agent ${agent.name} runs in the environment, which needs a Docker engine and the focus task's image`);
  const agentDir = join(runDir, "agent");
  await mkdir(agentDir, { recursive: true });
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  // With the network, the container reaches it as image builds do: the host's proxy settings and
  // the CA bundle it trusts (behind a TLS-intercepting proxy nothing connects without it).
  const network = agent.network ? buildNetworkSettings() : { vars: {} };
  const ca: Record<string, string> = network.caBundle
    ? { SSL_CERT_FILE: "/run/host-ca.crt", PIP_CERT: "/run/host-ca.crt", REQUESTS_CA_BUNDLE: "/run/host-ca.crt", NODE_EXTRA_CA_CERTS: "/run/host-ca.crt" }
    : {};
  const tools = await environmentTools(options);
  // An endpoint on this machine's loopback is out of the container's reach: it goes through a relay.
  const relay = options.model && isLoopbackUrl(options.model.url) ? await startModelRelay(options.model.url) : undefined;
  let environment: AgentEnvironment;
  try {
    environment = await AgentEnvironment.start({
      docker: options.environment.docker,
      image: options.environment.image,
      mounts: [
        ...spec.checkouts.map((c) => ({ host: hostPath(c.path), container: c.path })),
        { host: agentDir, container: AGENT_HOME },
        ...(network.caBundle ? [{ host: network.caBundle, container: "/run/host-ca.crt", readOnly: true }] : []),
        ...(relay ? [{ host: relay.dir, container: RELAY_MOUNT }] : []),
        ...(tools ? [tools.mount] : []),
      ],
      home: AGENT_HOME,
      user: `${uid}:${gid}`,
      network: agent.network,
      labels: options.environment.labels,
    });
  } catch (error) {
    await relay?.close();
    throw error;
  }
  const model = options.model && relay ? { ...options.model, url: relay.containerUrl } : options.model;
  const variables = { ...network.vars, ...ca, ...agentVariables(agent, false), ...(await agentSettings(agent, model, AGENT_HOME, agentDir)) };
  const stop = async () => {
    await environment.stop();
    await relay?.close();
  };
  try {
    await relay?.startIn(environment, options.environment.image, join(logs, "model-relay.log"));
    for (const [i, command] of agent.setup.entries()) {
      const logFile = join(logs, `setup-${i}.log`);
      const result = await environment.exec(command, { cwd: "/", env: variables, budgetSeconds: agent.setup_timeout_seconds, logFile, asRoot: true });
      if (result.exit !== 0)
        throw new Error(
          `the agent ${agent.name}'s setup command ${JSON.stringify(command)} ${result.timedOut ? `took more than ${agent.setup_timeout_seconds}s` : `exited with ${result.exit}`} (its output: ${logFile})`,
        );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    paths: { workspace: commonParent(spec.checkouts.map((c) => c.path)), sessionDir: AGENT_HOME, ...modelNameOf(agent, options.model) },
    checkout: (path) => path,
    hostFile: (path) => {
      if (path === AGENT_HOME || path.startsWith(`${AGENT_HOME}/`)) return join(agentDir, path.slice(AGENT_HOME.length));
      const checkout = spec.checkouts.find((c) => path === c.path || path.startsWith(`${c.path}/`));
      if (checkout) return join(hostPath(checkout.path), path.slice(checkout.path.length));
      throw new Error(`${path} is not in a directory the agent's environment shares with this machine (${AGENT_HOME} or a checkout)`);
    },
    attempt: async (argv, checkout, budget, logFile, input) => {
      if (agent.stdin !== undefined) await writeFile(join(agentDir, REQUEST_INPUT), input);
      const inputFile = agent.stdin !== undefined ? `${AGENT_HOME}/${REQUEST_INPUT}` : undefined;
      return environment.exec(tools ? tools.command(argv) : argv, {
        cwd: checkout,
        env: variables,
        budgetSeconds: budget,
        logFile,
        ...(inputFile ? { inputFile } : {}),
      });
    },
    close: stop,
  };
}

/** Files harnesses read as instructions or settings from the directories above where they run. */
const HARNESS_INSTRUCTIONS = ["CLAUDE.md", "AGENTS.md", ".claude", "opencode.json", "opencode.jsonc", ".opencode", "CONVENTIONS.md", ".aider.conf.yml"];

/**
 * Harnesses read instructions from the directories above their working directory (Claude Code's
 * CLAUDE.md, Codex's AGENTS.md up to the git root, OpenCode's project config): any found above
 * the workspace would reach the agent although no session has it, so the run says so.
 */
export function warnOfInstructionsAbove(workspace: string, log: Logger): void {
  const found: string[] = [];
  for (let dir = dirname(resolve(workspace)); ; dir = dirname(dir)) {
    for (const name of HARNESS_INSTRUCTIONS) if (existsSync(join(dir, name))) found.push(join(dir, name));
    if (dirname(dir) === dir) break;
  }
  if (found.length)
    log.warn(
      `above the workspace ${workspace}: ${found.join(", ")}; a harness may read them as instructions: keep session runs (--work) outside that directory`,
    );
}
