import { type Command, Option } from "commander";
import { writeFileAtomic } from "../../pipeline/atomic.ts";
import { OpenedBenchmark } from "../../pipeline/project/benchmark.ts";
import { Condition } from "../../pipeline/schemas/session.ts";
import { createLogger } from "../../pipeline/logger.ts";
import { formatVerification, verifySubmission } from "../../pipeline/session/score.ts";
import { BUILT_STAGES } from "../../stages/index.ts";
import { executorOption, gitServiceOption, redisOption } from "../execution-options.ts";
import { type ExitCode, type Io, requirePath } from "../io.ts";

export function registerVerify(program: Command, io: Io, exit: ExitCode): void {
  program
    .command("verify")
    .description("score a session's final focus artifact against the focus task's held-out verifier (docs/SPEC.md §3)")
    .requiredOption("-c, --config <file>", "the pipeline config that built the benchmark (held-out assets, profiles, execution settings)")
    .requiredOption("--session <file>", "the session specification (manifests/<benchmark>/sessions/<session>.json)")
    .option("--artifact <patch>", "the focus artifact as a git diff against the focus base commit")
    .option("--checkout <dir>", "collect the focus artifact from this checkout (committed and uncommitted changes, new and deleted files)")
    // Required: a report filed under the wrong condition would silently skew Table 1.
    .addOption(
      new Option("--condition <condition>", "which run of the session the artifact comes from: control (uninterrupted) or switched")
        .choices(Condition.options)
        .makeOptionMandatory(),
    )
    .option("--heldout <dir>", "held-out assets directory (default: the config's emit.heldout_dir)")
    .addOption(executorOption("docker, local, auto, or queue (workers on other hosts) (default: the config's execution.executor)"))
    .addOption(redisOption())
    .addOption(gitServiceOption())
    .option("--out <file>", "also write the verification report (JSON) to this file")
    .option("--save-artifact <file>", "also write the artifact that was scored (as collected) to this file")
    .option("--json", "print the verification report as JSON")
    .addHelpText(
      "after",
      "\nExit status: 0 resolved, 1 not resolved, 3 infrastructure fault after two re-runs, 2 bad input.\n\nExample:\n  switch-swe verify -c data/demo/pipeline.yaml --session manifests/demo/sessions/S.json --checkout /workspace/w02 --condition switched --out results/agent-a/S.switched.json",
    )
    .action(
      exit.act(async (opts) => {
        requirePath("--config", opts.config, "file");
        requirePath("--session", opts.session, "file");
        requirePath("--artifact", opts.artifact, "file");
        requirePath("--checkout", opts.checkout, "directory");
        requirePath("--heldout", opts.heldout, "directory");
        const log = createLogger({ level: opts.json ? "warn" : "info", write: (line) => io.err(line + "\n") });
        const benchmark = OpenedBenchmark.open(opts.config, {
          stages: BUILT_STAGES,
          overrides: { executor: opts.executor, redis: opts.redis, gitService: opts.gitService },
          heldoutDir: opts.heldout,
          log,
        });
        const result = await verifySubmission(benchmark, {
          session: opts.session,
          artifact: opts.artifact,
          checkout: opts.checkout,
          condition: opts.condition,
          log,
        }).finally(() => benchmark.close());
        const { report } = result;
        if (opts.out) await writeFileAtomic(opts.out, JSON.stringify(report, null, 2) + "\n");
        if (opts.saveArtifact) await writeFileAtomic(opts.saveArtifact, result.artifact);
        io.out(opts.json ? JSON.stringify(report, null, 2) + "\n" : formatVerification(report));
        return report.infrastructure_fault ? 3 : report.resolved ? 0 : 1;
      }),
    );
}
