import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { replaceDirectoryWith } from "../atomic.ts";
import { BenchmarkLayout } from "../benchmark-layout.ts";
import { sha256 } from "../canonical.ts";
import { fromDirectory, readCheckoutPins } from "../executors/checkout-pins.ts";
import { IN_IMAGE } from "../executors/in-image.ts";
import { environmentSpec } from "../executors/environment.ts";
import { needsRevisionLayer, revisionScript, revisionVersion } from "../executors/recipe-scripts.ts";
import type { EnvironmentSpec } from "../executors/types.ts";
import { freshCheckout } from "../checkouts/checkout.ts";
import type { Logger } from "../logger.ts";
import type { OpenedBenchmark } from "../project/benchmark.ts";
import type { AgentSpec } from "../schemas/agent.ts";
import type { SessionSpec } from "../schemas/session.ts";
import { readListedSessions } from "../project/listed-sessions.ts";
import type { Condition } from "../schemas/session.ts";
import { sessionCheckoutCommits, sessionCloneSource } from "../session/runs.ts";
import { InputError } from "../validation.ts";
import { checkoutArchives, commitMirrorArchive, revisionArchive } from "./archives.ts";
import { agentDockerfile, environmentFiles, type ImageOptions, stepVerifierDockerfile, verifierDockerfile } from "./images.ts";
import { HARBOR_DATASET, HARBOR_TASK, SHARED_VERIFIER, sharedFile, type SharedKind, taskDirName, VERIFIER_FILES } from "./layout.ts";
import { observeScript } from "./observe.ts";
import { solveScript, taskSteps } from "./steps.ts";
import { focusCheckoutOf, taskToml, type VerifierNetwork, workspaceOf } from "./task-config.ts";
import { STEP_TEST_SH, VERIFIER_TEST_SH, verifierInput } from "./verifier-files.ts";
import { verifierBundle } from "./verifier-bundle.ts";

export interface HarborExportOptions {
  /** The dataset's directory (replaced whole, only if it holds an earlier export). */
  out: string;
  /** Only these sessions (default: every session of the benchmark). */
  sessions?: string[];
  conditions: Condition[];
  /** The agent description whose message template makes each step's instruction (as `session run` gives it to that agent). */
  messages: AgentSpec;
  images: ImageOptions;
  /** The user the agent runs as in the container (never root: Harbor's lint asks for one). */
  agentUser: { name: string; uid: number };
  /**
   * The verifiers' network (default none). Harbor's local Docker environment enforces none only
   * through its egress-control sidecar, whose images come from Docker Hub; where they cannot be
   * pulled, `public` lets the tasks run there, the verifier's container then having a network.
   */
  verifierNetwork?: VerifierNetwork;
  /** The Node executable the verifier image runs verify with (default: this one, which must be Linux x86-64's). */
  node?: string;
  log: Logger;
}

export class HarborExportError extends InputError {
  override name = "HarborExportError";
}

type Write = (path: string, content: string | Uint8Array, mode?: number) => Promise<void>;
type Link = (path: string, existing: string) => Promise<void>;

/** The dataset's files stored once: a file's copies in tasks are hard links to `shared/<kind>/<sha256>.tar`. */
class SharedStore {
  private readonly stored = new Set<string>();
  bytes = 0;
  constructor(
    private readonly write: Write,
    private readonly link: Link,
  ) {}

  async put(kind: SharedKind, content: Buffer, at: string): Promise<void> {
    const file = sharedFile(kind, sha256(content));
    if (!this.stored.has(file)) {
      await this.write(file, content);
      this.stored.add(file);
      this.bytes += content.length;
    }
    await this.link(at, file);
  }
}

/** The sessions to export, from the benchmark's own list. */
function sessionsOf(bench: OpenedBenchmark, only: string[] | undefined): { file: string; spec: SessionSpec }[] {
  const listed = readListedSessions(bench.sessionsDir);
  const unknown = (only ?? []).filter((id) => !listed.some((s) => s.spec.session_id === id));
  if (unknown.length) throw new HarborExportError(`--sessions: ${unknown.join(", ")} not in ${BenchmarkLayout.sessionIndexIn(bench.sessionsDir)}`);
  return listed.filter((s) => !only || only.includes(s.spec.session_id));
}

/**
 * `switch-swe export harbor`: an emitted benchmark as a Harbor dataset, one multi-step task per
 * session and condition (docs/HARBOR.md): one step per scheduled request, the agent's image with
 * the focus task's environment and the five checkouts as the session runner makes them, the last
 * step's verifier image running switch-swe's verify, the oracle's solution a task's reference at
 * its last request. What several tasks hold is stored once. Written beside and swapped in whole.
 */
