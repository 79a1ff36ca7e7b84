import { basename, relative } from "node:path";
import type { AgentSpec } from "../schemas/agent.ts";
import { binDir, installDir } from "../session/install.ts";
import { loadAgent } from "../session/agents.ts";
import { InputError } from "../validation.ts";

/**
 * The harnesses the session agent can drive in a Harbor task, from switch-swe's adapters: those
 * that run in the focus task's environment from an npm install of this machine's (a native
 * executable the wrapper uploads into the container), with no setup commands, plugin files, usage
 * file or context relay. Claude Code, Codex CLI and OpenCode are such.
 */
export const DEFAULT_HARBOR_ADAPTERS = ["claude-code-environment.yaml", "codex-environment.yaml", "opencode-environment.yaml"];

/** The adapter as the session agent reads it (switch_swe_harbor/adapters/<harness>.json). */
export interface WrapperAdapter {
  name: string;
  adapter: string;
  install: { package: string; version: string; dir: string };
  executables: Record<string, string>;
  message: string;
  working_directory: AgentSpec["working_directory"];
  conversation: AgentSpec["conversation"];
  command: string[];
  continue_command?: string[];
  stdin?: string;
  usage?: AgentSpec["usage"];
  model_endpoint?: AgentSpec["model_endpoint"];
  constant_env: Record<string, string>;
  env: string[];
}

/** Why the session agent cannot drive an adapter, or undefined when it can. */
function unsupported(agent: AgentSpec): string | undefined {
  if (agent.runs !== "environment") return "it runs on the host; the session agent runs harnesses in the task's container (use its -environment adapter)";
  if (!agent.command) return "it is a scripted agent, built into switch-swe";
  if (agent.install?.registry !== "npm") return "its harness is not an npm install of this machine's the agent can upload";
  if (agent.setup.length) return "it has setup commands";
  if (agent.home_files.length) return "it puts plugin files into the agent's home";
  if (agent.usage_file) return "it reads usage from a file of the harness";
  if (agent.context_relay) return "it runs a context relay on this machine";
  if ([...agent.command, ...(agent.continue_command ?? []), agent.stdin ?? ""].some((p) => p.includes("{message_file}")))
    return "it reads its message from a file";
  return undefined;
}

/** An adapter made the session agent's: its harness named without `-environment`, executables as paths inside the install. */
export function wrapperAdapter(file: string): WrapperAdapter {
  const agent = loadAgent(file);
  const why = unsupported(agent);
  if (why) throw new InputError(`${file}: the Harbor session agent cannot run ${agent.name}: ${why}`);
  const install = agent.install!;
  const dir = installDir("/", install).slice(1);
  const names = new Set([agent.command![0]!, ...(agent.continue_command ? [agent.continue_command[0]!] : [])]);
  const executables = Object.fromEntries(
    [...names].map((name) => [
      name,
      install.environment_executables[name] ?? `${relative(installDir("/", install), binDir(installDir("/", install), install))}/${name}`,
    ]),
  );
  return {
    name: agent.name.replace(/-environment$/, ""),
    adapter: basename(file),
    install: { package: install.package, version: install.version, dir },
    executables,
    message: agent.message,
    working_directory: agent.working_directory,
    conversation: agent.conversation,
    command: agent.command!,
    ...(agent.continue_command ? { continue_command: agent.continue_command } : {}),
    ...(agent.stdin !== undefined ? { stdin: agent.stdin } : {}),
    ...(agent.usage ? { usage: agent.usage } : {}),
    ...(agent.model_endpoint ? { model_endpoint: agent.model_endpoint } : {}),
    constant_env: agent.constant_env,
    env: agent.env,
  };
}
