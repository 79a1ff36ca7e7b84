import type { Command } from "commander";

/**
 * A stage's command (`split`, `qualify`, `audit`), to hang a command of its own under it. Options
 * after the subcommand's name are then the subcommand's: `qualify task ID -c CONFIG` is the task
 * command's --config, not the stage's (commander needs this of every ancestor).
 */
export function stageCommand(program: Command, name: string): Command {
  const command = program.commands.find((c) => c.name() === name);
  if (!command) throw new Error(`the ${name} stage's command must be registered before its subcommands`);
  program.enablePositionalOptions();
  return command.enablePositionalOptions();
}

/**
 * An option that became a command of its own: a script still writing `split --diff F` gets
 * commander's unknown-option error (exit 2), then one line saying what to type now.
 */
export function movedOption(command: Command, flag: string, now: string): void {
  const previous = command.configureOutput().outputError ?? ((text: string, write: (text: string) => void) => write(text));
  const unknown = new RegExp(`^error: unknown option '${flag}(=[^']*)?'`);
  command.configureOutput({
    outputError: (text, write) => {
      previous(text, write);
      if (unknown.test(text)) write(`${command.name()} ${flag} is now a command of its own: ${now}\n`);
    },
  });
}