export async function exportHarbor(bench: OpenedBenchmark, options: HarborExportOptions): Promise<{ tasks: string[]; sharedBytes: number }> {
  const sessions = sessionsOf(bench, options.sessions);
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new HarborExportError(`the verifier image runs this machine's Node (${process.platform}-${process.arch}): export on Linux x86-64, or give its node`);
  const program = await verifierBundle();
  const node = readFileSync(options.node ?? process.execPath);
  const tasks: string[] = [];
  let sharedBytes = 0;
  await replaceDirectoryWith(
    resolve(options.out),
    async (write, link) => {
      const store = new SharedStore(write, link);
      // An executable: the verifier image runs it as it is copied in (the classic builder's COPY has no --chmod).
      await write(SHARED_VERIFIER.node, node, 0o755);
      await write(SHARED_VERIFIER.program, program);
      for (const { file, spec } of sessions) {
        options.log.info(`exporting ${spec.session_id} (${options.conditions.join(", ")})`);
        const source = sessionCloneSource(spec, file);
        let mirror = "";
        for (const c of spec.checkouts) mirror = await bench.mirrorAt(spec.repo, c.base_commit, source);
        const session = await sessionFiles(bench, spec, mirror, options);
        for (const condition of options.conditions) tasks.push(await writeTask({ write, link, store, bench, spec, condition, session, options }));
      }
      sharedBytes = store.bytes + node.length + program.length;
      await write(HARBOR_DATASET.readme, datasetReadme(sessions[0]?.spec.benchmark ?? "", tasks.length));
    },
    (existing) => existing.every((p) => p.startsWith(`${HARBOR_DATASET.tasks}/`) || p.startsWith(`${HARBOR_DATASET.shared}/`) || p === HARBOR_DATASET.readme),
  );
  return { tasks, sharedBytes };
}

/** What both conditions' tasks of a session are built from. */
interface SessionFiles {
  archives: Map<string, Buffer>;
  mirror: Buffer;
  env: EnvironmentSpec;
  /** The revision layer: its script and the focus base's files, when the recipe installs from the checkout. */
  revision?: { script: string; files: Buffer };
}

async function sessionFiles(bench: OpenedBenchmark, spec: SessionSpec, mirror: string, options: HarborExportOptions): Promise<SessionFiles> {
  const heldout = bench.requireHeldout(spec.focus, "whose held-out verifier scores the task");
  const focus = spec.checkouts.find((c) => c.task_id === spec.focus)!;
  if (heldout.base_commit !== focus.base_commit)
    throw new HarborExportError(
      `${bench.heldoutDir}/${spec.focus}.json: base_commit ${heldout.base_commit} is not the session's focus checkout's (${focus.base_commit})`,
    );
  const env = environmentSpec(heldout.repo, heldout.environment, heldout.environment_as_of);
  const scratch = bench.workspace.scratch;
  const owner = { uid: options.agentUser.uid, gid: options.agentUser.uid };
  const revision = needsRevisionLayer(env.recipe)
    ? { script: await revisionLayer(env, mirror, heldout.base_commit, scratch), files: await revisionArchive(mirror, heldout.base_commit, scratch) }
    : undefined;
  return {
    // A derived checkout's commit is made in the mirror, as the session runner makes it.
    archives: await checkoutArchives(spec, mirror, await sessionCheckoutCommits(bench, spec, mirror), scratch, owner),
    mirror: await commitMirrorArchive(mirror, heldout.base_commit, scratch),
    env,
    ...(revision ? { revision } : {}),
  };
}

/** The revision layer's script for the focus base, as switch-swe's revision image is built. */
async function revisionLayer(env: EnvironmentSpec, mirror: string, commit: string, scratch: string): Promise<string> {
  const checkout = await freshCheckout(mirror, commit, [], scratch);
  try {
    const pins = await readCheckoutPins(fromDirectory(checkout.dir), env.recipe.requirements_files);
    return revisionScript(env, { ...IN_IMAGE, python: `${IN_IMAGE.venv}/bin/python` }, await revisionVersion(checkout.dir), pins);
  } finally {
    await checkout.dispose();
  }
}

interface TaskInput {
  write: Write;
  link: Link;
  store: SharedStore;
  bench: OpenedBenchmark;
  spec: SessionSpec;
  condition: Condition;
  session: SessionFiles;
  options: HarborExportOptions;
}

