import { join } from "node:path";
import { type Command, Option } from "commander";
import { OpenedBenchmark } from "../../pipeline/project/benchmark.ts";
import { createLogger } from "../../pipeline/logger.ts";
import { loadAgent } from "../../pipeline/session/agents.ts";
import { Condition } from "../../pipeline/schemas/session.ts";
import { runAllSessions, runAndScoreSession } from "../../pipeline/session/runs.ts";
import { modelTarget, withModelOptions } from "../model-options.ts";
import { formatVerification } from "../../pipeline/session/score.ts";
import { BUILT_STAGES } from "../../stages/index.ts";
import { checkEmittedSessions, formatSessionChecks } from "../../stages/validate/emitted.ts";
import { executorOption, gitServiceOption, redisOption } from "../execution-options.ts";
import { type ExitCode, type Io, requirePath, UsageError } from "../io.ts";
import { positiveWholeNumber } from "../numeric-options.ts";

export function registerSession(program: Command, io: Io, exit: ExitCode): void {
  const session = program.command("session").description("run a coding agent through the benchmark's sessions and score it");
  const logger = (quiet: boolean) => createLogger({ level: quiet ? "warn" : "info", write: (line) => io.err(line + "\n") });
  withRunnerOptions(
    session
      .command("run")
      .description("drive an agent through one condition of one session: provision the five checkouts, deliver each request, verify the focus artifact")
      .requiredOption("-c, --config <file>", "the pipeline config that built the benchmark")
      .requiredOption("--session <file>", "the session specification (manifests/<benchmark>/sessions/<session>.json)")
      .addOption(new Option("--condition <condition>", "control (uninterrupted) or switched").choices(Condition.options).makeOptionMandatory())
      .requiredOption("--agent <file>", "the agent description (AGENT.yaml; see data/agents/)")
      .requiredOption("--out <dir>", "the agent's results directory: the verification report is written there as <session>.<condition>.json"),
  )
    .addHelpText(
      "after",
      "\nExample:\n  switch-swe session run -c data/demo/pipeline.yaml --session manifests/demo/sessions/S.json --condition switched --agent data/agents/replay-reference.yaml --out results/replay-reference",
    )
    .action(
      exit.act(async (opts) => {
        for (const [flag, kind] of [
          ["--config", "file"],
          ["--session", "file"],
          ["--agent", "file"],
        ] as const)
          requirePath(flag, opts[flag.slice(2)], kind);
        const log = logger(Boolean(opts.quiet));
        const benchmark = OpenedBenchmark.open(opts.config, {
          stages: BUILT_STAGES,
          overrides: { executor: opts.executor, redis: opts.redis, gitService: opts.gitService },
          log,
        });
        const report = await runAndScoreSession(benchmark, {
          session: opts.session,
          condition: opts.condition,
          agent: loadAgent(opts.agent),
          out: opts.out,
          work: opts.work,
          force: Boolean(opts.force),
          log,
          ...modelTarget(opts),
        }).finally(() => benchmark.close());
        io.out(formatVerification(report));
        return report.infrastructure_fault || report.behaviour?.infrastructure_fault ? 3 : report.resolved ? 0 : 1;
      }),
    );
  registerRunAll(session, io, exit, logger);
  registerCheck(session, io, exit, logger);
}

