import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, killAndWait } from "./redis.ts";

/**
 * An image registry on loopback (Debian's docker-registry, the Distribution registry), for the
 * tests of pulling base images: no registry on the internet is reachable here. A Docker engine
 * talks plain HTTP to a registry on 127.0.0.0/8 without being told to. On a developer machine
 * without docker-registry the tests skip; in CI (CI=true) a missing one is an error.
 */
export async function startRegistry(dir: string): Promise<{ address: string; stop: () => Promise<void> } | undefined> {
  if (spawnSync("docker-registry", ["--version"]).error) {
    if (process.env.CI) throw new Error("CI=true but docker-registry is not installed: .ci/run must install it");
    return undefined;
  }
  const port = await freePort();
  mkdirSync(join(dir, "storage"), { recursive: true });
  const config = join(dir, "config.yml");
  writeFileSync(
    config,
    `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, "storage")}\nhttp:\n  addr: 127.0.0.1:${port}\n`,
  );
  const child: ChildProcess = spawn("docker-registry", ["serve", config], { stdio: "ignore" });
  const address = `127.0.0.1:${port}`;
  for (let up = false; !up;) {
    up = await fetch(`http://${address}/v2/`).then(
      (r) => r.ok,
      () => false,
    );
    if (child.exitCode !== null) throw new Error(`docker-registry exited ${child.exitCode} at start`);
    if (!up) await new Promise((r) => setTimeout(r, 100));
  }
  return {
    address,
    stop: () => killAndWait(child),
  };
}
