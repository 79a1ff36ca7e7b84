import { realpathSync } from "node:fs";
import { join } from "node:path";
import type { AgentSpec } from "../schemas/agent.ts";
import { environmentExecutable } from "../session/install.ts";
import { InputError } from "../validation.ts";

/**
 * Harbor installs its agents inside the task's container, from the network (Claude Code's
 * installer, nvm and npm, GitHub). Where the container has none, each of Harbor's installed
 * agents checks first whether the harness is there at the version asked (`is_requested_version_installed`),
 * and skips its install if so: the harness switch-swe installed on this machine (`switch-swe agents
 * install`, a native executable for Claude Code, Codex CLI and OpenCode) is mounted read-only at
 * /usr/local/bin/<command>, on the PATH of every exported image, with Harbor's `--mounts`.
 */

/** One entry of Harbor's `--mounts` (Docker Compose's service volume format). */
export interface HarborMount {
  type: "bind";
  source: string;
  target: string;
  read_only: true;
}

/** The mount of an adapter's harness for Harbor's agent of the same harness (its command, e.g. `claude`, at /usr/local/bin). */
export function harborAgentMount(agent: AgentSpec, toolsDir: string): HarborMount {
  if (!agent.install || agent.install.registry !== "npm" || !agent.command)
    throw new InputError(`${agent.name}: not a harness installed from npm (switch-swe agents install): Harbor's own agent of it installs it itself`);
  const command = agent.command[0]!;
  const { installed, path } = environmentExecutable(toolsDir, agent as AgentSpec & { install: NonNullable<AgentSpec["install"]> }, command);
  return { type: "bind", source: realpathSync(join(installed, path)), target: `/usr/local/bin/${command}`, read_only: true };
}