function registerCheck(session: Command, io: Io, exit: ExitCode, logger: (quiet: boolean) => ReturnType<typeof createLogger>): void {
  session
    .command("check")
    .description(
      "check released session files again, as validate does: every invariant, and that no checkout holds the focus's answer (from the repository and the held-out assets, docs/SPEC.md §2.7)",
    )
    .argument("[files...]", "session specifications (default: every session the benchmark lists)")
    .requiredOption("-c, --config <file>", "the pipeline config that built the benchmark")
    .option("--heldout <dir>", "held-out assets directory (default: the config's emit.heldout_dir)")
    .option("--json", "print the validation reports as JSON")
    .option("-q, --quiet", "only warnings and errors")
    .addHelpText(
      "after",
      "\nExit status: 0 every session passes, 1 one is refused, 2 bad input.\n\nExample:\n  switch-swe session check -c data/demo/pipeline.yaml manifests/demo/sessions/session-demo-org__geometry-20.json",
    )
    .action(
      exit.act(async (files: string[], opts) => {
        requirePath("--config", opts.config, "file");
        requirePath("--heldout", opts.heldout, "directory");
        for (const file of files) requirePath("session", file, "file");
        const benchmark = OpenedBenchmark.open(opts.config, { stages: BUILT_STAGES, heldoutDir: opts.heldout, log: logger(Boolean(opts.quiet)) });
        const results = await checkEmittedSessions(benchmark, files).finally(() => benchmark.close());
        io.out(
          opts.json
            ? JSON.stringify(
                results.map((r) => r.report),
                null,
                2,
              ) + "\n"
            : formatSessionChecks(results),
        );
        return results.every((r) => r.report.passed) ? 0 : 1;
      }),
    );
}

function registerRunAll(session: Command, io: Io, exit: ExitCode, logger: (quiet: boolean) => ReturnType<typeof createLogger>): void {
  withRunnerOptions(
    session
      .command("run-all")
      .description("run an agent through every session of an emitted benchmark; sessions already scored are not run again")
      .requiredOption("-c, --config <file>", "the pipeline config that built the benchmark")
      .option("--manifest <dir>", "the emitted benchmark's directory (default: the config's emit.out_dir)")
      .requiredOption("--agent <file>", "the agent description (AGENT.yaml)")
      .addOption(new Option("--conditions <which>", "control, switched, or both").choices([...Condition.options, "both"]).default("both"))
      .option("--out <dir>", "the agent's results directory (default: results/<agent name>)")
      .option("--jobs <n>", "sessions run at once", positiveWholeNumber, 1),
  )
    .addHelpText("after", "\nExample:\n  switch-swe session run-all -c data/demo/pipeline.yaml --agent data/agents/noop.yaml --conditions both --jobs 2")
    .action(
      exit.act(async (opts) => {
        for (const [flag, kind] of [
          ["--config", "file"],
          ["--manifest", "directory"],
          ["--agent", "file"],
        ] as const)
          requirePath(flag, opts[flag.slice(2)], kind);
        const jobs: number = opts.jobs;
        const agent = loadAgent(opts.agent);
        const conditions: Condition[] = opts.conditions === "both" ? Condition.options : [opts.conditions];
        const out = opts.out ?? join("results", agent.name);
        const log = logger(Boolean(opts.quiet));
        const benchmark = OpenedBenchmark.open(opts.config, {
          stages: BUILT_STAGES,
          overrides: { executor: opts.executor, redis: opts.redis, gitService: opts.gitService },
          log,
        });
        const { ran, skipped, failed } = await runAllSessions(benchmark, {
          manifest: opts.manifest,
          conditions,
          agent,
          out,
          work: opts.work,
          force: Boolean(opts.force),
          jobs,
          log,
          ...modelTarget(opts),
        }).finally(() => benchmark.close());
        const failedRequests = ran.reduce((n, r) => n + (r.behaviour?.failed_requests ?? 0), 0);
        io.out(
          `${agent.name}: ran ${ran.length} session run(s), ${ran.filter((r) => r.resolved).length} resolved; ${failedRequests} failed request(s); ${skipped} already scored; ${failed.length} failed to run (run again to retry them); reports in ${out}\n`,
        );
        return failed.length ? 1 : ran.some((r) => r.infrastructure_fault || r.behaviour?.infrastructure_fault) ? 3 : 0;
      }),
    );
}

/** The options both session commands take: where runs go, and how the focus artifact is verified. */
function withRunnerOptions(command: Command): Command {
  return withModelOptions(command)
    .option("--work <dir>", "where workspaces and trajectories go (default: <work_dir>/session-runs/<agent>)")
    .option("--force", "replace a run folder under --work that holds another agent's run (refused otherwise)")
    .addOption(executorOption("executor of the verification: docker, local, auto, or queue (default: the config's execution.executor)"))
    .addOption(redisOption())
    .addOption(gitServiceOption())
    .option("-q, --quiet", "only warnings and errors");
}
