import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provisionCheckout, snapshot } from "../../../pipeline/checkouts/snapshot.ts";
import { buildNetworkSettings } from "../../../pipeline/executors/types.ts";
import { exportHarbor } from "../../../pipeline/harbor/export.ts";
import { loadHarborReports } from "../../../pipeline/harbor/job.ts";
import { HARBOR_JOB, HARBOR_TASK, OBSERVED, observedArtifact, VERIFIER_OUTPUTS } from "../../../pipeline/harbor/layout.ts";
import { readListing } from "../../../pipeline/harbor/observe.ts";
import { git } from "../../../pipeline/git.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { writeReport } from "../../../pipeline/report/results.ts";
import { loadAgent } from "../../../pipeline/session/agents.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";
import { F2P, files, FOCUS, FOCUS_PATH, harborFixture, type HarborFixture, P2P, SESSION } from "./fixture.ts";

/*
 * An exported task's two images, built and run as Harbor runs them: the agent's with its
 * checkouts and their observation, the last step's verifier running switch-swe's verify; and
 * `report --harbor` reading a job made of what they wrote, Harbor's reward set against
 * switch-swe's grading.
 */

const docker = new Docker();
const agentImage = `switch-swe-test-harbor-agent:${process.pid}`;
const verifierImage = `switch-swe-test-harbor-verifier:${process.pid}`;
let fixture: HarborFixture;
let task: string;
let up = false;

/** Builds an image from a context directory with the classic builder; resolves when it is tagged. */
async function buildImage(context: string, tag: string): Promise<void> {
  const stream = await docker.buildImage({ context, src: files(context) }, { t: tag });
  const events: { error?: string }[] = await new Promise((resolve, reject) => docker.modem.followProgress(stream, (e, r) => (e ? reject(e) : resolve(r))));
  const failed = events.find((e) => e.error);
  if (failed) throw new Error(`building ${tag}: ${failed.error}`);
}

const dockerRun = (args: string[]) => spawnSync("docker", ["run", "--rm", ...args], { encoding: "utf8" });

beforeAll(async () => {
  up = await dockerForTests();
  if (!up) return;
  const dir = fileTempDir();
  fixture = await harborFixture(dir);
  const ca = buildNetworkSettings().caBundle;
  await exportHarbor(fixture.bench, {
    out: join(dir, "harbor"),
    conditions: ["control"],
    messages: loadAgent(join("data", "agents", "claude-code.yaml")),
    images: ca ? { caBundle: readFileSync(ca, "utf8") } : {},
    agentUser: { name: "agent", uid: 1000 },
    log: silentLogger,
  });
  task = join(dir, "harbor", "tasks", `${SESSION}--control`);
  await buildImage(join(task, HARBOR_TASK.environment), agentImage);
  await buildImage(join(task, HARBOR_TASK.steps, "02-w02-final", HARBOR_TASK.tests), verifierImage);
}, 1_800_000);

afterAll(async () => {
  for (const image of [agentImage, verifierImage])
    await docker
      .getImage(image)
      .remove({ force: true })
      .catch(() => undefined);
});

