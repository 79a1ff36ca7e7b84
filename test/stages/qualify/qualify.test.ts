import { demoExtensions } from "../../helpers/demo-extensions.ts";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { beforeAll, describe, expect, it } from "vitest";
import { type PullIntent } from "../../../demo/build.ts";
import { runProjectOnce } from "../../../pipeline/project/project.ts";
import { DockerExecutor } from "../../../pipeline/executors/docker.ts";
import { WORK_LABEL } from "../../../pipeline/executors/index.ts";
import { environmentSpec } from "../../../pipeline/executors/environment.ts";
import { InfrastructureFault } from "../../../pipeline/executors/types.ts";
import { EnvironmentRecipe } from "../../../pipeline/schemas/repo-profile.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import type { QualificationRecord } from "../../../pipeline/schemas/qualification.ts";
import { RetriesExhausted, withInfrastructureRetries } from "../../../pipeline/executors/retries.ts";
import { withExecution } from "../../helpers/demo-copy.ts";
import { demoRunCopy, type DemoRunCopy } from "../../helpers/demo-run.ts";
import { runCli } from "../../helpers/cli-in-process.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { fileTempDir } from "../../helpers/tmp.ts";

const bin = fileURLToPath(new URL("../../../bin/switch-swe.mjs", import.meta.url));
const docker = await dockerForTests();

/**
 * The latest modification time (ms) of any cached record under `dir`, or 0. An atomic write's
 * temporary (`.name.tmp-…`) is not a record yet, and may be renamed away between the listing and
 * the look at it (it was, once in CI: the look threw from the poll's timer).
 */
function newestCacheWrite(dir: string): number {
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.startsWith("."))
    .reduce((latest, entry) => Math.max(latest, statSync(join(entry.parentPath, entry.name), { throwIfNoEntry: false })?.mtimeMs ?? 0), 0);
}

