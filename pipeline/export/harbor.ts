import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { replaceDirectoryWith } from "../atomic.ts";
import { freshCheckout } from "../checkouts/checkout.ts";
import { checkoutCommit } from "../checkouts/derived.ts";
import { provisionCheckout } from "../checkouts/snapshot.ts";
import { fromDirectory, readCheckoutPins } from "../executors/checkout-pins.ts";
import { IN_IMAGE } from "../executors/docker.ts";
import { environmentSpec } from "../executors/environment.ts";
import { needsRevisionLayer, revisionScript, revisionVersion } from "../executors/recipe-scripts.ts";
import type { EnvironmentSpec } from "../executors/types.ts";
import { GIT_ENV } from "../git.ts";
import type { Logger } from "../logger.ts";
import type { OpenedBenchmark } from "../project/benchmark.ts";
import { SessionSpec } from "../schemas/session.ts";
import { sessionCloneSource } from "../session/runs.ts";
import { InputError } from "../validation.ts";
import { wrapperAdapter, type WrapperAdapter } from "./harbor-agents.ts";
import { agentDockerfile, environmentFiles, type ImageOptions, provisionScript, verifierDockerfile } from "./harbor-images.ts";
import { HARBOR_DATASET, HARBOR_TASK, PYTHON_FILES, taskDirName, VERIFIER_FILES } from "./harbor-layout.ts";
import { type Condition, focusCheckoutOf, sessionPlan, solveScript, taskToml, type VerifierNetwork, workspaceOf } from "./harbor-task.ts";
import { verifierFiles } from "./harbor-verifier.ts";
import { BenchmarkLayout } from "../benchmark-layout.ts";
import { readListedSessions } from "../session/listed-sessions.ts";

const execFileAsync = promisify(execFile);

export interface HarborExportOptions {
  /** The dataset's directory (replaced whole, only if it holds an earlier export). */
  out: string;
  /** Only these sessions (default: every session of the benchmark). */
  sessions?: string[];
  conditions: Condition[];
  /** Adapter files (data/agents/*-environment.yaml) of the harnesses the session agent may drive. */
  adapters: string[];
  images: ImageOptions;
  /** The user the agent runs as in the container (never root: Harbor's lint asks for one). */
  agentUser: { name: string; uid: number };
  /** Seconds between looks at the focus checkout during a focus return. */
  pollSeconds: number;
  /**
   * The verifier's network (default none). Harbor's local Docker environment enforces none only
   * through its egress-control sidecar, whose images come from Docker Hub; where they cannot be
   * pulled, `public` lets the tasks run there, the verifier's container then having a network.
   */
  verifierNetwork?: VerifierNetwork;
  log: Logger;
}

export class HarborExportError extends InputError {
  override name = "HarborExportError";
}

type Write = (path: string, content: string | Uint8Array) => Promise<void>;

/**
 * A commit's files as a tar archive, exactly as the session runner writes them into a checkout
 * (through the index, never `git archive`'s export-ignore or export-subst): provisioned, then
 * archived with those attributes switched off. Same commit, same bytes.
 */
