import { CommitNotInSource, IncompleteSource } from "../pipeline/git.ts";
import { TransientFailure } from "../pipeline/failures.ts";
import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command, CommanderError } from "commander";
import { PipelineError, RunIncomplete } from "../pipeline/engine/engine.ts";
import { InputError } from "../pipeline/validation.ts";
import { registerDemo } from "./commands/demo.ts";
import { registerDoctor } from "./commands/doctor.ts";
import { registerExport } from "./commands/export.ts";
import { registerExtend } from "./commands/extend.ts";
import { registerFidelity } from "./commands/fidelity.ts";
import { registerImages } from "./commands/images.ts";
import { registerMirrors } from "./commands/mirrors.ts";
import { registerRepoInit } from "./commands/repo-init.ts";
import { registerRepoCheck } from "./commands/repo-check.ts";
import { registerRepoLint } from "./commands/repo-lint.ts";
import { registerReport } from "./commands/report.ts";
import { registerRequalify } from "./commands/requalify.ts";
import { registerRun, registerStageCommands } from "./commands/run.ts";
import { registerAudit } from "./commands/audit.ts";
import { registerAuditSwebench } from "./commands/audit-swebench.ts";
import { registerQualifyTask } from "./commands/qualify-task.ts";
import { registerSplitDiff } from "./commands/split-diff.ts";
import { registerSchemas } from "./commands/schemas.ts";
import { registerVerify } from "./commands/verify.ts";
import { registerSession } from "./commands/session.ts";
import { registerModelEndpoint } from "./commands/model-endpoint.ts";
import { registerAgents } from "./commands/agents.ts";
import { registerWorker } from "./commands/worker.ts";
import { ExitCode, type Io, processIo, RunFailed } from "./io.ts";

const VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** The whole command line: one module per command under commands/, each writing through `io`. */
export function buildProgram(io: Io = processIo, exit = new ExitCode()): Command {
  const program = new Command("switch-swe")
    .description("Builds a task-switching benchmark for coding agents from real pull-request histories (the rules: docs/SPEC.md).")
    .version(VERSION, "--version", "print switch-swe's version")
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text) })
    .exitOverride();
  registerRun(program, io, exit);
  registerStageCommands(program, io, exit);
  registerSplitDiff(program, io, exit);
  registerQualifyTask(program, io, exit);
  registerAudit(program, io, exit);
  registerAuditSwebench(program, io, exit);
  registerVerify(program, io, exit);
  registerSession(program, io, exit);
  registerModelEndpoint(program, io, exit);
  registerAgents(program, io, exit);
  registerWorker(program, io, exit);
  registerReport(program, io, exit);
  registerExport(program, io, exit);
  registerExtend(program, io, exit);
  registerDemo(program, io, exit);
  registerDoctor(program, io, exit);
  registerSchemas(program, io, exit);
  registerImages(program, io, exit);
  registerMirrors(program, io, exit);
  const repo = program.command("repo").description("manage repository profiles: draft one, lint them, check one against its records");
  registerRepoInit(repo, io, exit);
  registerRepoCheck(repo, io, exit);
  registerRepoLint(repo, io, exit);
  registerFidelity(program, io, exit);
  registerRequalify(program, io, exit);
  return program;
}

/** An unexpected error: a bug. One line says so and where its details went; `--debug` prints the stack. */
function reportInternalError(io: Io, argv: string[], error: unknown, debug: boolean): number {
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  const logFile = join(tmpdir(), `switch-swe-internal-error-${process.pid}.log`);
  try {
    writeFileSync(logFile, `${new Date().toISOString()} switch-swe ${argv.slice(2).join(" ")}\n${detail}\n`);
  } catch {
    // the message below still says what happened
  }
  const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
  io.err(`switch-swe: internal error: ${message} (a bug in switch-swe; details in ${logFile}${debug ? "" : "; run again with --debug to see the stack"})\n`);
  if (debug) io.err(`${detail}\n`);
  return 1;
}

/**
 * Runs the CLI; returns the exit code: 0 ok, 1 a run or task that failed, 2 bad usage, config or
 * input (one line naming the file and field). This is the one error boundary: anything else is a
 * bug, reported as an internal error.
 */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  const debug = argv.includes("--debug");
  const exit = new ExitCode();
  const program = buildProgram(io, exit);
  for (const command of allCommands(program))
    command
      .exitOverride()
      .configureOutput({ writeOut: (text) => io.out(text), writeErr: (text) => io.err(text) })
      .showHelpAfterError(usageLine(command));
  try {
    await program.parseAsync(argv.filter((a) => a !== "--debug"));
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof InputError || error instanceof PipelineError || (error instanceof Error && error.name === "DiffParseError")) {
      io.err(`switch-swe: ${error.message}\n`);
      return 2;
    }
    // The repository's source lacks what the command needs (a fact about it), or the machine or the
    // network does (a full disk, Redis down, no Docker engine): said as it is, not as a bug.
    if (
      error instanceof RunFailed ||
      error instanceof RunIncomplete ||
      error instanceof CommitNotInSource ||
      error instanceof IncompleteSource ||
      error instanceof TransientFailure
    ) {
      io.err(`switch-swe: ${error.message}\n`);
      return 1;
    }
    return reportInternalError(io, argv, error, debug);
  }
  return exit.value;
}

/**
 * What follows a usage error, as git and gh print it: the command's usage line, never the whole
 * help (which buries the one line that matters; `--help` prints it).
 */
function usageLine(command: Command): string {
  const words: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) words.unshift(c.name());
  return `usage: ${words.join(" ")} ${command.usage()}`;
}

function allCommands(command: Command): Command[] {
  return [command, ...command.commands.flatMap(allCommands)];
}
