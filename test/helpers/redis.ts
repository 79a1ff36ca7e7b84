import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { connect, createServer } from "node:net";

/** A free loopback port (the OS picks one; it is released before the caller binds it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The port refusingPort gives: a privileged one that no service uses, far below the ports the OS hands out. */
const REFUSING_PORT = 1;

/**
 * A loopback port nothing listens on, for a test of what a dead server does. A port freePort gave
 * can be taken by another test's server before it is used (a git service once answered 401 there);
 * this one is below the range the OS picks from for listen(0), so only a server that asks for it by
 * number could. Checked to refuse a connection now.
 */
export async function refusingPort(): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const socket = connect(REFUSING_PORT, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      reject(new Error(`something listens on 127.0.0.1:${REFUSING_PORT}: the tests of dead servers need a port that refuses connections`));
    });
    socket.once("error", (error: NodeJS.ErrnoException) => (error.code === "ECONNREFUSED" ? resolve() : reject(error)));
  });
  return REFUSING_PORT;
}

/**
 * A private redis-server on loopback for one test file, with no persistence. On a developer
 * machine without redis-server the queue tests skip; in CI (CI=true) a missing one is an error,
 * so they can never be skipped there by accident (.ci/run installs it).
 */
export async function startRedis(
  options: { bind?: string[]; password?: string } = {},
): Promise<{ url: string; port: number; stop: () => Promise<void> } | undefined> {
  if (spawnSync("redis-server", ["--version"]).status !== 0) {
    if (process.env.CI) throw new Error("CI=true but redis-server is not installed: .ci/run must install it");
    return undefined;
  }
  const port = await freePort();
  const bind = options.bind ?? ["127.0.0.1"];
  const auth = options.password ? ["--requirepass", options.password] : [];
  const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", ...bind, ...auth, "--save", "", "--appendonly", "no"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: Buffer[] = [];
  child.stdout!.on("data", (c: Buffer) => output.push(c));
  await new Promise<void>((resolve, reject) => {
    const started = Date.now();
    const poll = setInterval(() => {
      if (Buffer.concat(output).toString().includes("Ready to accept connections")) {
        clearInterval(poll);
        resolve();
      } else if (child.exitCode !== null || Date.now() - started > 30_000) {
        clearInterval(poll);
        reject(new Error(`redis-server did not start: ${Buffer.concat(output).toString().slice(-500)}`));
      }
    }, 50);
  });
  return {
    url: `redis://${options.password ? `:${options.password}@` : ""}127.0.0.1:${port}`,
    port,
    stop: () => killAndWait(child),
  };
}

/** Kills a server a test started, and resolves once it has exited. */
export function killAndWait(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}
