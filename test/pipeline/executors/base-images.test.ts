import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Docker from "dockerode";
import { parseDocument } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BaseImages, BaseImageUnavailable, importRootfs } from "../../../pipeline/executors/base-images.ts";
import { createExecutor, DEFAULT_LIMIT_SETTINGS } from "../../../pipeline/executors/index.ts";
import { createLogger } from "../../../pipeline/logger.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { isRoot } from "../../helpers/fault-rows.ts";
import { PrivateDockerd } from "../../helpers/private-dockerd.ts";
import { refusingPort } from "../../helpers/redis.ts";
import { startRegistry } from "../../helpers/registry.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";

const run = promisify(execFile);
const bin = fileURLToPath(new URL("../../../bin/switch-swe.mjs", import.meta.url));
const docker = await dockerForTests();

/**
 * A first run on an engine that has no base image, as every new user with Docker has: the image
 * is made once, before any build (pulled from a registry where one answers, here one on loopback
 * holding a Debian image), or `auto` runs locally and `docker` stops at once naming the fix.
 */
describe.skipIf(!docker || (!isRoot && !process.env.CI))("base images on an engine that has none", () => {
  let engine: PrivateDockerd;
  let registry: Awaited<ReturnType<typeof startRegistry>>;
  /** A loopback port nothing listens on: a registry that cannot be reached. */
  let nowhere = "";

  beforeAll(async () => {
    registry = await startRegistry(fileTempDir("switch-swe-registry-"));
    if (!registry) return;
    // The registry holds a Debian bookworm image: the one this machine's engine built by debootstrap.
    await run("docker", ["tag", "switch-swe-base:bookworm", `${registry.address}/debian:bookworm`]);
    await run("docker", ["push", `${registry.address}/debian:bookworm`]);
    // and, under bullseye's tag, an image that is not bullseye
    await run("docker", ["tag", "switch-swe-base:bookworm", `${registry.address}/debian:bullseye`]);
    await run("docker", ["push", `${registry.address}/debian:bullseye`]);
    for (const tag of ["bookworm", "bullseye"]) await run("docker", ["rmi", `${registry.address}/debian:${tag}`]);
    engine = new PrivateDockerd(fileTempDir("switch-swe-dockerd-"));
    await engine.start();
    nowhere = `127.0.0.1:${await refusingPort()}/debian`;
  });
  afterAll(async () => {
    await engine?.stop();
    await registry?.stop();
  });

  const logged = () => {
    const lines: string[] = [];
    return { lines, log: createLogger({ level: "info", write: (line) => lines.push(line) }) };
  };
  const settings = (registryRef: string) => ({
    executor: "auto" as const,
    limits: DEFAULT_LIMIT_SETTINGS,
    base_images: { registry: registryRef, debootstrap: false, mirror: "http://deb.debian.org/debian" },
  });
  /** createExecutor against the private engine (dockerode reads DOCKER_HOST). */
  async function executorOn(registryRef: string, executor: "auto" | "docker" = "auto") {
    const { lines, log } = logged();
    const before = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = `unix://${engine.socket}`;
    try {
      return { made: await createExecutor({ ...settings(registryRef), executor }, { workDir: tempDir(), log }), lines };
    } finally {
      if (before === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = before;
    }
  }

  it("auto on an engine with no base image and no way to get one runs locally, saying why and how to fix it", async (context) => {
    if (!registry) return context.skip();
    const { made, lines } = await executorOn(nowhere);
    expect(made.kind).toBe("local");
    const warning = lines.find((l) => /a Docker engine answers but its base image switch-swe-base:bookworm is missing/.test(l))!;
    expect(warning).toMatch(/pulling 127\.0\.0\.1:\d+\/debian:bookworm: /);
    expect(warning).toMatch(/debootstrap: turned off/);
    expect(warning).toMatch(/Fix: .*switch-swe images base --suite bookworm.*UNSANDBOXED/);
    expect((await engine.client.listImages()).length).toBe(0);
  });

  it("pulls a missing base image from a registry once, before any build, and makes it the suite's base image", async (context) => {
    if (!registry) return context.skip();
    const { made, lines } = await executorOn(`${registry.address}/debian`);
    expect(made.kind).toBe("docker");
    const image = await engine.client.getImage("switch-swe-base:bookworm").inspect();
    expect(image.Config.Labels).toMatchObject({ "org.switch-swe.base": "bookworm", "org.switch-swe.base-source": `${registry.address}/debian:bookworm` });
    expect(lines.some((l) => l.includes(`base image switch-swe-base:bookworm is missing: pulling ${registry!.address}/debian:bookworm`))).toBe(true);
    expect(lines.some((l) => /built switch-swe-base:bookworm from .* in [\d.]+ s/.test(l))).toBe(true);
    // the image it made runs the suite's Python
    const container = await engine.client.createContainer({
      Image: "switch-swe-base:bookworm",
      Cmd: ["python3", "-c", "import sys, venv; print(sys.version_info[:2])"],
    });
    await container.start();
    await container.wait();
    expect((await container.logs({ stdout: true })).toString()).toContain("(3, 11)");
    await container.remove();
    // a second engine user finds it: nothing is pulled again
    const again = await executorOn(`${registry.address}/debian`);
    expect(again.made.kind).toBe("docker");
    expect(again.lines.some((l) => /pulling/.test(l))).toBe(false);
  });

  it("refuses an image under a suite's tag that is not that suite, and with the docker executor says so once, as a fact of the machine", async (context) => {
    if (!registry) return context.skip();
    const { log, lines } = logged();
    const images = new BaseImages(new Docker({ socketPath: engine.socket }), log, {
      registry: `${registry.address}/debian`,
      debootstrap: false,
      mirror: "http://deb.debian.org/debian",
    });
    const first = images.ensure("bullseye");
    // asked again while it is being made: the same attempt, not a second pull
    expect(images.ensure("bullseye")).toBe(first);
    const error = await first.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BaseImageUnavailable);
    expect((error as Error).message).toMatch(/python3 is 3\.11, not 3\.9: not a bullseye image/);
    expect(lines.filter((l) => /pulling .*debian:bullseye failed/.test(l))).toHaveLength(1);
    await expect(engine.client.getImage("switch-swe-base:bullseye").inspect()).rejects.toMatchObject({ statusCode: 404 });
  });

  it("stops `qualify --executor docker` at its first build when no base image can be had, naming the fix, and rejects no task for it", async (context) => {
    if (!registry) return context.skip();
    await engine.client
      .getImage("switch-swe-base:bookworm")
      .remove({ force: true })
      .catch(() => undefined);
    const dir = tempDir();
    const { prepareDemoCopy } = await import("../../helpers/demo-copy.ts");
    const { runProjectOnce } = await import("../../../pipeline/project/project.ts");
    const demo = await prepareDemoCopy(dir);
    try {
      expect((await runProjectOnce(demo.options, { only: "mine" })).ok).toBe(true);
      expect((await runProjectOnce(demo.options, { only: "split" })).ok).toBe(true);
    } finally {
      await demo.server.stop();
    }
    const { writeFileSync, readFileSync, existsSync } = await import("node:fs");
    const config = parseDocument(readFileSync(demo.configPath, "utf8"));
    config.setIn(["execution", "base_images"], { registry: nowhere, debootstrap: false });
    writeFileSync(demo.configPath, config.toString());
    const result = await run(process.execPath, [bin, "qualify", "--config", demo.configPath, "--executor", "docker", "-q"], {
      env: { ...process.env, DOCKER_HOST: `unix://${engine.socket}` },
    }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(result.code).not.toBe(0);
    const said = `${result.stdout}\n${result.stderr}`;
    expect(said).toMatch(/base image switch-swe-base:bookworm is missing and cannot be made here/);
    expect(said).toMatch(/switch-swe images base --suite bookworm/);
    // stopped, not tried task by task: no retry, and no task rejected as failed (nothing cached)
    expect(said).not.toMatch(/retrying in/);
    const rejects = `${demo.workDir}/artifacts/qualify/rejects.jsonl`;
    if (existsSync(rejects)) expect(readFileSync(rejects, "utf8")).not.toMatch(/build_failed|regression|no_fail_to_pass/);
  });
});

describe.skipIf(!docker)("a root filesystem imported as an image", () => {
  it("goes through the process's Docker client (no docker CLI), with its changes, and holds the directory's files", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "etc"));
    writeFileSync(join(dir, "etc", "switch-swe-import"), "imported\n");
    const engine = new Docker();
    const tag = `switch-swe-import-test:${process.pid}`;
    try {
      await importRootfs(engine, dir, tag, ["ENV PATH=/usr/local/bin:/usr/bin:/bin", "LABEL org.switch-swe.base=test"]);
      const image = await engine.getImage(tag).inspect();
      expect(image.Config.Env).toContain("PATH=/usr/local/bin:/usr/bin:/bin");
      expect(image.Config.Labels).toMatchObject({ "org.switch-swe.base": "test" });
      // The image's one layer, as the engine saves it (tar archives, uncompressed): the file, named
      // as tar names it, then its content. Read from the image itself rather than a container made
      // of it, whose file system the engine mounts for an archive request: under a loaded CI run
      // that request once answered that the file was not there.
      const saved: Buffer[] = [];
      for await (const chunk of (await engine.getImage(tag).get()) as AsyncIterable<Buffer>) saved.push(chunk);
      expect(Buffer.concat(saved).toString("latin1")).toMatch(/\.\/etc\/switch-swe-import\0[^]*?imported\n/);
      // a directory that is not there is an error naming it, never an empty image
      await expect(importRootfs(engine, join(dir, "absent"), `${tag}-absent`, [])).rejects.toThrow(/^tar of \S+\/absent exited 2: /);
      await expect(engine.getImage(`${tag}-absent`).inspect()).rejects.toMatchObject({ statusCode: 404 });
    } finally {
      await engine
        .getImage(tag)
        .remove({ force: true })
        .catch(() => undefined);
    }
  });
});

describe("a root filesystem streamed to the engine", () => {
  it("reaches the engine whole though the client starts reading it after tar has exited", async () => {
    // A small directory's tar exits at once; a client that sends the request a little later must
    // still get every byte (Node discards an unread child's output at its exit).
    const dir = tempDir();
    mkdirSync(join(dir, "etc"));
    writeFileSync(join(dir, "etc", "switch-swe-import"), "imported\n");
    let received = Buffer.alloc(0);
    const engine = {
      importImage: async (body: NodeJS.ReadableStream) => {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const chunks: Buffer[] = [];
        for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
        received = Buffer.concat(chunks);
        return body;
      },
      modem: { followProgress: (_progress: unknown, done: (error: null, events: object[]) => void) => done(null, []) },
      getImage: () => ({ remove: async () => undefined }),
    } as unknown as Docker;
    await importRootfs(engine, dir, "switch-swe-import-test:late", []);
    expect(received.toString("latin1")).toMatch(/\.\/etc\/switch-swe-import\0[^]*?imported\n/);
  });
});
