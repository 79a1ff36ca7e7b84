import { readFileSync } from "node:fs";
import type { OpenedBenchmark } from "../project/benchmark.ts";
import { environmentSpec } from "../executors/environment.ts";
import type { Logger } from "../logger.ts";
import { type Condition, SessionSpec } from "../schemas/session.ts";
import { VerificationReport } from "../schemas/verification.ts";
import { InputError, readJsonFile } from "../validation.ts";
import { collectCheckoutArtifact } from "../verifier/collect.ts";
import { verifyArtifact } from "../verifier/verify.ts";

/** Bad input to `verify`: names the file and field, and nothing was run. */
export class VerifyInputError extends InputError {
  override name = "VerifyInputError";
}

export interface SubmissionOptions {
  session: string;
  /** The artifact as a patch against the focus base commit, or the focus checkout to collect it from. */
  artifact?: string;
  checkout?: string;
  condition: Condition;
  log: Logger;
}

/**
 * Scores one session's final focus artifact, given as a patch or collected from the focus
 * checkout, against the focus task's held-out verifier, with the benchmark's executor (and
 * limits): the one its execution settings name, which the oracle used too.
 */
export async function verifySubmission(
  benchmark: OpenedBenchmark,
  options: SubmissionOptions,
): Promise<{ report: VerificationReport; artifact: string; excluded: string[] }> {
  if (Boolean(options.artifact) === Boolean(options.checkout)) throw new VerifyInputError("give exactly one of --artifact PATCH and --checkout DIR");
  const spec = readJsonFile(options.session, SessionSpec, "a session specification (manifests/<benchmark>/sessions/<session>.json)");
  const focusCheckout = spec.checkouts.find((c) => c.task_id === spec.focus);
  if (!focusCheckout) throw new VerifyInputError(`${options.session}: field checkouts: no checkout of the focus task ${spec.focus}`);
  const heldout = benchmark.requireHeldout(spec.focus, "whose held-out verifier scores the session");
  if (heldout.repo !== spec.repo || heldout.base_commit !== focusCheckout.base_commit) {
    throw new VerifyInputError(
      `${benchmark.layout.heldout(spec.focus)}: fields repo/base_commit (${heldout.repo} ${heldout.base_commit}) do not match the session's focus checkout (${spec.repo} ${focusCheckout.base_commit})`,
    );
  }
  const profile = benchmark.profile(spec.repo);
  const { workspace } = benchmark;
  const mirror = await benchmark.mirrorAt(spec.repo, heldout.base_commit);
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
      ({ patch: artifact, excluded } = await collectCheckoutArtifact(options.checkout!, mirror, heldout.base_commit, workspace.scratch));
    } catch (error) {
      throw new VerifyInputError(`${options.checkout}: cannot collect the focus artifact: ${(error as Error).message}`);
    }
  }
  const executor = await workspace.executor();
  const env = environmentSpec(heldout.repo, heldout.environment, heldout.environment_as_of);
  const outcome = await verifyArtifact(
    executor,
    {
      task: heldout,
      env,
      mirror,
      artifact,
      rules: profile.profile.classification,
      scratch: workspace.scratch,
      infrastructureBackoffMs: benchmark.execution.infrastructure_backoff_seconds.map((s) => s * 1000),
    },
    options.log,
  );
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
  if (report.applied)
    lines.push(`  required tests: ${tests.length - failing.length} of ${tests.length} passed${report.timed_out ? " (the run timed out)" : ""}`);
  for (const [test, status] of failing) lines.push(`    ${status.padEnd(8)} ${test}`);
  for (const problem of report.integrity_problems) lines.push(`  integrity: ${problem}`);
  // Hints for an auditor, never part of the verdict.
  for (const finding of report.suspicious)
    lines.push(`  suspicious (${finding.rule.replaceAll("_", " ")}): ${finding.path ? `${finding.path}:${finding.line} ` : ""}${finding.detail}`);
  if (report.infrastructure_fault) lines.push(`  infrastructure fault after ${report.infrastructure_retries} re-run(s): ${report.infrastructure_fault}`);
  // How a context manager routed the requests: by reference is not the model-based router.
  const routing = report.behaviour?.routing;
  if (routing)
    lines.push(
      `  routing: ${routing.reference} request(s) by reference, ${routing.router} by the router model, ${routing.fallback} by fallback (the full history)`,
    );
  return lines.join("\n") + "\n";
}
