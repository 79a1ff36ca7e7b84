import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { type Command, Option } from "commander";
import { writeFileAtomic } from "../../pipeline/atomic.ts";
import { createLogger } from "../../pipeline/logger.ts";
import { type ExitCode, type Io, requirePath } from "../io.ts";
import { type ExecutionOverrides, executorOption, redisOption, withExecutionOverrides } from "../execution-options.ts";
import { join, resolve } from "node:path";
import { emitStage } from "../../stages/emit/index.ts";
import { createExecutor } from "../../pipeline/executors/index.ts";
import { BUILT_STAGES } from "../../stages/index.ts";
import { loadConfig } from "../../pipeline/engine/config.ts";
import { environmentSpec } from "../../pipeline/executors/environment.ts";
import { MirrorCache } from "../../pipeline/git.ts";
import type { Logger } from "../../pipeline/logger.ts";
import { parseStageConfig } from "../../pipeline/engine/engine.ts";
import { cloneSourceOf, loadProfilesDir } from "../../pipeline/profiles/load.ts";
import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import { SessionSpec } from "../../pipeline/schemas/session.ts";
import { VerificationReport } from "../../pipeline/schemas/verification.ts";
import { collectCheckoutArtifact } from "../../pipeline/verifier/collect.ts";
import { verifyArtifact } from "../../pipeline/verifier/verify.ts";
import { InputError, readJsonFile } from "../../pipeline/validation.ts";

/** Bad input to `verify`: names the file and field, and nothing was run. */
export class VerifyInputError extends InputError {
  override name = "VerifyInputError";
}

export interface VerifyCommandOptions {
  config: string;
  session: string;
  artifact?: string;
  checkout?: string;
  condition: "control" | "switched";
  /** Overrides the config's emit.heldout_dir. */
  heldoutDir?: string;
  /** The command line's --executor and --redis over the config's execution settings. */
  overrides?: ExecutionOverrides;
  log: Logger;
}

/**
 * `switch-swe verify`: scores one session's final focus artifact, given as a patch or collected
 * from the focus checkout, against the focus task's held-out verifier. The pipeline config says
 * where the held-out assets, repository profiles, mirrors and environments are, and which
 * executor (and limits) its execution settings name, which the oracle used too; verify uses the same.
 */
export async function verifySubmission(options: VerifyCommandOptions): Promise<{ report: VerificationReport; artifact: string; excluded: string[] }> {
  if (Boolean(options.artifact) === Boolean(options.checkout)) throw new VerifyInputError("give exactly one of --artifact PATCH and --checkout DIR");
  const loaded = loadConfig(options.config, BUILT_STAGES);
  const stages = loaded.config.stages as Record<string, unknown>;
  const execution = withExecutionOverrides(loaded.config.execution, options.overrides ?? {});
  const emit = parseStageConfig(emitStage, stages.emit);
  const heldoutDir = options.heldoutDir ? resolve(options.heldoutDir) : resolve(loaded.baseDir, emit.heldout_dir);

  const spec = readJsonFile(options.session, SessionSpec, "a session specification (manifests/<benchmark>/sessions/<session>.json)");
  const focusCheckout = spec.checkouts.find((c) => c.task_id === spec.focus);
  if (!focusCheckout) throw new VerifyInputError(`${options.session}: field checkouts: no checkout of the focus task ${spec.focus}`);
  const heldoutFile = join(heldoutDir, `${spec.focus}.json`);
  if (!existsSync(heldoutFile)) throw new VerifyInputError(`${heldoutFile}: no held-out verifier for ${spec.focus} (is emit.heldout_dir in ${options.config} the benchmark's? pass --heldout DIR otherwise)`);
  const heldout = readJsonFile(heldoutFile, HeldoutTask, "a held-out task");
  if (heldout.repo !== spec.repo || heldout.base_commit !== focusCheckout.base_commit) {
    throw new VerifyInputError(`${heldoutFile}: fields repo/base_commit (${heldout.repo} ${heldout.base_commit}) do not match the session's focus checkout (${spec.repo} ${focusCheckout.base_commit})`);
  }

  const { profiles, errors, dir: profilesDir } = loadProfilesDir(loaded.config.profiles_dir, loaded.baseDir);
  const profile = profiles.get(spec.repo);
  if (!profile) throw new VerifyInputError(`${profilesDir}: ${errors.get(spec.repo) ?? `no profile for ${spec.repo}`}`);

  const mirror = await new MirrorCache(join(loaded.workDir, "git")).ensure(spec.repo, cloneSourceOf(spec.repo, profile, (p) => resolve(loaded.baseDir, p)), heldout.base_commit);
  const scratch = join(loaded.workDir, "verify-scratch");
  mkdirSync(scratch, { recursive: true });

  let artifact: string;
  let excluded: string[] = [];
  if (options.artifact) {
    try {
      artifact = readFileSync(options.artifact, "utf8");
    } catch (error) {
      throw new VerifyInputError(`${options.artifact}: cannot read the artifact: ${(error as Error).message}`);
    }
  } else {
    try {
      ({ patch: artifact, excluded } = await collectCheckoutArtifact(options.checkout!, mirror, heldout.base_commit, scratch));
    } catch (error) {
      throw new VerifyInputError(`${options.checkout}: cannot collect the focus artifact: ${(error as Error).message}`);
    }
  }

  const executor = await createExecutor(execution, { workDir: loaded.workDir, log: options.log });
  const env = environmentSpec(heldout.repo, heldout.environment, heldout.environment_as_of);
  const outcome = await verifyArtifact(executor, { task: heldout, env, mirror, artifact, rules: profile.profile.classification, scratch, infrastructureBackoffMs: execution.infrastructure_backoff_seconds.map((s) => s * 1000) }, options.log).finally(() => executor.close?.());
  const report = VerificationReport.parse({ session_id: spec.session_id, task_id: spec.focus, condition: options.condition, ...outcome });
  return { report, artifact, excluded };
}