/** One task: task.toml, the steps' instructions and solutions, the agent's image, and the last step's verifier image. */
async function writeTask(input: TaskInput): Promise<string> {
  const { write, bench, spec, condition, options } = input;
  const name = taskDirName(spec.session_id, condition);
  const dir = `${HARBOR_DATASET.tasks}/${name}`;
  const heldout = bench.requireHeldout(spec.focus, "whose held-out verifier scores the task");
  const steps = taskSteps(spec, condition, options.messages);
  const limits = bench.execution.limits;
  await write(
    `${dir}/${HARBOR_TASK.config}`,
    taskToml({
      spec,
      condition,
      heldout,
      steps,
      limits: { cpus: limits.cpus, memory_mb: limits.memory_mb },
      agentUser: options.agentUser.name,
      name,
      verifierNetwork: options.verifierNetwork ?? "no-network",
    }),
  );
  for (const step of steps) {
    const stepDir = `${dir}/${HARBOR_TASK.steps}/${step.name}`;
    await write(`${stepDir}/${HARBOR_TASK.instruction}`, step.instruction);
    const reference = step.lastOfTask ? bench.requireHeldout(step.request.task_id, "whose reference Harbor's oracle applies").implementation_patch : "";
    await write(`${stepDir}/${HARBOR_TASK.solution}/solve.sh`, solveScript(step, Boolean(reference)));
    if (reference) await write(`${stepDir}/${HARBOR_TASK.solution}/reference.patch`, reference);
  }
  await write(`${dir}/${HARBOR_TASK.tests}/test.sh`, STEP_TEST_SH);
  await write(`${dir}/${HARBOR_TASK.tests}/Dockerfile`, stepVerifierDockerfile(input.session.env, options.images));
  await writeAgentImage(input, `${dir}/${HARBOR_TASK.environment}`);
  await writeVerifierImage(input, `${dir}/${HARBOR_TASK.steps}/${steps.at(-1)!.name}/${HARBOR_TASK.tests}`);
  return name;
}

async function writeAgentImage(input: TaskInput, envDir: string): Promise<void> {
  const { write, store, spec, session, options } = input;
  const checkouts = spec.checkouts.map((c) => ({ path: c.path, archive: `checkouts/${c.path.split("/").pop()}.tar` }));
  for (const [path, content] of environmentFiles(session.env, options.images)) await write(`${envDir}/${path}`, content);
  for (const c of checkouts) await store.put("checkouts", session.archives.get(c.path)!, `${envDir}/${c.archive}`);
  await write(`${envDir}/switch-swe/observe.sh`, observeScript(spec.checkouts.map((c) => c.path)));
  await write(`${envDir}/Dockerfile`, agentDockerfile(session.env, options.images, { checkouts, workdir: workspaceOf(spec), user: options.agentUser }));
}

async function writeVerifierImage(input: TaskInput, testsDir: string): Promise<void> {
  const { write, link, store, bench, spec, condition, session, options } = input;
  const heldout = bench.requireHeldout(spec.focus, "whose held-out verifier scores the task");
  for (const [path, content] of environmentFiles(session.env, options.images)) await write(`${testsDir}/${path}`, content);
  if (session.revision) {
    await write(`${testsDir}/switch-swe/revision.sh`, session.revision.script);
    await store.put("revisions", session.revision.files, `${testsDir}/${VERIFIER_FILES.revision}`);
  }
  await store.put("mirrors", session.mirror, `${testsDir}/${VERIFIER_FILES.mirror}`);
  await link(`${testsDir}/${VERIFIER_FILES.node}`, SHARED_VERIFIER.node);
  await link(`${testsDir}/${VERIFIER_FILES.program}`, SHARED_VERIFIER.program);
  const rules = bench.profile(spec.repo).profile.classification;
  await write(
    `${testsDir}/${VERIFIER_FILES.input}`,
    verifierInput({ sessionId: spec.session_id, condition, focusCheckout: focusCheckoutOf(spec), heldout, rules }),
  );
  await write(`${testsDir}/${VERIFIER_FILES.script}`, VERIFIER_TEST_SH);
  await write(`${testsDir}/Dockerfile`, verifierDockerfile(session.env, options.images, session.revision ? { revision: session.revision.script } : {}));
}

function datasetReadme(benchmark: string, tasks: number): string {
  return [
    `# Switch-SWE ${benchmark} as a Harbor dataset`,
    "",
    `${tasks} multi-step tasks under tasks/, one per session and condition (switch-swe export harbor). Each step is`,
    "one request of the session, in one environment that holds the five checkouts; the last step's verifier runs",
    "switch-swe's verify on the focus checkout, and the trial's reward is that step's. Any Harbor agent that can",
    "resume its conversation runs it:",
    "",
    "```sh",
    "harbor run -p tasks -a claude-code -m anthropic/MODEL --resume-trajectory",
    "harbor run -p tasks -a oracle    # the references resolve every focus task",
    "```",
    "",
    "shared/ holds what several tasks hold (checkouts, the verifier's Node and program) once: the tasks' copies are",
    "hard links to it (copy the dataset with `cp -a`, `rsync -H` or `tar` to keep them so).",
    "",
    "Then `switch-swe report --harbor jobs/JOB -c PIPELINE.yaml` builds Tables 1-3. See docs/HARBOR.md in switch-swe.",
    "",
  ].join("\n");
}
