import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE_REPOSITORY } from "../../../pipeline/executors/docker.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { isRoot } from "../../helpers/fault-rows.ts";
import { createFleetNetwork, type FleetNetwork, hostAddressOn } from "../../helpers/fleet.ts";
import { PrivateDockerd } from "../../helpers/private-dockerd.ts";
import { fileTempDir } from "../../helpers/tmp.ts";

const docker = await dockerForTests();
const BASE_IMAGE = `${BASE_REPOSITORY}:bookworm`;

describe("the host's address on a Docker network", () => {
  const interfaces = (name: string, address: string) => ({
    [name]: [{ address, netmask: "255.255.0.0", family: "IPv4" as const, mac: "02:42:00:00:00:01", internal: false, cidr: `${address}/16` }],
  });

  it("is the gateway the engine reports", () => {
    const network = { Id: "a".repeat(64), Name: "fleet", IPAM: { Config: [{ Subnet: "172.20.0.0/16", Gateway: "172.20.0.1" }] } };
    expect(hostAddressOn(network, {})).toBe("172.20.0.1");
  });

  it("is the bridge interface's address where the engine reports no gateway (a freshly started docker.io 20.10's default bridge)", () => {
    const network = {
      Id: "b".repeat(64),
      Name: "bridge",
      Options: { "com.docker.network.bridge.name": "docker0" },
      IPAM: { Config: [{ Subnet: "172.17.0.0/16" }] },
    };
    expect(hostAddressOn(network, interfaces("docker0", "172.17.0.9"))).toBe("172.17.0.9");
    // a created network's interface is br-<the first 12 characters of its id>
    const created = { Id: "0123456789abcdef", Name: "fleet", IPAM: { Config: [{ Subnet: "10.9.0.0/24" }] } };
    expect(hostAddressOn(created, interfaces("br-0123456789ab", "10.9.0.1"))).toBe("10.9.0.1");
    // an address of the interface outside the network's subnet is not the one
    expect(hostAddressOn(created, interfaces("br-0123456789ab", "192.168.5.1"))).toBe("10.9.0.1");
  });

  it("is the subnet's first host where neither says, and an error naming the network without an IPv4 subnet", () => {
    expect(hostAddressOn({ Id: "c".repeat(64), Name: "bridge", IPAM: { Config: [{ Subnet: "172.17.0.0/16" }] } }, {})).toBe("172.17.0.1");
    expect(() => hostAddressOn({ Id: "d".repeat(64), Name: "v6only", IPAM: { Config: [{ Subnet: "fd00::/64" }] } }, {})).toThrow(
      /network v6only has no IPv4 subnet/,
    );
  });
});

/**
 * The fleet tests' network on an engine started a moment ago with a data root of its own, as
 * `.ci/run` starts one on a new machine: the host's address the helper finds is one a container
 * on that network reaches.
 */
describe.skipIf(!docker || (!isRoot && !process.env.CI))("the fleet's network on a freshly started engine", () => {
  let engine: PrivateDockerd;
  let network: FleetNetwork | undefined;
  let server: Server | undefined;

  beforeAll(async () => {
    engine = new PrivateDockerd(fileTempDir("switch-swe-dockerd-"));
    await engine.start();
    await engine.loadImage(BASE_IMAGE);
  });
  afterAll(async () => {
    server?.close();
    await network?.remove();
    await engine?.stop();
  });

  it("finds an address of this machine that a container on the network connects to", async () => {
    network = await createFleetNetwork(engine.client);
    const inspected = await engine.client.getNetwork(network.name).inspect();
    expect(inspected.Labels?.["org.switch-swe.test-fleet"]).toBe(String(process.pid));
    // A server bound to that address alone, as the tests bind Redis and the git service.
    const reply = `reached-${process.pid}`;
    server = createServer((socket) => socket.end(reply));
    const port = await new Promise<number>((resolve, reject) => {
      server!.once("error", reject);
      server!.listen(0, network!.gateway, () => resolve((server!.address() as { port: number }).port));
    });
    const container = await engine.client.createContainer({
      Image: BASE_IMAGE,
      Cmd: ["python3", "-c", `import socket; s = socket.create_connection(("${network.gateway}", ${port}), timeout=30); print(s.recv(100).decode())`],
      HostConfig: { NetworkMode: network.name },
    });
    try {
      await container.start();
      const { StatusCode } = await container.wait();
      const logs = (await container.logs({ stdout: true, stderr: true })).toString("utf8");
      expect(StatusCode, logs).toBe(0);
      expect(logs).toContain(reply);
    } finally {
      await container.remove({ force: true });
    }
  });
});
