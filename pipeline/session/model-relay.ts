import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import type { AgentEnvironment } from "./environment.ts";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processAlive } from "../process-alive.ts";

/**
 * A harness that runs in the focus task's environment (`runs: environment`) reaches a model
 * endpoint on this machine's loopback through a relay: its container has no network (or only the
 * bridge, where this machine's loopback is not), so the runner listens on a Unix socket in a
 * directory mounted into the container and passes each connection to the endpoint, and a small
 * relay inside the container listens on the container's own loopback at the endpoint's port and
 * passes each connection to that socket. The harness is given the same URL as on the host, and
 * nothing else of the host is reachable from the container.
 */

/** Where the relay's directory is mounted in the container. Nothing in it names a task or a role. */
export const RELAY_MOUNT = "/run/switch-swe-model";
const SOCKET = "model.sock";
const SCRIPT = "relay.py";

/** Whether a model URL is on this machine's loopback (where a container cannot reach it). */
export function isLoopbackUrl(url: string): boolean {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

/**
 * The relay inside the container: TCP on 127.0.0.1:PORT to the Unix socket, both ways, one thread
 * pair a connection. Written for any Python 3 an environment image has (3.5 and later): no
 * f-strings, nothing outside the standard library.
 */
const RELAY_SCRIPT = `import socket, sys, threading

port, path = int(sys.argv[1]), sys.argv[2]
server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen(64)


def pump(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        try:
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve(client):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client))
    back.daemon = True
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


while True:
    connection, _ = server.accept()
    worker = threading.Thread(target=serve, args=(connection,))
    worker.daemon = True
    worker.start()
`;

/** Waits (up to ~30 s) until the relay in the container accepts a connection; exits 1 if it never does. */
const relayReadyCheck = (port: number): string[] => [
  "python3",
  "-c",
  `import socket, time\nfor _ in range(300):\n    try:\n        socket.create_connection(("127.0.0.1", ${port}), 1).close()\n        break\n    except OSError:\n        time.sleep(0.1)\nelse:\n    raise SystemExit(1)\n`,
];

/** A relay's directory is `ssm-<pid of the runner>-<random>`: whose it is, so a dead runner's can be found. */
export const RELAY_DIR_PREFIX = "ssm-";
const RELAY_DIR = new RegExp(`^${RELAY_DIR_PREFIX}(\\d+)-[A-Za-z0-9]+$`);

/**
 * Removes the relay directories of runners that are gone (a run killed with SIGKILL cannot remove
 * its own): each holds only a socket and the relay's script.
 */
async function removeAbandonedRelays(): Promise<void> {
  const names = await readdir(tmpdir()).catch(() => [] as string[]);
  for (const name of names) {
    const pid = Number(RELAY_DIR.exec(name)?.[1]);
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || processAlive(pid)) continue;
    await rm(join(tmpdir(), name), { recursive: true, force: true }).catch(() => undefined);
  }
}

export interface ModelRelay {
  /** The host directory to mount at RELAY_MOUNT. */
  dir: string;
  /**
   * Starts the relay in the agent's environment (detached, for the whole session) and waits until
   * it listens; a relay that does not is an error naming the image and the relay's log.
   */
  startIn: (environment: AgentEnvironment, image: string, logFile: string) => Promise<void>;
  /** The endpoint's URL as the harness in the container reaches it. */
  containerUrl: string;
  port: number;
  close: () => Promise<void>;
}

/**
 * Starts the host side of a relay to the endpoint at `url`. Its directory is a short one of its
 * own under the system's temporary directory: a Unix socket's path has at most ~107 bytes, which
 * a run's directory may exceed.
 */
export async function startModelRelay(url: string): Promise<ModelRelay> {
  const target = new URL(url);
  const port = Number(target.port || (target.protocol === "https:" ? 443 : 80));
  const host = target.hostname.replace(/^\[|\]$/g, "");
  await removeAbandonedRelays();
  const dir = await mkdtemp(join(tmpdir(), `${RELAY_DIR_PREFIX}${process.pid}-`));
  await writeFile(join(dir, SCRIPT), RELAY_SCRIPT);
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect({ host: host === "localhost" ? "127.0.0.1" : host, port });
    open.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(join(dir, SOCKET), () => resolve());
  });
  // The URL inside: the same port on the container's own loopback (IPv4, which the relay binds).
  const inside = new URL(url);
  inside.hostname = "127.0.0.1";
  return {
    dir,
    port,
    startIn: async (environment, image, logFile) => {
      await environment.startDetached(["python3", `${RELAY_MOUNT}/${SCRIPT}`, String(port), `${RELAY_MOUNT}/${SOCKET}`]);
      const ready = await environment.exec(relayReadyCheck(port), { cwd: "/", env: {}, budgetSeconds: 60, logFile });
      if (ready.exit !== 0)
        throw new Error(
          `the model endpoint ${url} could not be relayed into the agent's environment (python3 in ${image} did not listen on 127.0.0.1:${port}; see ${logFile})`,
        );
    },
    containerUrl: inside.toString().replace(/\/$/, url.endsWith("/") ? "/" : ""),
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
