import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { BUILT_STAGES } from "../../stages/index.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { Project } from "../../pipeline/project/project.ts";
import { loadHarborReports } from "../../pipeline/harbor/job.ts";
import { writeReport, writeResultsReport } from "../../pipeline/report/results.ts";
import { OpenedBenchmark } from "../../pipeline/project/benchmark.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "../io.ts";

export function registerReport(program: Command, io: Io, exit: ExitCode): void {
  program
    .command("report")
    .description("aggregate verification reports into the study's Table 1: resolution per condition and the gap, overall and per locality group")
    .option("--results <dir>", "verification reports; each subdirectory is one configuration (agent and model)")
    .option(
      "--harbor <dir>",
      "a Harbor job of an exported dataset (switch-swe export harbor), or a directory of jobs, each one configuration named after it (needs -c)",
    )
    .option("--sessions <dir>", "the benchmark's session specifications: the fixed denominators (default: <emit.out_dir>/sessions of --config)")
    .option("-c, --config <file>", "the pipeline config that built the benchmark")
    .option("--out <dir>", "where to write table1.md, table1.csv and resolution.svg (default: <results>/report, or <harbor>-report)")
    .option(
      "--context-managers <native,router,rcm>",
      "Table 3: the configurations of the native, +Router and +RCM runs (default: a harness's three in --results, HARNESS, HARNESS-router and HARNESS-rcm or their -environment variants, OpenCode's first)",
    )
    .addHelpText(
      "after",
      "\nExample:\n  switch-swe report --results results/ --sessions manifests/demo/sessions --out results/report\n  switch-swe report --harbor jobs/claude-code -c data/demo/pipeline.yaml\n  switch-swe report --results results/ --sessions manifests/demo/sessions --context-managers opencode,opencode-router,opencode-rcm",
    )
    .action(
      exit.act(async (opts) => {
        if (Boolean(opts.results) === Boolean(opts.harbor)) throw new UsageError("give one of --results DIR and --harbor DIR");
        if (opts.harbor && !opts.config)
          throw new UsageError(
            "--harbor needs -c FILE: the config whose benchmark was exported (its sessions, held-out assets and profiles grade each trial again)",
          );
        requirePath("--results", opts.results, "directory");
        requirePath("--harbor", opts.harbor, "directory");
        requirePath("--sessions", opts.sessions, "directory");
        requirePath("--config", opts.config, "file");
        let sessionsDir = opts.sessions as string | undefined;
        if (!sessionsDir) {
          if (!opts.config) throw new UsageError("give --sessions DIR, or --config FILE whose emit.out_dir holds the sessions");
          sessionsDir = Project.open(opts.config, { stages: BUILT_STAGES, log: silentLogger }).benchmarkLayout().sessionsDir;
        }
        const trio = opts.contextManagers === undefined ? undefined : String(opts.contextManagers).split(",");
        if (trio && (trio.length !== 3 || trio.some((t) => !t.trim())))
          throw new UsageError(`--context-managers: three configurations, native,router,rcm (given: ${opts.contextManagers})`);
        const written = opts.harbor
          ? await harborReport(opts.config, sessionsDir, opts.harbor, opts.out ?? `${String(opts.harbor).replace(/\/+$/, "")}-report`, trio)
          : await writeResultsReport(opts.results, sessionsDir, opts.out ?? join(opts.results, "report"), trio);
        io.out(readFileSync(written.files[0]!, "utf8"));
        io.out(written.files.map((f) => `wrote ${f}\n`).join(""));
        return written.aggregation.problems.length ? 1 : 0;
      }),
    );
}

/** The tables of a Harbor job's trials, each graded again against the benchmark `config` built. */
async function harborReport(config: string, sessionsDir: string, jobs: string, out: string, trio: string[] | undefined) {
  const bench = OpenedBenchmark.open(config, { stages: BUILT_STAGES, log: silentLogger });
  try {
    const loaded = loadHarborReports(jobs, sessionsDir, {
      heldout: (taskId) => bench.heldout(taskId),
      rules: (repo) => bench.profiles.profiles.get(repo)?.profile.classification,
    });
    return await writeReport(jobs, loaded, sessionsDir, out, trio);
  } finally {
    await bench.close();
  }
}