function readRecords<T>(path: string): T[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe("qualify on the demo corpus", () => {
  let intents: Map<string, PullIntent>;
  let demo: DemoRunCopy;
  const qualified = () => ({
    records: readRecords<QualificationRecord>(join(demo.workDir, "artifacts", "qualify", "qualifications.jsonl")),
    text: readFileSync(join(demo.workDir, "artifacts", "qualify", "qualifications.jsonl"), "utf8"),
  });
  const qualifyWith = async (executor: "local" | "docker", force = true) => {
    const summary = await runProjectOnce(withExecution(demo.options, { executor }), { only: "qualify", force });
    return { summary, ...qualified() };
  };
  /** The local executor's qualification, from the test run's one demo run (test/helpers/demo-run.ts), copied here. */
  let local: ReturnType<typeof qualified>;

  beforeAll(async () => {
    demo = await demoRunCopy();
    expect(demo.summary.stages.find((s) => s.stage === "qualify")).toMatchObject({ status: "ran", in: 53 });
    intents = new Map(
      (JSON.parse(readFileSync(join(demo.corpus.dir, "intents.json"), "utf8")) as PullIntent[]).map((i) => [`${i.repo.replace("/", "__")}-${i.number}`, i]),
    );
    local = qualified();
  });

  it("finds every intended F2P test, excludes flaky ones as unstable, flags regressions", () => {
    const extensions = demoExtensions();
    expect(extensions.size).toBeGreaterThan(0);
    expect(local.records).toHaveLength(53);
    for (const record of local.records) {
      const intent = intents.get(record.task_id)!;
      // The pull request's F2P tests, and those of the task's benchmark-authored stages.
      expect(record.fail_to_pass, record.task_id).toEqual([...intent.fail_to_pass, ...(extensions.get(record.task_id)?.tests ?? [])].sort());
      expect(record.unstable, record.task_id).toEqual([...intent.flaky].sort());
      expect(record.pass_to_fail, record.task_id).toEqual([...intent.regressions].sort());
      // Three runs before and after; an extended task also three with everything before each authored stage.
      expect(record.runs).toHaveLength(3 * (2 + (extensions.get(record.task_id)?.stages ?? 0)));
      for (const run of record.runs) expect(Object.keys(run.outcomes)).toEqual(record.designated_tests);
      if (intent.regressions.length) expect(record).toMatchObject({ kept: false, reject_reason: "regression" });
      else if (!intent.fail_to_pass.length) expect(record).toMatchObject({ kept: false, reject_reason: "no_fail_to_pass" });
      else expect(record.kept, record.task_id).toBe(true);
    }
    const rejects = readRecords<{ record_id: string; reason: string }>(join(demo.workDir, "artifacts", "qualify", "rejects.jsonl"));
    expect(rejects.map((r) => r.reason).sort()).toEqual(["no_fail_to_pass", "regression", "regression", "regression"]);
  });

  it("`qualify task ID --config` resolves the task's environment and qualifies the states exactly as the stage does, benchmark-authored stages included", async () => {
    const plain = local.records.find((r) => r.kept && !intents.get(r.task_id)!.flaky.length && !demoExtensions().has(r.task_id))!;
    const extended = local.records.find((r) => demoExtensions().has(r.task_id))!;
    for (const stage of [plain, extended]) {
      const args = ["qualify", "task", stage.task_id, "--config", demo.configPath, "--executor", "local", "--runs", "3", "--work-dir", fileTempDir(), "--json"];
      const run = await runCli(args);
      expect(run.code, run.stderr).toBe(stage.kept ? 0 : 1);
      const byHand = JSON.parse(run.stdout) as QualificationRecord;
      expect({ ...byHand, runs: byHand.runs.map((r) => r.outcomes) }, stage.task_id).toEqual({ ...stage, runs: stage.runs.map((r) => r.outcomes) });
    }
  });

  it("`qualify task FILE` without a config takes the record's own version and date: for the earliest task of its environment, the stage's environment and sets", async () => {
    const splits = readRecords<{ task_id: string; repo: string; created_at: string }>(join(demo.workDir, "artifacts", "split", "splits.jsonl"));
    // The stage dates an environment by the earliest task sharing it: that task's own date is the stage's.
    const stage = local.records.find(
      (r) =>
        r.kept &&
        !intents.get(r.task_id)!.flaky.length &&
        !demoExtensions().has(r.task_id) &&
        splits.find((s) => s.task_id === r.task_id)!.created_at === r.as_of,
    )!;
    expect(stage).toBeDefined();
    const split = splits.find((s) => s.task_id === stage.task_id)!;
    const file = join(fileTempDir(), "split.json");
    writeFileSync(file, JSON.stringify(split) + "\n");
    const profile = join(dirname(demo.configPath), "repos", `${split.repo.replace("/", "__")}.json`);
    const args = ["qualify", "task", file, "--profile", profile, "--executor", "local", "--runs", "3", "--work-dir", fileTempDir(), "--json"];
    const run = await runCli(args);
    expect(run.code, run.stderr).toBe(0);
    const byHand = JSON.parse(run.stdout) as QualificationRecord;
    expect(byHand).toMatchObject({
      as_of: stage.as_of,
      environment_key: stage.environment_key,
      fail_to_pass: stage.fail_to_pass,
      pass_to_pass: stage.pass_to_pass,
    });
  });

  it("gives byte-identical records when SIGKILLed mid-run and run again", async () => {
    await new Promise<void>((resolve, reject) => {
      const started = Date.now();
      const child = spawn(process.execPath, [bin, "qualify", "--config", demo.configPath, "--executor", "local", "--force", "-q"], { stdio: "ignore" });
      // Killed mid-run, whatever the machine's load: once it has cached its first record, not at a fixed time.
      const poll = setInterval(() => {
        if (newestCacheWrite(join(demo.workDir, "cache", "qualify")) > started) child.kill("SIGKILL");
      }, 50);
      child.on("exit", (_c, signal) => {
        clearInterval(poll);
        if (signal === "SIGKILL") resolve();
        else reject(new Error("qualify finished before it was killed"));
      });
    });
    const again = await qualifyWith("local", false);
    expect(again.summary.stages[0]!.reused).toBeGreaterThan(0);
    expect(again.text).toBe(local.text);
  });

  it.skipIf(!docker)("the Docker executor agrees with the local one on every task", async () => {
    const viaDocker = await qualifyWith("docker");
    expect(viaDocker.records.map((r) => r.executor)).toEqual(viaDocker.records.map(() => "docker"));
    const sets = (records: QualificationRecord[]) =>
      records.map((r) => ({ id: r.task_id, f2p: r.fail_to_pass, p2p: r.pass_to_pass, p2f: r.pass_to_fail, unstable: r.unstable, kept: r.kept }));
    expect(sets(viaDocker.records)).toEqual(sets(local.records));
    // Only this run's containers: other test files may be running their own at the same time.
    const leftovers = await new Docker().listContainers({ all: true, filters: { label: [`${WORK_LABEL}=${join(demo.workDir, "")}`] } });
    expect(leftovers).toEqual([]);
  });
});

describe("infrastructure faults", () => {
  it("retries a fault at most twice, counts the retries, then gives up saying why", async () => {
    let calls = 0;
    const flaky = async () => {
      calls++;
      if (calls <= 2) throw new InfrastructureFault("the engine restarted");
      return "ok";
    };
    expect(await withInfrastructureRetries("t", silentLogger, flaky, [0])).toEqual({ value: "ok", retries: 2 });
    calls = -10;
    const error = await withInfrastructureRetries("t", silentLogger, flaky, [0]).catch((e) => e);
    // The stage turns this into a reject that is not cached (test/pipeline/qualification/failures.test.ts).
    expect(error).toBeInstanceOf(RetriesExhausted);
    expect(error).toMatchObject({ reason: "infrastructure_fault" });
    expect(error.message).toMatch(/the engine restarted \(after 2 retries\)/);
    const notAFault = await withInfrastructureRetries(
      "t",
      silentLogger,
      async () => {
        throw new Error("a bug");
      },
      [0],
    ).catch((e) => e);
    expect(notAFault.message).toBe("a bug");
  });

  it.skipIf(!docker)("turns a Docker engine error into an infrastructure fault", async () => {
    const broken = new DockerExecutor(new Docker({ socketPath: "/nonexistent/docker.sock" }), silentLogger);
    const env = environmentSpec("o/r", EnvironmentRecipe.parse({ python: "3.11" }), null);
    await expect(broken.ensureEnvironment(env)).rejects.toBeInstanceOf(InfrastructureFault);
    await expect(broken.run({ env, checkoutDir: "/tmp", tests: [], timeoutSeconds: 5 })).rejects.toBeInstanceOf(InfrastructureFault);
  });
});
