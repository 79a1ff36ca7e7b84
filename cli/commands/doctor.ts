import { execFile } from "node:child_process";
import type { Command } from "commander";
import type { ExitCode, Io } from "../io.ts";
import { request } from "node:http";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** The base image the Docker executor builds every environment from. */
export const BASE_IMAGE = "switch-swe-base:bookworm";

export interface DoctorCheck {
  name: string;
  ok: boolean;
  /** A failing required check makes `doctor` exit 1; optional ones only warn. */
  required: boolean;
  detail: string;
  fix: string;
}

export interface DoctorReport {
  ok: boolean;
  checks: DoctorCheck[];
}

async function version(command: string, args: string[]): Promise<string | undefined> {
  try {
    const { stdout, stderr } = await execFileAsync(command, args, { timeout: 10_000 });
    return (stdout || stderr).trim().split("\n")[0];
  } catch {
    return undefined;
  }
}

/** Talks to the Docker engine's HTTP API on its Unix socket; no client library needed for a ping. */
function dockerGet(path: string, socketPath: string): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path, method: "GET", timeout: 3000 }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", () => resolve(undefined));
    req.on("timeout", () => {
      req.destroy();
      resolve(undefined);
    });
    req.end();
  });
}

export function dockerSocketPath(env: NodeJS.ProcessEnv = process.env): string {
  const host = env.DOCKER_HOST;
  return host?.startsWith("unix://") ? host.slice(7) : "/var/run/docker.sock";
}

export async function runDoctor(env: NodeJS.ProcessEnv = process.env): Promise<DoctorReport> {
  const checks: DoctorCheck[] = [];
  const nodeMajor = Number(process.versions.node.split(".")[0]);
  checks.push({ name: "node", ok: nodeMajor >= 20, required: true, detail: `Node.js ${process.versions.node}`, fix: "install Node.js 20 or newer" });

  const gitVersion = await version("git", ["--version"]);
  checks.push({ name: "git", ok: Boolean(gitVersion), required: true, detail: gitVersion ?? "not found on PATH", fix: "apt-get install git" });

  const pythonVersion = await version("python3", ["--version"]);
  const pythonOk = Boolean(pythonVersion && /Python 3\.(\d+)/.exec(pythonVersion) && Number(/Python 3\.(\d+)/.exec(pythonVersion)![1]) >= 8);
  checks.push({
    name: "python",
    ok: pythonOk,
    required: true,
    detail: pythonVersion ?? "python3 not found on PATH",
    fix: "apt-get install python3 python3-venv (3.8 or newer; the local executor makes one virtual environment per recipe)",
  });

  const socket = dockerSocketPath(env);
  const ping = await dockerGet("/_ping", socket);
  const engineOk = ping?.status === 200;
  checks.push({
    name: "docker engine",
    ok: engineOk,
    required: false,
    detail: engineOk ? `answering on ${socket}` : `no engine answers on ${socket}`,
    fix: "apt-get install docker.io, then start dockerd (as root: dockerd >/var/log/dockerd.log 2>&1 &); without it the local executor runs repository tests unsandboxed",
  });
  if (engineOk) {
    const image = await dockerGet(`/images/${encodeURIComponent(BASE_IMAGE)}/json`, socket);
    checks.push({
      name: "base image",
      ok: image?.status === 200,
      required: false,
      detail: image?.status === 200 ? `${BASE_IMAGE} present` : `${BASE_IMAGE} not built`,
      fix: "build it from a Debian root filesystem with 'switch-swe images base' (the Docker executor, issue #6)",
    });
  }

  const hasToken = Boolean(env.GITHUB_TOKEN);
  checks.push({
    name: "GITHUB_TOKEN",
    ok: hasToken,
    required: false,
    // Only whether it is set: the token itself is never printed.
    detail: hasToken
      ? "set (value not shown)"
      : "not set; mining GitHub is limited to 60 unauthenticated requests an hour, and without GraphQL (sidebar links are not found)",
    fix: "export GITHUB_TOKEN=... (a fine-grained token with read access to public repositories), or pass --token-file",
  });
  return { ok: checks.every((c) => c.ok || !c.required), checks };
}

export function registerDoctor(program: Command, io: Io, exit: ExitCode): void {
  program
    .command("doctor")
    .description("check git, Python, the Docker engine and base image, and GITHUB_TOKEN; say how to fix what is missing")
    .option("--json", "print the checks as JSON")
    .addHelpText("after", "\nExample:\n  switch-swe doctor")
    .action(
      exit.act(async (opts) => {
        const report = await runDoctor();
        if (opts.json) io.out(JSON.stringify(report, null, 2) + "\n");
        else
          for (const check of report.checks)
            io.out(`${check.ok ? "ok  " : check.required ? "FAIL" : "warn"}  ${check.name}: ${check.detail}${check.ok ? "" : `\n      fix: ${check.fix}`}\n`);
        return report.ok ? 0 : 1;
      }),
    );
}