describe("an exported task's agent image", () => {
  it("holds the five checkouts as the session runner makes them, clean to git, observed as it snapshots them, and nothing held out", async (ctx) => {
    if (!up) return ctx.skip();
    const local = tempDir();
    for (const c of fixture.spec.checkouts) {
      const mine = join(local, c.path.split("/").pop()!);
      await provisionCheckout(fixture.mirror, c.base_commit, mine);
      const head = dockerRun(["-u", "agent", agentImage, "sh", "-c", `git -C ${c.path} rev-parse HEAD && git -C ${c.path} status --porcelain`]);
      expect(head.stdout.trim(), head.stderr).toBe((await git(["rev-parse", "HEAD"], { cwd: mine })).trim());
    }
    // The observation before the first request, as root reads it; the agent cannot read it.
    const base = readListing(dockerRun([agentImage, "cat", OBSERVED.base]).stdout, "image");
    for (const c of fixture.spec.checkouts) expect(base.get(c.path)).toEqual(await snapshot(join(local, c.path.split("/").pop()!)));
    expect(dockerRun(["-u", "agent", agentImage, "cat", OBSERVED.base]).status).not.toBe(0);
    const grep = dockerRun([
      agentImage,
      "sh",
      "-c",
      "grep -rl -e mark_angle -e tilt_depth / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; ls /tests /solution 2>&1",
    ]);
    expect(grep.stdout).toContain("No such file or directory");
    expect(grep.stdout).not.toMatch(/^\//m);
  });
});

/** The state the oracle leaves after the last request (and, `crossWrite`, a file written in another checkout), observed, and the focus checkout copied out. */
function lastRequest(patch: string, tamper: boolean, crossWrite: boolean): { listings: string; focus: string } {
  const listings = tempDir();
  const script = [
    `cp ${OBSERVED.base} /out/base.listing`,
    `sh ${OBSERVED.script} /out/after-1.listing`,
    ...(patch ? [`cd ${FOCUS_PATH} && git apply /out/reference.patch && cd /`] : []),
    ...(tamper
      ? [`printf 'def test_anything():\\n    pass\\n' > ${FOCUS_PATH}/tests/test_shapes_square.py`, `printf 'import pytest\\n' > ${FOCUS_PATH}/conftest.py`]
      : []),
    ...(crossWrite ? ["echo stray > /workspace/w00/stray.txt"] : []),
    `sh ${OBSERVED.script} /out/after-2.listing`,
    `tar -C ${FOCUS_PATH} -cf /out/focus.tar .`,
    "chmod -R a+rwX /out",
  ].join(" && ");
  writeFileSync(join(listings, "reference.patch"), patch);
  const ran = dockerRun(["-v", `${listings}:/out`, agentImage, "sh", "-c", script]);
  if (ran.status !== 0) throw new Error(ran.stderr);
  const focus = join(tempDir(), "w02");
  mkdirSync(focus);
  execFileSync("tar", ["-xf", join(listings, "focus.tar"), "-C", focus]);
  return { listings, focus };
}

/** The last step's verifier, run as Harbor runs a separate one: the focus checkout copied in, /logs/verifier collected, no network. */
function verify(focus: string): { outputs: string; log: string; status: number | null } {
  const outputs = tempDir();
  const ran = dockerRun(["--network", "none", "-v", `${focus}:${FOCUS_PATH}`, "-v", `${outputs}:/logs/verifier`, verifierImage, "sh", "/tests/test.sh"]);
  return { outputs, log: ran.stdout + ran.stderr, status: ran.status };
}

/** A trial directory as Harbor writes one for this task: its result, each step's verifier outputs and artifacts. */
function writeTrial(job: string, name: string, reward: number, listings: string, verifierOutputs: string): string {
  const trial = join(job, name);
  const step = (s: string, kind: string) => join(trial, HARBOR_JOB.steps, s, kind);
  const at = (s: string, n: number) => ({ started_at: `2026-01-01T00:0${n}:00Z`, finished_at: `2026-01-01T00:0${n}:30Z` });
  for (const [s, file, source] of [
    ["01-w02-stage1", "base.listing", OBSERVED.base],
    ["01-w02-stage1", "after-1.listing", OBSERVED.current],
    ["02-w02-final", "after-2.listing", OBSERVED.current],
  ] as const) {
    mkdirSync(join(step(s, HARBOR_JOB.artifacts), observedArtifact(source), ".."), { recursive: true });
    cpSync(join(listings, file), join(step(s, HARBOR_JOB.artifacts), observedArtifact(source)));
  }
  cpSync(verifierOutputs, step("02-w02-final", HARBOR_JOB.verifier), { recursive: true });
  const result = {
    task_name: `switch-swe/${SESSION}--control`,
    agent_info: { name: "oracle", version: "1.0.0" },
    verifier_result: { rewards: { reward } },
    step_results: [
      { step_name: "01-w02-stage1", agent_execution: at("1", 1), verifier_result: { rewards: {} } },
      { step_name: "02-w02-final", agent_execution: at("2", 2), verifier_result: { rewards: { reward } } },
    ],
  };
  writeFileSync(join(trial, HARBOR_JOB.result), JSON.stringify(result));
  return trial;
}

describe("an exported task's verifier and report --harbor", () => {
  it("scores the reference 1, nothing 0 and edited tests as the reference with switch-swe's verify; report grades each again, reads what the agent did, and fails on a reward that disagrees", async (ctx) => {
    if (!up) return ctx.skip();
    const job = join(tempDir(), "jobs", "oracle");
    mkdirSync(job, { recursive: true });
    writeFileSync(join(job, HARBOR_JOB.config), "{}\n");
    const cases = [
      { name: "reference", patch: fixture.heldout.implementation_patch, resolved: true, tamper: false, crossWrite: false },
      { name: "nothing", patch: "", resolved: false, tamper: false, crossWrite: false },
      { name: "edited-tests", patch: fixture.heldout.implementation_patch, resolved: true, tamper: true, crossWrite: true },
    ];
    const trials: Record<string, string> = {};
    for (const c of cases) {
      const { listings, focus } = lastRequest(c.patch, c.tamper, c.crossWrite);
      const run = verify(focus);
      expect(run.status, run.log).toBe(0);
      expect(JSON.parse(readFileSync(join(run.outputs, VERIFIER_OUTPUTS.reward), "utf8"))).toEqual({ reward: c.resolved ? 1 : 0 });
      const verification = JSON.parse(readFileSync(join(run.outputs, VERIFIER_OUTPUTS.verification), "utf8"));
      expect(verification).toMatchObject({
        session_id: SESSION,
        task_id: FOCUS,
        condition: "control",
        applied: true,
        resolved: c.resolved,
        integrity_problems: [],
      });
      if (c.resolved) expect(Object.values(verification.tests)).toEqual(Array(F2P.length + P2P.length).fill("passed"));
      else for (const test of F2P) expect(verification.tests[test]).toBe("failed");
      if (c.tamper)
        expect(verification.dropped_paths).toEqual([
          { path: "conftest.py", reason: "test_configuration" },
          { path: "tests/test_shapes_square.py", reason: "held_out_test_path" },
        ]);
      trials[c.name] = writeTrial(job, `${SESSION}--control__${c.name}`, c.resolved ? 1 : 0, listings, run.outputs);
    }
    const view = {
      heldout: (id: string) => fixture.bench.heldout(id),
      rules: (repo: string) => fixture.bench.profiles.profiles.get(repo)?.profile.classification,
    };
    const loaded = loadHarborReports(join(job, ".."), fixture.sessionsDir, view);
    expect(loaded.problems).toEqual([]);
    const byTrial = (name: string) => loaded.reports.find((r) => r.file.startsWith(trials[name]!))!.report;
    expect(cases.map((c) => byTrial(c.name).resolved)).toEqual(cases.map((c) => c.resolved));
    // What the agent did, from the observations: the reference written in the focus checkout at the last request, a stray file in another checkout.
    expect(byTrial("reference").behaviour).toMatchObject({ requests: 2, cross_task_write_requests: 0, timed_out_requests: 0 });
    expect(byTrial("edited-tests").behaviour).toMatchObject({ cross_task_write_requests: 1, cross_task_write_files: 1 });
    const written = await writeReport(job, loaded, fixture.sessionsDir, join(tempDir(), "report"));
    expect(written.aggregation.rows.find((r) => r.group === "overall")).toMatchObject({ sessions: 1, uninterrupted_resolved: 0 });

    // Harbor's reward of one trial changed: listed, and the report fails on it; so does a verification changed after the fact.
    const result = join(trials["reference"]!, HARBOR_JOB.result);
    writeFileSync(result, readFileSync(result, "utf8").replaceAll('"reward":1', '"reward":0'));
    const verification = join(trials["nothing"]!, HARBOR_JOB.steps, "02-w02-final", HARBOR_JOB.verifier, VERIFIER_OUTPUTS.verification);
    writeFileSync(verification, readFileSync(verification, "utf8").replace('"resolved": false', '"resolved": true'));
    const tampered = loadHarborReports(join(job, ".."), fixture.sessionsDir, view);
    expect(tampered.problems).toEqual([
      expect.stringMatching(/__nothing\/steps\/02-w02-final\/verifier: the verification says resolved, switch-swe's grading not resolved/),
      expect.stringMatching(/__reference: Harbor's reward is 0, switch-swe's grading says resolved \(1\)/),
    ]);
    expect(readdirSync(job).length).toBe(4);
  });
});
