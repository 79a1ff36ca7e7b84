import { execFileSync } from "node:child_process";
import Docker from "dockerode";
import { dockerAvailable } from "../../pipeline/executors/docker.ts";

/**
 * Whether the Docker tests can run. On a developer machine without an engine they skip; in CI
 * (CI=true) a missing engine is an error, so they can never be skipped there by accident.
 */
export async function dockerForTests(): Promise<boolean> {
  const up = await dockerAvailable(new Docker());
  if (!up && process.env.CI) throw new Error("CI=true but no Docker engine answers: .ci/run must start dockerd");
  return up;
}

/** The versions of `packages` installed in an image's environment, space-separated, read with no network. */
export const installedVersions = (image: string, packages: string[]) =>
  execFileSync(
    "docker",
    [
      "run",
      "--rm",
      "--network",
      "none",
      image,
      "/env/bin/python",
      "-c",
      `import importlib.metadata as m; print(${packages.map((p) => `m.version('${p}')`).join(", ")})`,
    ],
    { encoding: "utf8" },
  ).trim();
