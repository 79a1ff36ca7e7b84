import type { Command } from "commander";
import { resolve } from "node:path";
import { harborAgentMount } from "../../pipeline/harbor/agent-mounts.ts";
import { installAgent } from "../../pipeline/session/install.ts";
import { DEFAULT_TOOLS_DIR, loadAgent } from "../../pipeline/session/agents.ts";
import { type ExitCode, type Io, requirePath } from "../io.ts";

export function registerAgents(program: Command, io: Io, exit: ExitCode): void {
  const agents = program.command("agents").description("the coding-agent harnesses the session runner drives");
  agents
    .command("install")
    .description("install each adapter's harness from its own registry at its pinned version (npm or PyPI), unless it is installed")
    .argument("<adapter...>", "agent descriptions (data/agents/*.yaml) that name an install")
    .option("--tools-dir <dir>", "where the harnesses go (session run --tools-dir looks there)", DEFAULT_TOOLS_DIR)
    .addHelpText("after", "\nExample:\n  switch-swe agents install data/agents/claude-code.yaml")
    .action(
      exit.act(async (adapters: string[], opts) => {
        for (const file of adapters) requirePath("<adapter>", file, "file");
        for (const file of adapters) {
          const agent = loadAgent(file);
          const { dir, installed } = await installAgent(agent, opts.toolsDir);
          io.out(`${agent.name}: ${agent.install!.package} ${agent.install!.version} ${installed ? "installed in" : "already in"} ${dir}\n`);
        }
        return 0;
      }),
    );
  agents
    .command("harbor-mounts")
    .description(
      "Harbor's --mounts for its own agents of these harnesses, each mounting the one installed here, so Harbor skips its install from the network (docs/HARBOR.md)",
    )
    .argument("<adapter...>", "agent descriptions (data/agents/*-environment.yaml) of installed harnesses")
    .option("--tools-dir <dir>", "where the harnesses were installed", DEFAULT_TOOLS_DIR)
    .addHelpText(
      "after",
      '\nExample:\n  switch-swe agents harbor-mounts data/agents/claude-code-environment.yaml\n  harbor run -p tasks -a claude-code --mounts "$(switch-swe agents harbor-mounts data/agents/claude-code-environment.yaml)" ...',
    )
    .action(
      exit.act(async (adapters: string[], opts) => {
        for (const file of adapters) requirePath("<adapter>", file, "file");
        io.out(JSON.stringify(adapters.map((file) => harborAgentMount(loadAgent(file), resolve(opts.toolsDir)))) + "\n");
        return 0;
      }),
    );
}
