import { readFileSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatSummary } from "../../../pipeline/engine/engine.ts";
import { runProjectOnce } from "../../../pipeline/project/project.ts";
import { DockerExecutor } from "../../../pipeline/executors/docker.ts";
import { environmentSpec } from "../../../pipeline/executors/environment.ts";
import { recipeFor } from "../../../pipeline/profiles/recipes.ts";
import { WORK_LABEL } from "../../../pipeline/executors/index.ts";
import { RepoProfile } from "../../../pipeline/schemas/repo-profile.ts";
import { QualificationRecord } from "../../../pipeline/schemas/qualification.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { FaultRow, faultCorpus, isRoot } from "../../helpers/fault-rows.ts";
import { PrivateDockerd } from "../../helpers/private-dockerd.ts";
import { fileTempDir } from "../../helpers/tmp.ts";

const docker = await dockerForTests();

/** Kills (SIGKILL, as `docker kill` does) the first `count` test containers of a work directory it sees running. */
function killContainers(client: Docker, workDir: string, count: number): { done: Promise<number>; stop: () => void } {
  let stopped = false;
  const done = (async () => {
    let killed = 0;
    const seen = new Set<string>();
    while (!stopped && killed < count) {
      const running = await client.listContainers({ filters: { label: [`${WORK_LABEL}=${workDir}`], status: ["running"] } }).catch(() => []);
      for (const info of running) {
        if (seen.has(info.Id) || killed >= count) continue;
        seen.add(info.Id);
        try {
          await client.getContainer(info.Id).kill();
          killed++;
        } catch {
          // it finished before the kill reached it
        }
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    return killed;
  })();
  return { done, stop: () => (stopped = true) };
}

/**
 * The fault matrix's Docker rows: a test container killed from outside, and the engine going away
 * mid-run. Each faulted run fails and says why; the next run, with no --force, equals a clean
 * Docker run byte for byte.
 */
describe.skipIf(!docker)("faults of the Docker executor are never results", () => {
  let base: string;
  let corpus: string;
  let clean: Record<string, string>;
  let imageTags: string[];
  const rows: FaultRow[] = [];

  const row = async (name: string, extra?: { qualify?: string }) => {
    const r = await new FaultRow(base, name, corpus, "docker", extra).setUp();
    rows.push(r);
    return r;
  };

  beforeAll(async () => {
    base = fileTempDir("switch-swe-faults-docker-");
    corpus = await faultCorpus(base);
    const reference = await row("clean");
    const summary = await runProjectOnce(reference.options());
    expect(summary.ok, formatSummary(summary)).toBe(true);
    clean = reference.outputs();
    const records = clean["artifacts/qualify/qualifications.jsonl"]!.split("\n")
      .filter(Boolean)
      .map((l) => QualificationRecord.parse(JSON.parse(l)));
    expect(records.every((q) => q.executor === "docker")).toBe(true);
    // The images those environments are: named by their first layer's key, from the recipe and date.
    const profile = RepoProfile.parse(JSON.parse(readFileSync(join(reference.dir, "demo", "repos", "demo-org__geometry.json"), "utf8")));
    imageTags = [...new Set(records.map((q) => DockerExecutor.imageTag(environmentSpec(profile.repo, recipeFor(profile, { id: q.task_id }), q.as_of))))];
    for (const [q, tag] of records.map(
      (q) => [q, DockerExecutor.imageTag(environmentSpec(profile.repo, recipeFor(profile, { id: q.task_id }), q.as_of))] as const,
    )) {
      expect(environmentSpec(profile.repo, recipeFor(profile, { id: q.task_id }), q.as_of).key, tag).toBe(q.environment_key);
    }
  });

  afterAll(async () => {
    for (const r of rows) await r.server.stop();
  });

  it("a test container killed from outside (exit 137, no report) is an infrastructure fault, never 'every test absent'", async () => {
    // One task at a time, so the three kills land on one task's run and both its retries.
    const r = await row("killed", { qualify: "executor: docker, jobs: 1, infrastructure_backoff_seconds: [0.2]" });
    const killer = killContainers(new Docker(), r.workDir, 3);
    const faulted = await runProjectOnce(r.options());
    killer.stop();
    expect(await killer.done).toBe(3);
    expect(faulted.ok).toBe(false);
    const qualify = faulted.stages.find((s) => s.stage === "qualify")!;
    expect(qualify.status).toBe("incomplete");
    expect(qualify.transient!.join("\n")).toMatch(/infrastructure_fault: .*killed from outside \(exit 137\)/);
    // The killed task has no cached outcome: no qualification record says "absent" or all_unstable.
    expect(readFileSync(join(r.workDir, "artifacts", "qualify", "rejects.jsonl"), "utf8")).not.toMatch(/all_unstable|no_fail_to_pass/);
    await expectRecovered(r);
  });

  it.skipIf(!isRoot && !process.env.CI)("the engine going away mid-run: the run fails, the next one equals a clean run", async () => {
    const engine = new PrivateDockerd(fileTempDir("switch-swe-dockerd-"));
    await engine.start();
    const previousHost = process.env.DOCKER_HOST;
    try {
      // The environments the clean run built, copied in: the private engine has no network to build them.
      for (const tag of imageTags) await engine.loadImage(tag);
      process.env.DOCKER_HOST = `unix://${engine.socket}`;
      const r = await row("engine-restart");
      // Stop the engine as soon as a test container runs, and start it again a few seconds later:
      // longer than the two quick retries, so the run cannot absorb it.
      const outage = (async () => {
        for (let i = 0; i < 6000; i++) {
          if ((await engine.client.listContainers().catch(() => [])).length) {
            await engine.stop();
            await new Promise((resolve) => setTimeout(resolve, 3000));
            await engine.start();
            return true;
          }
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        return false;
      })();
      const faulted = await runProjectOnce(r.options());
      expect(await outage).toBe(true);
      expect(faulted.ok).toBe(false);
      const qualify = faulted.stages.find((s) => s.stage === "qualify")!;
      expect(qualify.status).toBe("incomplete");
      expect(qualify.transient!.join("\n")).toMatch(/infrastructure_fault: .*(Docker engine error|killed from outside)/);
      await expectRecovered(r);
    } finally {
      if (previousHost === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = previousHost;
      await engine.stop();
    }
  });

  async function expectRecovered(r: FaultRow) {
    const summary = await runProjectOnce(r.options());
    expect(summary.ok, formatSummary(summary)).toBe(true);
    expect(r.outputs()).toEqual(clean);
  }
});
