import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PullIntent } from "../../demo/build.ts";
import { demoCorpus } from "../helpers/demo-corpus.ts";
import { runProjectOnce } from "../../pipeline/project/project.ts";
import { DockerExecutor } from "../../pipeline/executors/docker.ts";
import { environmentSpec } from "../../pipeline/executors/environment.ts";
import { recipeFor } from "../../pipeline/profiles/recipes.ts";
import { MirrorCache } from "../../pipeline/git.ts";
import { freshCheckout } from "../../pipeline/checkouts/checkout.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { RepoProfile } from "../../pipeline/schemas/repo-profile.ts";
import type { SplitChange } from "../../pipeline/schemas/split.ts";
import { designatedTestFiles, qualifyTask } from "../../pipeline/qualification/qualify-task.ts";
import { prepareDemoCopy, type DemoCopy } from "../helpers/demo-copy.ts";
import { dockerForTests } from "../helpers/docker.ts";
import { PrivateDockerd } from "../helpers/private-dockerd.ts";
import { fileTempDir } from "../helpers/tmp.ts";

const plan = fileURLToPath(new URL("../../data/demo/corpus.yaml", import.meta.url));
const docker = await dockerForTests();

describe.skipIf(!docker)("the Docker engine restarting mid-run", () => {
  let engine: PrivateDockerd;
  let demo: DemoCopy;
  let split: SplitChange;
  let intent: PullIntent;
  let env: ReturnType<typeof environmentSpec>;
  let mirror: string;

  beforeAll(async () => {
    const corpusDir = fileTempDir();
    await demoCorpus(plan, corpusDir);
    demo = await prepareDemoCopy(fileTempDir(), { corpusDir });
    await runProjectOnce(demo.options, { only: "mine" });
    await runProjectOnce(demo.options, { only: "split" });
    await demo.server.stop();
    const intents: PullIntent[] = JSON.parse(readFileSync(join(corpusDir, "intents.json"), "utf8"));
    const splits: SplitChange[] = readFileSync(join(demo.workDir, "artifacts", "split", "splits.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    intent = intents.find((i) => i.kind === "feature" && i.stages >= 3 && i.repo === "demo-org/ledger")!;
    split = splits.find((s) => s.task_id === `demo-org__ledger-${intent.number}`)!;
    const profile = RepoProfile.parse(JSON.parse(readFileSync(join(demo.configPath, "..", "repos", "demo-org__ledger.json"), "utf8")));
    env = environmentSpec(split.repo, recipeFor(profile, { id: split.task_id }), "2024-03-06T09:00:00Z");
    // The image is built by the machine's engine, then copied into the private one.
    await new DockerExecutor(new Docker(), silentLogger).ensureEnvironment(env);
    engine = new PrivateDockerd(fileTempDir("switch-swe-dockerd-"));
    await engine.start();
    await engine.loadImage(DockerExecutor.imageTag(env));
    mirror = await new MirrorCache(join(demo.workDir, "git")).ensure(split.repo, join(corpusDir, "repos", "demo-org__ledger"), split.base_commit);
  });
  afterAll(async () => {
    await engine?.stop();
  });

  it("turns the runs it breaks into infrastructure faults, retries them, and gets the same sets", async () => {
    const executor = new DockerExecutor(engine.client, silentLogger);
    const scratch = fileTempDir();
    const checkout = (patches: { name: string; text: string }[]) => freshCheckout(mirror, split.base_commit, patches, scratch);
    const input = {
      id: split.task_id,
      baseCommit: split.base_commit,
      testPatch: split.test_patch,
      implementationPatch: split.implementation_patch,
      env,
      testArgs: designatedTestFiles(split.files),
      runs: 3,
      checkout,
      infrastructureBackoffMs: [15_000, 20_000],
    };
    // Restart the engine as soon as a test container is running.
    const restarted = (async () => {
      for (let i = 0; i < 600; i++) {
        const running = await engine.client.listContainers().catch(() => []);
        if (running.length) {
          await engine.restart();
          return true;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      return false;
    })();
    const result = await qualifyTask(executor, input, silentLogger);
    expect(await restarted).toBe(true);
    expect(result.runs.some((r) => r.infrastructure_retries > 0)).toBe(true);
    expect(result.runs).toHaveLength(6);
    expect(result.sets.failToPass).toEqual([...intent.fail_to_pass].sort());
    expect(result.decision.kept).toBe(true);
  });
});
