import Docker from "dockerode";

const clients = new Map<string, Docker>();

/**
 * The process's one client of the Docker engine: the engine DOCKER_HOST names, else the default
 * socket (dockerode reads DOCKER_HOST when a client is made, so a change of it gets a client of its
 * own). Every part of switch-swe that talks to the engine (executors, base images, the session's
 * agent containers, leftovers, doctor, images list and prune, worker health) takes its handle from
 * here; none makes its own. `check:deps` keeps it so.
 */
export function dockerEngine(): Docker {
  const host = process.env.DOCKER_HOST ?? "";
  let client = clients.get(host);
  if (!client) {
    client = new Docker();
    clients.set(host, client);
  }
  return client;
}
