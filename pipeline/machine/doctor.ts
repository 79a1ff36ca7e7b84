import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type Docker from "dockerode";
import { dockerEngine } from "../executors/docker-engine.ts";
import { BaseImages, DEBIAN_FOR_PYTHON } from "../executors/base-images.ts";
import { dockerAvailable } from "../executors/docker.ts";
import { loadProfilesDir } from "../profiles/load.ts";
import type { RepoProfile } from "../schemas/repo-profile.ts";
import { silentLogger } from "../logger.ts";
import { ENGINE_PIDFILES, type EnginePidfile, pidfileHeldByAnother } from "./engine-pidfile.ts";

const execFileAsync = promisify(execFile);

/** One thing `switch-swe doctor` checks, and how to fix it when it is missing. */
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

/**
 * The Debian suites whose base images the profiles' recipes build on: for each Python preference
 * (a recipe's or an override's), the suite of the first version a Debian base image gives, and
 * bookworm (where uv's managed Pythons build) for a preference that starts with another version.
 */
export function suitesProfilesNeed(profiles: RepoProfile[]): string[] {
  const suites = new Set<string>();
  const preferences = profiles.flatMap((p) => [
    p.environment.python,
    ...p.environment_overrides.flatMap((o) => (o.recipe.python === undefined ? [] : [o.recipe.python])),
  ]);
  for (const preference of preferences) {
    const versions = typeof preference === "string" ? [preference] : preference;
    if (!(versions[0]! in DEBIAN_FOR_PYTHON)) suites.add("bookworm");
    const offered = versions.find((v) => v in DEBIAN_FOR_PYTHON);
    if (offered) suites.add(DEBIAN_FOR_PYTHON[offered]!);
  }
  return Object.values(DEBIAN_FOR_PYTHON).filter((suite) => suites.has(suite));
}

/**
 * What this machine has for a run: Node, git, Python, the Docker engine, the base image of every
 * suite the profiles in `profilesDir` need (through the engine's API), and whether GITHUB_TOKEN is
 * set (never its value).
 */
export async function machineChecks(options: {
  env?: NodeJS.ProcessEnv;
  profilesDir: string;
  docker?: Docker;
  /** The engine's pid files to check when no engine answers (the defaults are dockerd's). */
  enginePidfiles?: readonly EnginePidfile[];
}): Promise<DoctorReport> {
  const env = options.env ?? process.env;
  const checks: DoctorCheck[] = [];
  const nodeMajor = Number(process.versions.node.split(".")[0]);
  checks.push({ name: "node", ok: nodeMajor >= 20, required: true, detail: `Node.js ${process.versions.node}`, fix: "install Node.js 20 or newer" });

  const gitVersion = await version("git", ["--version"]);
  checks.push({ name: "git", ok: Boolean(gitVersion), required: true, detail: gitVersion ?? "not found on PATH", fix: "apt-get install git" });

  const pythonVersion = await version("python3", ["--version"]);
  const minor = /Python 3\.(\d+)/.exec(pythonVersion ?? "")?.[1];
  checks.push({
    name: "python",
    ok: minor !== undefined && Number(minor) >= 8,
    required: true,
    detail: pythonVersion ?? "python3 not found on PATH",
    fix: "apt-get install python3 python3-venv (3.8 or newer; the local executor makes one virtual environment per recipe)",
  });

  const docker = options.docker ?? dockerEngine();
  const engineOk = await dockerAvailable(docker);
  // Only when no engine answers: a running engine owns its pid files, whatever they hold.
  const stale = (engineOk ? [] : (options.enginePidfiles ?? ENGINE_PIDFILES)).flatMap((p) => {
    const held = pidfileHeldByAnother(p.file, p.process);
    return held
      ? [{ file: p.file, why: `${p.file} names PID ${held.pid}, now ${held.holder}'s, not ${p.process}'s (left by an engine that is gone): ${p.effect}` }]
      : [];
  });
  const start = "start dockerd (as root: dockerd >/var/log/dockerd.log 2>&1 &); without it the local executor runs repository tests unsandboxed";
  checks.push({
    name: "docker engine",
    ok: engineOk,
    required: false,
    detail: engineOk ? "answering" : ["no engine answers (DOCKER_HOST, or /var/run/docker.sock)", ...stale.map((s) => s.why)].join("; "),
    fix: stale.length > 0 ? `remove the stale pid files (rm ${stale.map((s) => s.file).join(" ")}), then ${start}` : `apt-get install docker.io, then ${start}`,
  });
  if (engineOk) {
    const { profiles, dir } = loadProfilesDir(options.profilesDir, process.cwd());
    const images = new BaseImages(docker, silentLogger);
    for (const suite of suitesProfilesNeed([...profiles.values()].map((l) => l.profile))) {
      const present = await images.present(suite).catch(() => false);
      const tag = BaseImages.tagOf(suite);
      checks.push({
        name: `base image ${suite}`,
        ok: present,
        required: false,
        detail: present ? `${tag} present` : `${tag} missing (the profiles in ${dir} need it)`,
        fix: `a run makes it when it first needs it (pulled from execution.base_images.registry, or built by debootstrap as root); to make it now: switch-swe images base --suite ${suite}`,
      });
    }
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
