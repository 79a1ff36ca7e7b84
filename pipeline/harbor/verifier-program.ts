import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { RUN_USER } from "../executors/in-image.ts";
import { environmentSpec } from "../executors/environment.ts";
import { createLogger } from "../logger.ts";
import { HeldoutTask } from "../schemas/heldout.ts";
import { Condition } from "../schemas/session.ts";
import { ClassificationRules } from "../schemas/repo-profile.ts";
import { VerificationReport } from "../schemas/verification.ts";
import { describeFirstIssue } from "../validation.ts";
import { collectCheckoutArtifact } from "../verifier/collect.ts";
import { verifyArtifact } from "../verifier/verify.ts";
import { ImageExecutor } from "./image-executor.ts";
import { VERIFIER_OUTPUTS } from "./layout.ts";

/**
 * switch-swe's verify, as the last step of an exported Harbor task runs it in its verifier image
 * (bundled with everything it imports by verifier-bundle.ts, run by Node from tests/test.sh):
 * the focus artifact collected from the checkout Harbor copied in (collect.ts), scored against
 * the focus task's held-out verifier (verify.ts) with the image's environment (ImageExecutor),
 * and Harbor's reward written from switch-swe's verdict. Nothing here grades: it is the code
 * `switch-swe verify --checkout` runs, given its inputs from a file.
 */

/** What the export gives the verifier (tests/switch-swe/verifier.json). */
export const HarborVerifierInput = z.strictObject({
  session_id: z.string(),
  condition: Condition,
  /** The focus checkout's path, where Harbor copies the agent's final checkout in. */
  focus_checkout: z.string(),
  /** A bare repository holding the focus base commit: where the clean base is checked out from. */
  mirror: z.string(),
  /** Harbor's verifier directory: the reward and switch-swe's records go there. */
  output_dir: z.string(),
  task: HeldoutTask,
  rules: ClassificationRules,
});
export type HarborVerifierInput = z.infer<typeof HarborVerifierInput>;

/** What the verifier keeps of the guarded run it graded (VERIFIER_OUTPUTS.run), for `report --harbor` to grade again. */
export const VerifierRunRecord = z.strictObject({
  timed_out: z.boolean(),
  exit_code: z.number().int(),
  channel: z
    .strictObject({
      records: z.array(z.record(z.string(), z.unknown())),
      finished: z.boolean(),
      foreign: z.array(z.string()),
    })
    .nullable(),
});
export type VerifierRunRecord = z.infer<typeof VerifierRunRecord>;

function readInput(file: string): HarborVerifierInput {
  const value: unknown = JSON.parse(readFileSync(file, "utf8"));
  const parsed = HarborVerifierInput.safeParse(value);
  if (!parsed.success) throw new Error(`${file}: ${describeFirstIssue(parsed.error, value)}`);
  return parsed.data;
}

/** Every process the tests' user still has (one a test left behind) is killed before a verdict is written. */
function killRunUser(): void {
  const [uid, gid] = RUN_USER.split(":");
  spawnSync("setpriv", [`--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--", "kill", "-KILL", "-1"], { stdio: "ignore" });
}

/** Scores the focus checkout; writes the verification, the artifact, the run and the reward. Resolves to the process's exit status. */
export async function runHarborVerifier(inputFile: string): Promise<number> {
  const input = readInput(inputFile);
  const log = createLogger({ level: "info", write: (line) => process.stderr.write(line + "\n") });
  if (!existsSync(input.focus_checkout)) throw new Error(`${input.focus_checkout}: Harbor copied no focus checkout into the verifier`);
  const scratch = await mkdtemp(join(tmpdir(), "switch-swe-verify-"));
  try {
    const { task } = input;
    const { patch: artifact } = await collectCheckoutArtifact(input.focus_checkout, input.mirror, task.base_commit, scratch);
    const executor = new ImageExecutor();
    const outcome = await verifyArtifact(
      executor,
      { task, env: environmentSpec(task.repo, task.environment, task.environment_as_of), mirror: input.mirror, artifact, rules: input.rules, scratch },
      log,
    );
    killRunUser();
    const report = VerificationReport.parse({ session_id: input.session_id, task_id: task.task_id, condition: input.condition, ...outcome });
    const run = executor.lastRun;
    const record: VerifierRunRecord | undefined = run && {
      timed_out: run.timedOut,
      exit_code: run.exitCode,
      channel: run.channel ? { records: run.channel.records, finished: run.channel.finished, foreign: run.channel.foreign } : null,
    };
    const out = (name: string) => join(input.output_dir, name);
    await mkdir(input.output_dir, { recursive: true });
    await writeFile(out(VERIFIER_OUTPUTS.artifact), artifact);
    if (record) await writeFile(out(VERIFIER_OUTPUTS.run), JSON.stringify(record, null, 2) + "\n");
    await writeFile(out(VERIFIER_OUTPUTS.verification), JSON.stringify(report, null, 2) + "\n");
    // Last: Harbor reads the reward, and a verifier that stopped before it leaves none.
    await writeFile(out(VERIFIER_OUTPUTS.reward), JSON.stringify({ reward: report.resolved ? 1 : 0 }) + "\n");
    log.info(`${input.session_id} (${input.condition}), focus ${task.task_id}: ${report.resolved ? "resolved" : "not resolved"}`);
    return 0;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
