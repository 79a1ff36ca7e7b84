import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { derivedCommit } from "../../../pipeline/checkouts/derived.ts";
import { buildNetworkSettings } from "../../../pipeline/executors/types.ts";
import { exportHarbor, type HarborExportOptions } from "../../../pipeline/harbor/export.ts";
import { caBundleFromEnvironment } from "../../../pipeline/harbor/images.ts";
import { HARBOR_TASK, OBSERVED, SHARED_VERIFIER, VERIFIER_FILES } from "../../../pipeline/harbor/layout.ts";
import { verifierBundle } from "../../../pipeline/harbor/verifier-bundle.ts";
import { git } from "../../../pipeline/git.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { loadAgent } from "../../../pipeline/session/agents.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";
import { files, FOCUS, FOCUS_PATH, harborFixture, type HarborFixture, OTHERS, SESSION } from "./fixture.ts";

let fixture: HarborFixture;
let out: string;

/** A TOML file as Python's own parser reads it (tomllib): what Harbor reads. */
const readToml = (file: string) =>
  JSON.parse(
    execFileSync("python3", ["-c", "import json, sys, tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], 'rb'))))", file], { encoding: "utf8" }),
  );

const exportOptions = (dir: string): HarborExportOptions => {
  const ca = buildNetworkSettings().caBundle;
  return {
    out: dir,
    conditions: ["control", "switched"],
    messages: loadAgent(join("data", "agents", "claude-code.yaml")),
    images: ca ? { caBundle: readFileSync(ca, "utf8") } : {},
    agentUser: { name: "agent", uid: 1000 },
    log: silentLogger,
  };
};

beforeAll(async () => {
  const dir = fileTempDir();
  fixture = await harborFixture(dir);
  out = join(dir, "harbor");
  await exportHarbor(fixture.bench, exportOptions(out));
});

const taskDir = (condition: string) => join(out, "tasks", `${SESSION}--${condition}`);

