import type { Command } from "commander";
import { BUILT_STAGES } from "../../stages/index.ts";
import { CommitNotInSource, GitError } from "../../pipeline/git.ts";
import { createLogger } from "../../pipeline/logger.ts";
import { completePipelineSources, type RepositoryCompletion } from "../../pipeline/project/complete-sources.ts";
import { Project } from "../../pipeline/project/project.ts";
import { MIRRORS_HELP } from "../execution-options.ts";
import { type ExitCode, type Io, requirePath, RunFailed } from "../io.ts";

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** What completing a repository's mirror did, in lines a maintainer reads. */
function formatCompletion(done: RepositoryCompletion): string {
  const lines = [`${done.repo}: ${done.commits} base commit(s), ${done.missing} file content(s) missing from ${done.mirror}`];
  if (done.absentCommits.length) lines.push(`  not in its source, so not looked at: ${done.absentCommits.map((c) => c.slice(0, 12)).join(", ")}`);
  for (const f of done.filled) lines.push(`  written  ${f.paths.join(", ")}  (blob ${f.id.slice(0, 12)}, from ${f.from})`);
  for (const l of done.left) lines.push(`  missing  ${l.paths.join(", ")}  (blob ${l.id.slice(0, 12)})`);
  return lines.join("\n") + "\n";
}

/** `switch-swe mirrors complete`: the work directory's mirrors completed from published files (pipeline/checkouts/complete-source.ts). */
export function registerMirrors(program: Command, io: Io, exit: ExitCode): void {
  const mirrors = program.command("mirrors").description("the work directory's copies of the repositories");
  mirrors
    .command("complete")
    .description(
      "write into the work directory's mirrors the file contents a snapshot lacks (incomplete_source), from directories or tar archives that hold the same files: a file is taken only where its git blob id is the one the commit names",
    )
    .requiredOption("-c, --config <file>", "pipeline config whose split stage has run")
    .requiredOption(
      "--from <path>",
      "a directory or a tar archive (.tar, .tar.gz, .tgz, .tar.bz2, .tar.xz) holding the files, such as a release's sdist (repeatable)",
      collect,
    )
    .option("--mirrors <dir>", MIRRORS_HELP)
    .addHelpText(
      "after",
      "\nExit 0 when no base commit of a split task lacks a file's contents any more, 1 when some still do.\n\nExample:\n  switch-swe mirrors complete -c data/benchmarks/switch-swe-lite.yaml --from /tmp/sdists/pvlib-0.10.3.tar.gz\n  (the sdist from: pip download pvlib==0.10.3 --no-deps --no-binary :all: -d /tmp/sdists)",
    )
    .action(
      exit.act(async (opts: { config: string; from: string[]; mirrors?: string }) => {
        requirePath("--config", opts.config, "file");
        requirePath("--mirrors", opts.mirrors, "directory");
        const project = Project.open(opts.config, {
          stages: BUILT_STAGES,
          log: createLogger({ write: (line) => io.err(line + "\n") }),
          overrides: opts.mirrors ? { mirrors: opts.mirrors } : {},
        });
        try {
          const done = await completePipelineSources(project, opts.from);
          for (const repo of done) io.out(formatCompletion(repo));
          const left = done.reduce((n, r) => n + r.left.length, 0);
          const written = done.reduce((n, r) => n + r.filled.length, 0);
          io.out(`${written} file content(s) written, ${left} still missing\n`);
          return left ? 1 : 0;
        } catch (error) {
          // The repository could not be had (no network, a source without the commit): a fact to say, not a bug.
          if (error instanceof GitError || error instanceof CommitNotInSource) throw new RunFailed(error.message);
          throw error;
        } finally {
          await project.close();
        }
      }),
    );
}