async function checkoutArchive(mirror: string, commit: string, scratch: string): Promise<Buffer> {
  const dir = await mkdtemp(join(scratch, "harbor-export-"));
  try {
    await provisionCheckout(mirror, commit, join(dir, "repo"));
    await writeFile(join(dir, "repo", ".git", "info", "attributes"), "* -export-ignore -export-subst\n");
    const { stdout } = await execFileAsync("git", ["archive", "--format=tar", "HEAD"], {
      cwd: join(dir, "repo"),
      env: GIT_ENV,
      encoding: "buffer",
      maxBuffer: 2 ** 31,
    });
    return stdout;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The revision layer's script for the focus base, when the recipe installs from the checkout (as switch-swe's revision image is built). */
async function revisionLayer(env: EnvironmentSpec, mirror: string, commit: string, scratch: string): Promise<string | undefined> {
  if (!needsRevisionLayer(env.recipe)) return undefined;
  const checkout = await freshCheckout(mirror, commit, [], scratch);
  try {
    const pins = await readCheckoutPins(fromDirectory(checkout.dir), env.recipe.requirements_files);
    return revisionScript(env, { ...IN_IMAGE, python: `${IN_IMAGE.venv}/bin/python` }, await revisionVersion(checkout.dir), pins);
  } finally {
    await checkout.dispose();
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
 * `switch-swe export harbor`: an emitted benchmark as a Harbor dataset, one task per session and
 * condition (docs/HARBOR.md). The agent's image holds the focus task's environment and the five
 * checkouts at their base revisions; the verifier's image, the held-out tests and the scoring;
 * the solution, the reference. The dataset is written beside and swapped in whole.
 */
export async function exportHarbor(bench: OpenedBenchmark, options: HarborExportOptions): Promise<{ tasks: string[] }> {
  const adapters = options.adapters.map(wrapperAdapter);
  const sessions = sessionsOf(bench, options.sessions);
  const tasks: string[] = [];
  const archives = new Map<string, Buffer>();
  await replaceDirectoryWith(
    resolve(options.out),
    async (write) => {
      await writeAgentPackage(write, adapters);
      for (const { file, spec } of sessions) {
        options.log.info(`exporting ${spec.session_id} (${options.conditions.join(", ")})`);
        const source = bench.cloneSource(spec.repo, sessionCloneSource(spec, file));
        let mirror = "";
        for (const c of spec.checkouts) mirror = await bench.workspace.mirrors.ensure(spec.repo, source, c.base_commit);
        // A derived checkout's commit is made in the mirror, as the session runner makes it.
        for (const c of spec.checkouts) await checkoutCommit(mirror, c, (id) => bench.requireHeldout(id, `whose fix ${c.path} reverses`).upstream.patch);
        const archiveOf = async (commit: string) => {
          if (!archives.has(commit)) archives.set(commit, await checkoutArchive(mirror, commit, bench.workspace.scratch));
          return archives.get(commit)!;
        };
        for (const condition of options.conditions)
          tasks.push(await writeTask(write, bench, { spec, condition, mirror, archiveOf, options, firstAdapter: adapters[0] }));
      }
      await write(HARBOR_DATASET.readme, datasetReadme(sessions[0]?.spec.benchmark ?? "", tasks.length, adapters));
    },
    (existing) =>
      existing.every((p) => p.startsWith(`${HARBOR_DATASET.tasks}/`) || p.startsWith(`${HARBOR_DATASET.agentPackage}/`) || p === HARBOR_DATASET.readme),
  );
  return { tasks };
}

async function writeAgentPackage(write: Write, adapters: WrapperAdapter[]): Promise<void> {
  const pkg = HARBOR_DATASET.agentPackage;
  await write(`${pkg}/__init__.py`, PYTHON_FILES.agentInit);
  await write(`${pkg}/agent.py`, PYTHON_FILES.agent);
  for (const adapter of adapters) await write(`${pkg}/adapters/${adapter.name}.json`, JSON.stringify(adapter, null, 2) + "\n");
}

interface TaskInput {
  spec: SessionSpec;
  condition: Condition;
  mirror: string;
  archiveOf: (commit: string) => Promise<Buffer>;
  options: HarborExportOptions;
  firstAdapter: WrapperAdapter | undefined;
}

/** One task: config, instruction, the two images' contexts, the solution and the session agent's plan. */
async function writeTask(write: Write, bench: OpenedBenchmark, input: TaskInput): Promise<string> {
  const { spec, condition, options } = input;
  const name = taskDirName(spec.session_id, condition);
  const dir = `${HARBOR_DATASET.tasks}/${name}`;
  const heldout = bench.requireHeldout(spec.focus, "whose held-out verifier the task's tests are");
  const focus = spec.checkouts.find((c) => c.task_id === spec.focus)!;
  if (heldout.base_commit !== focus.base_commit)
    throw new HarborExportError(
      `${bench.heldoutDir}/${spec.focus}.json: base_commit ${heldout.base_commit} is not the session's focus checkout's (${focus.base_commit})`,
    );
  const env = environmentSpec(heldout.repo, heldout.environment, heldout.environment_as_of);
  const limits = bench.execution.limits;
  await write(
    `${dir}/${HARBOR_TASK.config}`,
    taskToml({
      spec,
      condition,
      heldout,
      limits: { cpus: limits.cpus, memory_mb: limits.memory_mb },
      agentUser: options.agentUser.name,
      name,
      verifierNetwork: options.verifierNetwork ?? "no-network",
    }),
  );
  const first = spec.conditions[condition][0]!.message;
  const message = input.firstAdapter?.message ?? "{text}";
  await write(
    `${dir}/${HARBOR_TASK.instruction}`,
    message.replace(/\{(repository|checkout|text)\}/g, (m) => first[m.slice(1, -1) as "repository" | "checkout" | "text"]) + "\n",
  );
  await write(`${dir}/${HARBOR_TASK.plan}`, sessionPlan(spec, condition, options.pollSeconds));
  await write(`${dir}/${HARBOR_TASK.solution}/solve.sh`, solveScript(spec));
  await write(`${dir}/${HARBOR_TASK.solution}/reference.patch`, heldout.implementation_patch);
  // The agent's image: the environment, and each checkout's archive.
  const envDir = `${dir}/${HARBOR_TASK.environment}`;
  const checkouts = spec.checkouts.map((c) => ({
    path: c.path,
    archive: `checkouts/${c.path.split("/").pop()}.tar`,
    commit: c.derived?.commit ?? c.base_commit,
  }));
  for (const [path, content] of environmentFiles(env, options.images)) await write(`${envDir}/${path}`, content);
  for (const c of checkouts) await write(`${envDir}/${c.archive}`, await input.archiveOf(c.commit));
  await write(`${envDir}/switch-swe/provision.sh`, provisionScript(checkouts, options.agentUser));
  await write(
    `${envDir}/Dockerfile`,
    agentDockerfile(
      env,
      options.images,
      checkouts.map((c) => c.archive.slice("checkouts/".length)),
      workspaceOf(spec),
    ),
  );
  // The verifier's image: the environment, the prepared focus checkout where there is one, the held-out files.
  const testsDir = `${dir}/${HARBOR_TASK.tests}`;
  const files = verifierFiles({
    heldout,
    rules: bench.profile(spec.repo).profile.classification,
    sessionId: spec.session_id,
    condition,
    focusCheckout: focusCheckoutOf(spec),
  });
  const revision = await revisionLayer(env, input.mirror, heldout.base_commit, bench.workspace.scratch);
  for (const [path, content] of environmentFiles(env, options.images)) await write(`${testsDir}/${path}`, content);
  if (revision) await write(`${testsDir}/switch-swe/revision.sh`, revision);
  for (const [path, content] of files) await write(`${testsDir}/${path}`, content);
  await write(`${testsDir}/${VERIFIER_FILES.baseArchive}`, await input.archiveOf(heldout.base_commit));
  await write(
    `${testsDir}/Dockerfile`,
    verifierDockerfile(env, options.images, revision ? { script: revision } : undefined, [...files.keys(), VERIFIER_FILES.baseArchive]),
  );
  return name;
}

function datasetReadme(benchmark: string, tasks: number, adapters: WrapperAdapter[]): string {
  return [
    `# Switch-SWE ${benchmark} as a Harbor dataset`,
    "",
    `${tasks} tasks under tasks/, one per session and condition (switch-swe export harbor). Each is one`,
    "continuous session of requests over five checkouts; run it with the session agent in switch_swe_harbor/,",
    `which drives ${adapters.map((a) => `${a.name} ${a.install.version}`).join(", ") || "a harness"} through the requests one at a time:`,
    "",
    "```sh",
    "PYTHONPATH=. harbor run -p tasks --agent switch_swe_harbor.agent:SwitchSweSession \\",
    "    --agent-kwarg harness=claude-code --agent-kwarg tools_dir=/path/to/.switch-swe/agents -m anthropic/MODEL",
    "harbor run -p tasks -a oracle    # the reference resolves every task",
    "```",
    "",
    "Then `switch-swe report --harbor jobs/JOB -c PIPELINE.yaml` builds Tables 1-3. See docs/HARBOR.md in switch-swe.",
    "",
  ].join("\n");
}
