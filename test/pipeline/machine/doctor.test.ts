import { spawn } from "node:child_process";
import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { afterEach, describe, expect, it } from "vitest";
import { createExecutor, DEFAULT_LIMIT_SETTINGS } from "../../../pipeline/executors/index.ts";
import { createLogger } from "../../../pipeline/logger.ts";
import { machineChecks } from "../../../pipeline/machine/doctor.ts";
import { pidfileHeldByAnother } from "../../../pipeline/machine/engine-pidfile.ts";
import { tempDir } from "../../helpers/tmp.ts";

const profilesDir = fileURLToPath(new URL("../../../data/repos", import.meta.url));
const started: { kill(): boolean }[] = [];
afterEach(() => {
  for (const child of started.splice(0)) child.kill();
});

/** A live process whose name (/proc/PID/comm) is `name`: `sleep` copied under that name. */
async function liveProcessNamed(dir: string, name: string): Promise<number> {
  const binary = join(dir, name);
  copyFileSync("/bin/sleep", binary);
  const child = spawn(binary, ["300"], { stdio: "ignore" });
  started.push(child);
  await new Promise((resolve, reject) => child.once("spawn", resolve).once("error", reject));
  return child.pid!;
}

describe("a machine where no Docker engine answers", () => {
  // The CI machine whose /run outlived its engine: /var/run/docker.pid named a PID another process
  // had by then, and dockerd refused to start ("pid file found"). A PID no process has, or no PID,
  // does not stop it (dockerd overwrites the file; checked by hand with dockerd 20.10).
  it("an engine pid file is stale when another program's process has the PID it names, and only then", async () => {
    const dir = tempDir("pidfile-");
    const file = join(dir, "docker.pid");
    expect(pidfileHeldByAnother(file, "dockerd")).toBeUndefined();

    const other = await liveProcessNamed(dir, "sleeper");
    writeFileSync(file, `${other}\n`);
    expect(pidfileHeldByAnother(file, "dockerd")).toEqual({ pid: other, holder: "sleeper" });

    // Above any pid_max Linux allows (2^22), so no process has it.
    writeFileSync(file, "4194305\n");
    expect(pidfileHeldByAnother(file, "dockerd")).toBeUndefined();

    writeFileSync(file, "");
    expect(pidfileHeldByAnother(file, "dockerd")).toBeUndefined();
  });

  it("an engine pid file is not stale when the PID it names is the daemon's", async () => {
    const dir = tempDir("pidfile-");
    const file = join(dir, "docker.pid");
    writeFileSync(file, `${await liveProcessNamed(dir, "dockerd")}\n`);
    expect(pidfileHeldByAnother(file, "dockerd")).toBeUndefined();
  });

  it("doctor names a stale pid file, and how to clear it, when no engine answers", async () => {
    const dir = tempDir("pidfile-");
    const stale = join(dir, "docker.pid");
    const other = await liveProcessNamed(dir, "sleeper");
    writeFileSync(stale, String(other));
    // Naming no live process: harmless, so not reported.
    const harmless = join(dir, "containerd.pid");
    writeFileSync(harmless, "4194305");
    const report = await machineChecks({
      profilesDir,
      docker: new Docker({ socketPath: join(dir, "no-engine.sock") }),
      enginePidfiles: [
        { file: stale, process: "dockerd", effect: "dockerd refuses to start" },
        { file: harmless, process: "containerd", effect: "dockerd hangs" },
      ],
    });
    const engine = report.checks.find((c) => c.name === "docker engine")!;
    expect(engine.ok).toBe(false);
    expect(engine.detail).toBe(
      `no engine answers (DOCKER_HOST, or /var/run/docker.sock); ${stale} names PID ${other}, now sleeper's, not dockerd's (left by an engine that is gone): dockerd refuses to start`,
    );
    expect(engine.fix).toBe(
      `remove the stale pid files (rm ${stale}), then start dockerd (as root: dockerd >/var/log/dockerd.log 2>&1 &); without it the local executor runs repository tests unsandboxed`,
    );
  });

  it("a run with no engine falls back to the local executor, saying so and where to find why", async () => {
    const dir = tempDir("no-engine-");
    const lines: string[] = [];
    const log = createLogger({ level: "info", write: (line) => lines.push(line) });
    const before = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = `unix://${join(dir, "no-engine.sock")}`;
    try {
      const made = await createExecutor({ executor: "auto", limits: DEFAULT_LIMIT_SETTINGS }, { workDir: join(dir, "work"), log });
      expect(made.kind).toBe("local");
    } finally {
      if (before === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = before;
    }
    expect(lines.find((l) => l.includes("no Docker engine answers"))).toMatch(/`switch-swe doctor` says why\): using the local executor, .*UNSANDBOXED/);
  });
});
