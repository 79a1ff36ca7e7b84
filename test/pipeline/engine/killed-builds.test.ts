import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { WORK_LABEL } from "../../../pipeline/executors/index.ts";
import { removeLeftovers, stopProcessesWorkingIn } from "../../../pipeline/engine/leftovers.ts";
import { WorkLayout } from "../../../pipeline/work-layout.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { processesRunning } from "../../helpers/processes.ts";
import { tempDir } from "../../helpers/tmp.ts";
import { processAlive } from "../../../pipeline/process-alive.ts";

const docker = await dockerForTests();
const helper = fileURLToPath(new URL("../../helpers/build-environment.ts", import.meta.url));

/** Starts a process that builds one environment with `recipe`, and nothing else. */
function startBuild(executor: "docker" | "local", workDir: string, recipe: object): ChildProcess {
  const checkout = join(workDir, "checkout");
  mkdirSync(checkout, { recursive: true });
  return spawn(process.execPath, ["--import", "tsx", helper, executor, workDir, checkout, JSON.stringify(recipe)], { stdio: ["ignore", "ignore", "pipe"] });
}

/** Polls `check` until it gives a value; fails if the build process ended first, or after `limitSeconds` (a bound, not a margin). */
async function until<T>(check: () => T | undefined | Promise<T | undefined>, limitSeconds: number, build?: ChildProcess): Promise<T> {
  const deadline = Date.now() + limitSeconds * 1000;
  let stderr = "";
  build?.stderr?.on("data", (d) => (stderr += d));
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (build && build.exitCode !== null)
      throw new Error(`the build process ended (exit ${build.exitCode}) before the build got there: ${stderr.slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`gave up after ${limitSeconds} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function killed(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

/**
 * The fault matrix's row "SIGKILL during an environment build": the build's processes must not
 * outlive the pipeline, and the next run in the work directory removes what the build left.
 */
describe("a pipeline killed during an environment build", () => {
  it("takes the local build's processes with it, those that left its process group too", async () => {
    const workDir = tempDir();
    const pids = join(workDir, "pids");
    mkdirSync(pids);
    const install = `sleep 1000 & echo $! > ${pids}/child; setsid sleep 1000 & echo $! > ${pids}/escaped; sleep 0.2; touch ${pids}/ready; wait`;
    const build = startBuild("local", workDir, { python: "3.11", install: [install] });
    await until(() => (existsSync(join(pids, "ready")) ? true : undefined), 600, build);
    const started = ["child", "escaped"].map((name) => Number(readFileSync(join(pids, name), "utf8")));
    expect(started.map(processAlive)).toEqual([true, true]);
    await killed(build);
    await until(() => (started.some(processAlive) ? undefined : true), 60);
    expect(started.map(processAlive)).toEqual([false, false]);
    // The half-built revision environment is never taken as built: the next build starts it over.
    const revisions = readdirSync(join(workDir, "envs")).filter((name) => name.startsWith("rev-"));
    expect(revisions).toHaveLength(1);
    expect(existsSync(join(workDir, "envs", revisions[0]!, ".ready"))).toBe(false);
  });

  it.skipIf(!docker)("stops the Docker build's container, which the next run then removes", async () => {
    const client = new Docker();
    const workDir = tempDir();
    const build = startBuild("docker", workDir, { python: "3.11", install: ["echo installing-now; sleep 1000 & sleep 1000"] });
    // The revision layer's build container (it carries the base commit), once its install step runs.
    const revisionBuild = () => client.listContainers({ filters: { label: [`${WORK_LABEL}=${workDir}`, "org.switch-swe.base-commit"], status: ["running"] } });
    const id = await until(
      async () => {
        for (const info of await revisionBuild()) {
          const logs = await client.getContainer(info.Id).logs({ stdout: true, stderr: true });
          if (logs.toString("latin1").includes("installing-now")) return info.Id;
        }
        return undefined;
      },
      600,
      build,
    );
    await killed(build);
    const state = await until(async () => {
      const info = await client.getContainer(id).inspect();
      return info.State.Running ? undefined : info.State;
    }, 60);
    expect(state.ExitCode).toBe(137);
    const removed = await removeLeftovers(new WorkLayout(workDir), silentLogger);
    expect(removed).toContain(`container ${id.slice(0, 12)}`);
    expect(await client.listContainers({ all: true, filters: { label: [`${WORK_LABEL}=${workDir}`] } })).toEqual([]);
  });
});

describe("what a dead run left running", () => {
  it("is stopped with its descendants, which neither name its folder nor work in it (a shim's runc init, a clone's helpers)", async () => {
    const partial = join(tempDir(), "mirror.git.partial-4242");
    mkdirSync(partial);
    // The shell names the folder; its child does neither, and would outlive it if only the shell were stopped.
    const holder = spawn("sh", ["-c", `cd / && sleep 4243 & wait # ${partial}`], { stdio: "ignore" });
    await until(async () => (processesRunning("sleep 4243").length ? true : undefined), 60);
    stopProcessesWorkingIn(partial);
    await until(async () => (holder.exitCode !== null || holder.signalCode !== null ? true : undefined), 60);
    await until(async () => (processesRunning("sleep 4243").length ? undefined : true), 60);
    expect(holder.signalCode).toBe("SIGKILL");
  });
});