describe("switch-swe export harbor", () => {
  it("writes one multi-step task per session and condition: a step per scheduled request, named for it, its budget as the timeout, the last one scored", () => {
    expect(readdirSync(join(out, "tasks")).sort()).toEqual([`${SESSION}--control`, `${SESSION}--switched`]);
    const expected = {
      control: ["01-w02-stage1", "02-w02-final"],
      switched: ["01-w02-stage1", "02-w00-stage1", "03-w01-stage1", "04-w03-stage1", "05-w04-stage1", "06-w02-final"],
    };
    for (const condition of ["control", "switched"] as const) {
      const config = readToml(join(taskDir(condition), HARBOR_TASK.config));
      const names = expected[condition];
      expect(config.multi_step_reward_strategy).toBe("final");
      expect(config.steps.map((s: { name: string }) => s.name)).toEqual(names);
      expect(readdirSync(join(taskDir(condition), HARBOR_TASK.steps)).sort()).toEqual(names);
      for (const step of config.steps) expect(step.agent).toEqual({ timeout_sec: 900 });
      // The first step collects the checkouts' first observation, the last the focus checkout its verifier scores; every step the observation after it.
      expect(config.steps[0].artifacts).toEqual([OBSERVED.base]);
      expect(config.steps.at(-1).artifacts).toEqual([FOCUS_PATH]);
      for (const step of config.steps.slice(1, -1)) expect(step.artifacts).toBeUndefined();
      expect(config.artifacts).toEqual([OBSERVED.current]);
      expect(config.verifier).toMatchObject({
        environment_mode: "separate",
        collect: [{ command: `sh ${OBSERVED.script} ${OBSERVED.current}`, user: "root" }],
      });
      expect(config.steps.at(-1).verifier).toMatchObject({ network_mode: "no-network", environment: { network_mode: "no-network", cpus: 1, memory_mb: 2048 } });
      expect(config.agent).toEqual({ timeout_sec: 900, user: "agent" });
      expect(config.metadata).toMatchObject({ session_id: SESSION, condition, locality: "far", requests: names.length });
      // Each instruction is the request exactly as session run gives it to Claude Code: repository, checkout, text.
      fixture.spec.conditions[condition].forEach((request, i) =>
        expect(readFileSync(join(taskDir(condition), HARBOR_TASK.steps, names[i]!, HARBOR_TASK.instruction), "utf8")).toBe(
          `Repository: demo-org/geometry\nWorking directory (the checkout of this task): ${request.message.checkout}\n\n${request.message.text}`,
        ),
      );
      // The last step's verifier image, never the agent's; no task-level solution.
      expect(files(join(taskDir(condition), HARBOR_TASK.steps, names.at(-1)!, HARBOR_TASK.tests)).filter((f) => !f.startsWith("switch-swe/build"))).toEqual(
        ["Dockerfile", "switch-swe/base.sh", "switch-swe/environment.sh", ...Object.values(VERIFIER_FILES).filter((f) => f !== VERIFIER_FILES.revision)].sort(),
      );
      expect(readdirSync(taskDir(condition)).sort()).toEqual(["environment", "steps", "task.toml", "tests"]);
    }
  });

  it("gives Harbor's oracle each task's reference at the task's last request, in its own checkout, and nothing at the others", () => {
    const dir = taskDir("switched");
    const solution = (step: string) => join(dir, HARBOR_TASK.steps, step, HARBOR_TASK.solution);
    const referenceOf = (id: string) => fixture.bench.heldout(id)!.implementation_patch;
    expect(readFileSync(join(solution("06-w02-final"), "reference.patch"), "utf8")).toBe(referenceOf(FOCUS));
    expect(readFileSync(join(solution("06-w02-final"), "solve.sh"), "utf8")).toContain("cd '/workspace/w02'");
    expect(readFileSync(join(solution("02-w00-stage1"), "reference.patch"), "utf8")).toBe(referenceOf(OTHERS[0]!));
    expect(readFileSync(join(solution("02-w00-stage1"), "solve.sh"), "utf8")).toContain("cd '/workspace/w00'");
    expect(readdirSync(solution("01-w02-stage1"))).toEqual(["solve.sh"]);
    expect(readFileSync(join(solution("01-w02-stage1"), "solve.sh"), "utf8")).toMatch(/nothing to do\.\nexit 0\n$/);
  });

  it("keeps the held-out tests, the references and every other request out of what the agent gets", () => {
    for (const condition of ["control", "switched"] as const) {
      const dir = taskDir(condition);
      const steps = readdirSync(join(dir, HARBOR_TASK.steps)).sort();
      steps.forEach((step, i) => {
        const seen = [
          readFileSync(join(dir, HARBOR_TASK.steps, step, HARBOR_TASK.instruction), "utf8"),
          ...files(join(dir, HARBOR_TASK.environment)).map((f) => readFileSync(join(dir, HARBOR_TASK.environment, f)).toString("latin1")),
        ].join("\n");
        expect(seen).not.toContain("test_mark_angle");
        expect(seen).not.toContain("mark_angle expects a number");
        fixture.spec.conditions[condition].forEach((other, j) => {
          if (j !== i && other.message.text !== fixture.spec.conditions[condition][i]!.message.text)
            expect(seen).not.toContain(other.message.text.slice(0, 60));
        });
      });
      // Every step's verifier but the last (its own image, built from tests/) scores nothing.
      expect(files(join(dir, HARBOR_TASK.tests))).toEqual(["Dockerfile", "test.sh"]);
      expect(readFileSync(join(dir, HARBOR_TASK.tests, "Dockerfile"), "utf8")).toMatch(/^FROM switch-swe-base:bookworm\nCOPY test.sh \/tests\/test.sh\n$/m);
      const commands = readFileSync(join(dir, HARBOR_TASK.tests, "test.sh"), "utf8")
        .split("\n")
        .filter((l) => l && !l.startsWith("#"));
      expect(commands).toEqual(["mkdir -p /logs/verifier", "printf '{}\\n' > /logs/verifier/reward.json"]);
    }
  });

  it("stores what tasks share once, and gives the same bytes for the same benchmark", async () => {
    const control = join(taskDir("control"), HARBOR_TASK.environment, "checkouts", "w02.tar");
    const switched = join(taskDir("switched"), HARBOR_TASK.environment, "checkouts", "w02.tar");
    expect(statSync(control).ino).toBe(statSync(switched).ino);
    expect(statSync(control).nlink).toBe(3);
    const node = statSync(join(out, SHARED_VERIFIER.node));
    expect(node.nlink).toBe(3);
    expect(readFileSync(join(out, SHARED_VERIFIER.node)).equals(readFileSync(process.execPath))).toBe(true);
    // The verifier is switch-swe's verify bundled from the sources as they are now: a rule changed in TypeScript is in the next export.
    expect(readFileSync(join(out, SHARED_VERIFIER.program), "utf8")).toBe(await verifierBundle());
    const again = join(tempDir(), "again");
    await exportHarbor(fixture.bench, exportOptions(again));
    expect(files(again)).toEqual(files(out));
    for (const f of files(out)) expect(readFileSync(join(again, f)).equals(readFileSync(join(out, f))), f).toBe(true);
  });

  it("trusts the CA bundle this environment names for the image builds, as the executors do, and not the system's by default", () => {
    expect(caBundleFromEnvironment({ SSL_CERT_FILE: "/a.pem", PIP_CERT: "/b.pem" })).toEqual({ variable: "SSL_CERT_FILE", file: "/a.pem" });
    expect(caBundleFromEnvironment({ REQUESTS_CA_BUNDLE: "/c.pem" })).toEqual({ variable: "REQUESTS_CA_BUNDLE", file: "/c.pem" });
    expect(caBundleFromEnvironment({})).toBeUndefined();
  });

  /**
   * A session whose /workspace/w04 is the commit that merged the focus's fix with that fix
   * reversed out (the answer rule), exported; the tree of each of two checkouts in the export
   * against the commit the session runner provisions. `setBack`: the fix's files set back whole
   * to `to` instead (select's roll_back: files), as the session records it.
   */
  async function exportDerived(setBack?: (mirror: string, later: string) => Promise<{ to: string; paths: string[] }>) {
    const source = join(fixture.sessionsDir, fixture.spec.clone_url!);
    const later = fixture.heldout.upstream.merge_commit!;
    const mirror = await fixture.bench.workspace.mirrors.ensure(fixture.spec.repo, fixture.bench.cloneSource(fixture.spec.repo, source), later);
    const rolledBack = setBack ? await setBack(mirror, later) : undefined;
    const made = await derivedCommit(mirror, later, [{ taskId: FOCUS, patch: fixture.heldout.upstream.patch, ...(rolledBack ? { rolledBack } : {}) }]);
    if (!made.ok) throw new Error(made.error);
    const id = `${SESSION}-derived`;
    const derived = { without: [FOCUS], commit: made.commit, ...(rolledBack ? { rolled_back: [{ task_id: FOCUS, ...rolledBack }] } : {}) };
    const spec = SessionSpec.parse({
      ...fixture.spec,
      session_id: id,
      checkouts: fixture.spec.checkouts.map((c) => (c.path === "/workspace/w04" ? { ...c, base_commit: later, derived } : c)),
    });
    const index = join(fixture.sessionsDir, "index.json");
    const listed = readFileSync(index, "utf8");
    writeFileSync(join(fixture.sessionsDir, `${id}.json`), JSON.stringify(spec, null, 2));
    writeFileSync(index, JSON.stringify({ ...JSON.parse(listed), sessions: [{ session_id: id, file: `${id}.json`, focus: FOCUS, locality: "far" }] }));
    const dir = tempDir();
    try {
      await exportHarbor(fixture.bench, { ...exportOptions(join(dir, "harbor")), conditions: ["control"] });
    } finally {
      writeFileSync(index, listed);
    }
    const tree = async (at: string) => (await git(["rev-parse", `${at}^{tree}`], { cwd: mirror })).trim();
    for (const [path, commit] of [
      ["w04", made.commit],
      ["w03", fixture.spec.checkouts[3]!.base_commit],
    ] as const) {
      const unpacked = join(dir, path);
      mkdirSync(unpacked);
      execFileSync("tar", [
        "--no-same-owner",
        "-xf",
        join(dir, "harbor", "tasks", `${id}--control`, HARBOR_TASK.environment, "checkouts", `${path}.tar`),
        "-C",
        unpacked,
      ]);
      // The checkout's one commit holds exactly the files of the commit the session runner provisions.
      expect((await git(["rev-parse", "HEAD^{tree}"], { cwd: unpacked })).trim(), path).toBe(await tree(commit));
    }
    expect(await tree(made.commit)).not.toBe(await tree(later));
    return { mirror, made: made.commit };
  }

  it("makes a derived checkout as the session runner does: the later base with the reversed fix taken out, at the commit the session names", async () => {
    await exportDerived();
  });

  it("makes a derived checkout whose fix's source files are set back whole, from the session's record of them", async () => {
    const { mirror, made } = await exportDerived(async (at, later) => ({
      to: (await git([`--git-dir=${at}`, "rev-parse", `${later}^1`])).trim(),
      paths: [...new Set(fixture.heldout.implementation_patch.match(/^diff --git a\/(\S+)/gm)!.map((l) => l.slice("diff --git a/".length)))],
    }));
    // The commit names what it set back: a record without it would not make this commit (checkoutCommit refuses that).
    expect(await git([`--git-dir=${mirror}`, "log", "-1", "--format=%B", made])).toContain("set back whole:");
  });
});
