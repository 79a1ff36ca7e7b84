import type { Command } from "commander";
import { BUILT_STAGES } from "../../stages/index.ts";
import { RecordError } from "../../pipeline/engine/stage.ts";
import { CommitNotInSource, GitError } from "../../pipeline/git.ts";
import { createLogger } from "../../pipeline/logger.ts";
import { executorOption } from "../execution-options.ts";
import { checkExtensionFile, formatExtendCheck } from "../extending/check.ts";
import { newExtensionFile } from "../extending/new.ts";
import { type ExitCode, type Io, requirePath, RunFailed } from "../io.ts";
import { positiveWholeNumber } from "../numeric-options.ts";

const MIRRORS = "a directory of local copies of the repositories (OWNER__NAME.bundle, .git or a clone), cloned from instead of the profiles' clone_url";

/** `switch-swe extend new | check`: write a task's extension file from its record, and check one stage by stage (docs/EXTENDING.md). */
export function registerExtend(program: Command, io: Io, exit: ExitCode): void {
  const extend = program.command("extend").description("write and check a task's benchmark-authored stages (docs/EXTENDING.md)");
  extend
    .command("new")
    .description("write a skeleton extension file <extensions_dir>/<TASK>.yaml from the task's record (never over an existing file)")
    .argument("<task>", "the task id, as the config's mine stage recorded it")
    .requiredOption("-c, --config <file>", "the pipeline config (its mine stage has run)")
    .option("--mirrors <dir>", MIRRORS)
    .addHelpText("after", "\nExample:\n  switch-swe extend new demo-org__geometry-12 -c data/demo/pipeline.yaml")
    .action(
      exit.act(async (task: string, opts) => {
        requirePath("--config", opts.config, "file");
        requirePath("--mirrors", opts.mirrors, "directory");
        const log = createLogger({ level: "warn", write: (line) => io.err(line + "\n") });
        const path = await newExtensionFile({ stages: BUILT_STAGES, config: opts.config, task, mirrors: opts.mirrors, log });
        io.out(`wrote ${path}\nfill in its empty fields, then: switch-swe extend check ${path} -c ${opts.config}\n`);
        return 0;
      }),
    );
  extend
    .command("check")
    .description(
      "check an extension file stage by stage from the pipeline's cached environments: schema and classes, each stage's patch over those before it, its tests failing before its implementation and passing with it (earlier stages' still passing), and that its request states every name, message, exception type and literal value its tests check; exit 0 when every stage holds, 1 when one does not",
    )
    .argument("<file>", "the extension file, <task id>.yaml")
    .requiredOption("-c, --config <file>", "the pipeline config (its split stage has run)")
    .option("--runs <n>", "runs of each state (qualify's stage runs the config's stages.qualify.runs)", positiveWholeNumber, 1)
    .addOption(executorOption("docker, local or auto (default: the config's; queue runs here with docker)"))
    .option("--mirrors <dir>", MIRRORS)
    .option("--json", "print the answer as JSON")
    .addHelpText("after", "\nExample:\n  switch-swe extend check data/demo/extensions/demo-org__ledger-27.yaml -c data/demo/pipeline.yaml")
    .action(
      exit.act(async (file: string, opts) => {
        requirePath("file", file, "file");
        requirePath("--config", opts.config, "file");
        requirePath("--mirrors", opts.mirrors, "directory");
        const log = createLogger({ level: opts.json ? "warn" : "info", write: (line) => io.err(line + "\n") });
        let report;
        try {
          report = await checkExtensionFile({
            stages: BUILT_STAGES,
            config: opts.config,
            file,
            runs: opts.runs,
            executor: opts.executor === "queue" ? "docker" : opts.executor,
            mirrors: opts.mirrors,
            log,
          });
        } catch (error) {
          // The repository could not be had (no network, a source without the commit): a fact to say, not a bug.
          if (error instanceof GitError || error instanceof CommitNotInSource || error instanceof RecordError) throw new RunFailed(`${file}: ${error.message}`);
          throw error;
        }
        io.out(opts.json ? JSON.stringify(report, null, 2) + "\n" : formatExtendCheck(report));
        return report.holds ? 0 : 1;
      }),
    );
}