/** A verification report for a terminal: the verdict, then every required test that did not pass. */
export function formatVerification(report: VerificationReport): string {
  const lines = [`${report.session_id} (${report.condition}), focus ${report.task_id}: ${report.resolved ? "RESOLVED" : "NOT RESOLVED"}`];
  lines.push(`  artifact sha256 ${report.artifact_sha256}${report.applied ? ", applied" : `, did not apply: ${report.apply_error}`}`);
  for (const d of report.dropped_paths) lines.push(`  dropped ${d.path} (${d.reason.replaceAll("_", " ")}): its held-out or base version was used`);
  const tests = Object.entries(report.tests);
  const failing = tests.filter(([, s]) => s !== "passed");
  if (report.applied) lines.push(`  required tests: ${tests.length - failing.length} of ${tests.length} passed${report.timed_out ? " (the run timed out)" : ""}`);
  for (const [test, status] of failing) lines.push(`    ${status.padEnd(8)} ${test}`);
  for (const problem of report.integrity_problems) lines.push(`  integrity: ${problem}`);
  // Hints for an auditor, never part of the verdict.
  for (const finding of report.suspicious) lines.push(`  suspicious (${finding.rule.replaceAll("_", " ")}): ${finding.path ? `${finding.path}:${finding.line} ` : ""}${finding.detail}`);
  if (report.infrastructure_fault) lines.push(`  infrastructure fault after ${report.infrastructure_retries} re-run(s): ${report.infrastructure_fault}`);
  return lines.join("\n") + "\n";
}

export function registerVerify(program: Command, io: Io, exit: ExitCode): void {
  program
    .command("verify")
    .description("score a session's final focus artifact against the focus task's held-out verifier (docs/SPEC.md §3)")
    .requiredOption("-c, --config <file>", "the pipeline config that built the benchmark (held-out assets, profiles, execution settings)")
    .requiredOption("--session <file>", "the session specification (manifests/<benchmark>/sessions/<session>.json)")
    .option("--artifact <patch>", "the focus artifact as a git diff against the focus base commit")
    .option("--checkout <dir>", "collect the focus artifact from this checkout (committed and uncommitted changes, new and deleted files)")
    // Required: a report filed under the wrong condition would silently skew Table 1.
    .addOption(new Option("--condition <condition>", "which run of the session the artifact comes from: control (uninterrupted) or switched").choices(["control", "switched"]).makeOptionMandatory())
    .option("--heldout <dir>", "held-out assets directory (default: the config's emit.heldout_dir)")
    .addOption(executorOption("docker, local, auto, or queue (workers on other hosts) (default: the config's execution.executor)"))
    .addOption(redisOption())
    .option("--out <file>", "also write the verification report (JSON) to this file")
    .option("--save-artifact <file>", "also write the artifact that was scored (as collected) to this file")
    .option("--json", "print the verification report as JSON")
    .addHelpText("after", "\nExit status: 0 resolved, 1 not resolved, 3 infrastructure fault after two re-runs, 2 bad input.\n\nExample:\n  switch-swe verify -c data/demo/pipeline.yaml --session manifests/demo/sessions/S.json --checkout /workspace/w02 --condition switched --out results/agent-a/S.switched.json")
    .action(
      exit.act(async (opts) => {
        requirePath("--config", opts.config, "file");
        requirePath("--session", opts.session, "file");
        requirePath("--artifact", opts.artifact, "file");
        requirePath("--checkout", opts.checkout, "directory");
        requirePath("--heldout", opts.heldout, "directory");
        const result = await verifySubmission({ config: opts.config, session: opts.session, artifact: opts.artifact, checkout: opts.checkout, condition: opts.condition, heldoutDir: opts.heldout, overrides: { executor: opts.executor, redis: opts.redis }, log: createLogger({ level: opts.json ? "warn" : "info", write: (line) => io.err(line + "\n") }) });
        const { report } = result;
        if (opts.out) await writeFileAtomic(opts.out, JSON.stringify(report, null, 2) + "\n");
        if (opts.saveArtifact) await writeFileAtomic(opts.saveArtifact, result.artifact);
        io.out(opts.json ? JSON.stringify(report, null, 2) + "\n" : formatVerification(report));
        return report.infrastructure_fault ? 3 : report.resolved ? 0 : 1;
      }),
    );
}
