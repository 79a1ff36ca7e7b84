import { cp, mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { AgentSpec } from "../schemas/agent.ts";
import { runProcess } from "../executors/processes.ts";
import type { Attempt } from "./environment.ts";
import { agentExecutable } from "./install.ts";
import type { AgentPaths, AgentRequest, ModelTarget } from "./types.ts";

/** A command agent's command line, input, variables and settings for one request, from its adapter's templates. */

/**
 * `{message_file}`: the request's message, written afresh before each request, beside (never in)
 * the workspace, for a harness that takes its message from a file (aider's --message-file keeps a
 * multi-line message out of the command line it logs and later restores as history).
 */
export const messageFileOf = (paths: AgentPaths) => join(paths.sessionDir, "message.txt");

/** The message of a request, from the agent's template: repository, active checkout and text. */
export function agentMessage(agent: AgentSpec, request: AgentRequest): string {
  const values: Record<string, string> = { "{repository}": request.repository, "{checkout}": request.checkout, "{text}": request.text };
  return agent.message.replace(/\{(repository|checkout|text)\}/g, (m) => values[m]!);
}

/** A command agent's argv for a request, its placeholders filled in (each is one argv element's text: nothing is read by a shell). */
export function agentArgv(agent: AgentSpec, request: AgentRequest, paths: AgentPaths, conversation: string): string[] {
  const template = request.continued && agent.continue_command ? agent.continue_command : agent.command!;
  const values: Record<string, string> = {
    "{message}": agentMessage(agent, request),
    "{message_file}": messageFileOf(paths),
    "{text}": request.text,
    "{checkout}": request.checkout,
    "{workspace}": paths.workspace,
    "{repository}": request.repository,
    "{session_dir}": paths.sessionDir,
    "{conversation}": conversation,
    "{model_name}": paths.modelName ?? "",
  };
  const fill = (part: string) =>
    part.replace(/\{(message_file|message|text|checkout|workspace|repository|session_dir|conversation|model_name)\}/g, (m) => values[m]!);
  return template.map(fill);
}

/** A command agent's standard input for a request (its `stdin` template filled in), or empty. */
export function agentStdin(agent: AgentSpec, request: AgentRequest, paths: AgentPaths, conversation: string): string {
  if (agent.stdin === undefined) return "";
  // The same placeholders as a command's, filled the same way: one element of a one-element template.
  return agentArgv({ ...agent, command: [agent.stdin], continue_command: [agent.stdin] }, request, paths, conversation)[0]!;
}

/** A harness's output may be long (a stream of JSON events): kept whole up to this size. */
const AGENT_OUTPUT_LIMIT = 64 * 1024 * 1024;

/**
 * Runs one attempt of a command agent on the host in a process group of its own, killed (the
 * group, and whatever left it) at the budget, and with this process if it is killed first.
 */
export async function runCommand(
  argv: string[],
  cwd: string,
  env: Record<string, string>,
  budgetSeconds: number,
  logFile: string,
  input: string,
): Promise<Attempt> {
  try {
    const done = await runProcess(argv[0]!, argv.slice(1), {
      cwd,
      env,
      timeoutSeconds: budgetSeconds,
      outputLimit: AGENT_OUTPUT_LIMIT,
      killWhenOrphaned: true,
      input,
    });
    await writeFile(logFile, done.output);
    return { exit: done.timedOut ? null : done.code, timedOut: done.timedOut };
  } catch (error) {
    await writeFile(logFile, `could not start ${argv[0]}: ${(error as Error).message}\n`);
    return { exit: 127, timedOut: false };
  }
}

/** The variables a command agent gets from the user's environment: the ones its spec names (and, on the host, enough to run). */
export function agentVariables(agent: AgentSpec, host: boolean): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of [...(host ? ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "TERM"] : []), ...agent.env])
    if (process.env[key] !== undefined) env[key] = process.env[key]!;
  return env;
}

export const fillEndpoint = (text: string, model: ModelTarget | undefined, home: string) =>
  text.replace(/\{(model_url|model_key|model_name|home)\}/g, (m) =>
    m === "{home}" ? home : m === "{model_url}" ? (model?.url ?? "") : m === "{model_key}" ? (model?.key ?? "") : (model?.name ?? ""),
  );

/**
 * Everything set for the agent besides what it passes through: its constant variables, and where
 * it is pointed at a model endpoint, the endpoint's variables; the endpoint's files are written
 * into its home (a file never holds the key: the schema refuses it), and so are its home files.
 */
export async function agentSettings(agent: AgentSpec, model: ModelTarget | undefined, home: string, writeHome: string): Promise<Record<string, string>> {
  const env: Record<string, string> = { ...agent.constant_env };
  if (model && agent.model_endpoint) {
    if (!model.name && agent.model_endpoint.default_model) model = { ...model, name: agent.model_endpoint.default_model };
    for (const [key, value] of Object.entries(agent.model_endpoint.env)) {
      // A variable naming a model when none was given is left unset: the harness keeps its default.
      if (value.includes("{model_name}") && !model.name) continue;
      env[key] = fillEndpoint(value, model, home);
    }
    for (const file of agent.model_endpoint.files) {
      const path = join(writeHome, file.path);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, fillEndpoint(file.content, model, home));
    }
  }
  for (const file of agent.home_files) await cp(file.source, join(writeHome, file.path), { recursive: true });
  return env;
}

export const modelNameOf = (agent: AgentSpec, model: ModelTarget | undefined): { modelName?: string } => {
  const name = model?.name ?? (model ? agent.model_endpoint?.default_model : undefined);
  return name ? { modelName: name } : {};
};

/** command[0] of an installed agent, from its tools directory when it is there. */
export function installedCommand(agent: AgentSpec, toolsDir: string | undefined, argv: string[]): string[] {
  if (!agent.install || !toolsDir) return argv;
  return [agentExecutable(toolsDir, agent, argv[0]!), ...argv.slice(1)];
}
