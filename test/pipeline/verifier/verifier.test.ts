import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { demoCorpus } from "../../helpers/demo-corpus.ts";
import { planEnvironments } from "../../../pipeline/profiles/environments.ts";
import { recipeFor } from "../../../pipeline/profiles/recipes.ts";
import { DockerExecutor, LocalExecutor } from "../../../pipeline/executors/index.ts";
import { InfrastructureFault, type EnvironmentSpec, type Executor } from "../../../pipeline/executors/types.ts";
import { git, MirrorCache } from "../../../pipeline/git.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { loadProfiles } from "../../../pipeline/profiles/load.ts";
import { HeldoutTask } from "../../../pipeline/schemas/heldout.ts";
import type { RepoProfile } from "../../../pipeline/schemas/repo-profile.ts";
import { verifyArtifact } from "../../../pipeline/verifier/verify.ts";
import { freshCheckout } from "../../../pipeline/checkouts/checkout.ts";
import { qualifyTask } from "../../../pipeline/qualification/qualify-task.ts";
import { oracleTask } from "../../../stages/oracle/index.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { fileTempDir } from "../../helpers/tmp.ts";
import Docker from "dockerode";
import { CIRCLE, TESTS, WRONG, FORGE_JUNIT, FORGE_CHANNEL, put, append, adversarialSubmissions } from "./attacks.ts";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const TASK = "demo-org__geometry-3";
const REPO = "demo-org/geometry";

interface Fixture {
  heldout: HeldoutTask;
  env: EnvironmentSpec;
  mirror: string;
  profile: RepoProfile;
  scratch: string;
}

let fixture: Fixture;
let dir: string;

/** A submission: the diff a checkout of the base commit has after `edit`. */
async function submission(edit: (checkout: string) => void | Promise<void>): Promise<string> {
  const checkout = await freshCheckout(fixture.mirror, fixture.heldout.base_commit, [], fixture.scratch);
  try {
    await edit(checkout.dir);
    await git(["add", "--all"], { cwd: checkout.dir });
    return await git(["diff", "--cached", "--binary", "--full-index", "HEAD"], { cwd: checkout.dir });
  } finally {
    await checkout.dispose();
  }
}

beforeAll(async () => {
  dir = fileTempDir();
  const corpus = await demoCorpus(join(root, "data", "demo", "corpus.yaml"), join(dir, "corpus"));
  const records = readFileSync(corpus.recordsFile, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  const record = records.find((r) => r.instance_id === TASK)!;
  const profileFile = join(root, "data", "demo", "repos", "demo-org__geometry.json");
  const profile = loadProfiles([{ path: profileFile, text: readFileSync(profileFile, "utf8") }]).profiles.get(REPO)!.profile;
  // The environment the demo pipeline plans for this repository (as of its earliest PR), so a
  // Docker image built by either is shared.
  const recipe = recipeFor(profile, { id: TASK });
  const env = planEnvironments(records.filter((r) => r.repo === REPO).map((r) => ({ id: r.instance_id, repo: REPO, recipe, createdAt: r.created_at }))).get(
    TASK,
  )!;
  const mirror = await new MirrorCache(join(dir, "git")).ensure(REPO, join(corpus.dir, "repos", "demo-org__geometry"), record.base_commit);
  const scratch = join(dir, "scratch");
  mkdirSync(scratch, { recursive: true });
  // The task's sets, from a real qualification run (one run of each state).
  const local = new LocalExecutor(join(dir, "envs"), silentLogger);
  const checkout = (patches: { name: string; text: string }[]) => freshCheckout(mirror, record.base_commit, patches, scratch);
  const qualified = await qualifyTask(
    local,
    { id: TASK, baseCommit: record.base_commit, testPatch: record.test_patch, implementationPatch: record.patch, env, testArgs: [TESTS], runs: 1, checkout },
    silentLogger,
  );
  const heldout = HeldoutTask.parse({
    task_id: TASK,
    repo: REPO,
    base_commit: record.base_commit,
    implementation_patch: record.patch,
    test_patch: record.test_patch,
    fail_to_pass: qualified.sets.failToPass,
    pass_to_pass: qualified.sets.passToPass,
    test_command: "python -m pytest",
    environment: env.recipe,
    environment_as_of: env.asOf,
    upstream: { patch: record.patch + record.test_patch, pull_number: null, merge_commit: null },
  });
  fixture = { heldout, env, mirror, profile, scratch };
});

const ATTACKS = adversarialSubmissions({ submission, heldout: () => fixture.heldout, dir: () => dir });

describe.each(["local", "docker"] as const)("the verifier with the %s executor", (kind) => {
  let executor: Executor | undefined;
  const verify = (artifact: string) =>
    verifyArtifact(
      executor!,
      { task: fixture.heldout, env: fixture.env, mirror: fixture.mirror, artifact, rules: fixture.profile.classification, scratch: fixture.scratch },
      silentLogger,
    );

  beforeAll(async () => {
    if (kind === "local") executor = new LocalExecutor(join(dir, "envs"), silentLogger);
    else if (await dockerForTests()) executor = new DockerExecutor(new Docker(), silentLogger);
  });

  it("resolves the reference patch, and the reference with edited tests and a conftest, and not the empty patch", async (ctx) => {
    if (!executor) return ctx.skip();
    expect(fixture.heldout.fail_to_pass).toEqual([
      `${TESTS}::test_weigh_width_basic`,
      `${TESTS}::test_weigh_width_maximum`,
      `${TESTS}::test_weigh_width_precision`,
      `${TESTS}::test_weigh_width_rejects_text`,
    ]);
    const reference = await verify(fixture.heldout.implementation_patch);
    expect(reference).toMatchObject({ applied: true, resolved: true, integrity_problems: [], dropped_paths: [] });
    expect(Object.keys(reference.tests)).toEqual([...fixture.heldout.fail_to_pass, ...fixture.heldout.pass_to_pass].sort());
    const withTests = await submission(async (c) => {
      await git(["apply", "-"], { cwd: c, input: fixture.heldout.implementation_patch });
      put(c, TESTS, "def test_weigh_width_basic():\n    assert False\n");
      put(c, "conftest.py", "import pytest\n");
    });
    expect(await verify(withTests)).toMatchObject({
      resolved: true,
      dropped_paths: [
        { path: "conftest.py", reason: "test_configuration" },
        { path: TESTS, reason: "held_out_test_path" },
      ],
    });
    const empty = await verify("");
    expect(empty).toMatchObject({ applied: true, resolved: false });
    expect(Object.values(empty.tests).filter((s) => s === "failed")).toHaveLength(fixture.heldout.fail_to_pass.length);
  });

  it("resolves an honest fix that uses threads, subprocesses, logging, warnings, dataclasses and its own data files", async (ctx) => {
    if (!executor) return ctx.skip();
    const honest = await submission(async (c) => {
      await git(["apply", "-"], { cwd: c, input: fixture.heldout.implementation_patch });
      put(c, "src/geometry/shapes/data.txt", "5\n");
      append(
        c,
        CIRCLE,
        [
          "",
          "import collections, dataclasses, logging, os, subprocess, sys, threading, warnings",
          "Pair = collections.namedtuple('Pair', 'a b')",
          "@dataclasses.dataclass",
          "class Box:",
          "    width: float",
          "def _factor():",
          "    with open(os.path.join(os.path.dirname(__file__), 'data.txt')) as f:",
          "        return int(f.read())",
          "assert _factor() == 5 and Box(1) == Box(1) and Pair(1, 2).a == 1",
          "threading.Thread(target=lambda: None, daemon=True).start()",
          "logging.getLogger(__name__).info('loaded')",
          "warnings.warn('geometry.shapes.circle is loaded', DeprecationWarning, stacklevel=2)",
          "subprocess.run([sys.executable, '-c', 'pass'], check=True)",
          "",
        ].join("\n"),
      );
      execFileSync("chmod", ["+x", join(c, "src/geometry/shapes/data.txt")]);
    });
    const outcome = await verify(honest);
    expect(outcome).toMatchObject({ applied: true, resolved: true, integrity_problems: [], timed_out: false });
    // Starting a process is rare in a fix: noted for an auditor, without changing the verdict.
    expect(outcome.suspicious.some((f) => f.rule === "runtime" && /started a process/.test(f.detail))).toBe(true);
  });

  it("runs the required tests' whole files: a case named with `::` or a newline, a test leaning on an earlier one, a test module holding an object that cannot be inspected, and code reading test data", async (ctx) => {
    if (!executor) return ctx.skip();
    // Tests as real repositories have them (sqlfluff's ids, pytest's own suite, astroid's test
    // data, whose module-level object raises on any attribute): none of it is the submission's doing.
    const awkward = [
      "import pytest",
      "ORDER = []",
      "class Opaque:",
      "    def __getattr__(self, name):",
      "        raise Exception('boom')",
      "OPAQUE = Opaque()",
      "def test_first():",
      "    ORDER.append('first')",
      "def test_second():",
      "    assert ORDER == ['first']",
      "@pytest.mark.parametrize('text', ['a::b', 'line\\nbreak'])",
      "def test_case(text):",
      "    assert text",
      "",
    ].join("\n");
    const withAwkward = await submission((c) => {
      put(c, "tests/test_awkward.py", awkward);
      put(c, "tests/sample_input.py", "WIDTH = 5\n");
    });
    const awkwardIds = ["test_first", "test_second", "test_case[a::b]", "test_case[line\\nbreak]"].map((t) => `tests/test_awkward.py::${t}`);
    const task = HeldoutTask.parse({
      ...fixture.heldout,
      test_patch: fixture.heldout.test_patch + withAwkward,
      pass_to_pass: [...fixture.heldout.pass_to_pass, ...awkwardIds],
    });
    // The reference fix, reading a file of the checkout's test tree when its module is imported.
    const fixReading = async (file: string) => {
      const artifact = await submission(async (c) => {
        await git(["apply", "-"], { cwd: c, input: fixture.heldout.implementation_patch });
        append(c, CIRCLE, `\nimport os\nwith open(os.path.join(os.getcwd(), 'tests', '${file}')) as _f:\n    _f.read()\n`);
      });
      const { env, mirror, profile, scratch } = fixture;
      return verifyArtifact(executor!, { task, env, mirror, artifact, rules: profile.classification, scratch }, silentLogger);
    };
    // Test data read as the code's input, as astroid's module resolution does: suspicious only.
    const outcome = await fixReading("sample_input.py");
    expect(outcome).toMatchObject({ applied: true, resolved: true, integrity_problems: [] });
    for (const id of awkwardIds) expect(outcome.tests[id]).toBe("passed");
    expect(
      outcome.suspicious.some((f) => f.rule === "runtime" && /read tests\/sample_input\.py, a file of the test tree that is not a test module/.test(f.detail)),
    ).toBe(true);
    // Reading a test module that ran is tampering, whatever else it reads.
    const tampering = await fixReading("test_awkward.py");
    expect(tampering.resolved).toBe(false);
    expect(tampering.integrity_problems).toContain(
      "tampering: the submission's src/geometry/shapes/circle.py read the test file tests/test_awkward.py while the tests ran",
    );
  });

  it("never resolves a run that does not finish in time, and kills everything it started", async (ctx) => {
    if (!executor) return ctx.skip();
    const short: EnvironmentSpec = { ...fixture.env, recipe: { ...fixture.env.recipe, test_timeout_seconds: 20 } };
    const verifyShort = (artifact: string) =>
      verifyArtifact(
        executor!,
        { task: fixture.heldout, env: short, mirror: fixture.mirror, artifact, rules: fixture.profile.classification, scratch: fixture.scratch },
        silentLogger,
      );
    const withReference = (tail: string) =>
      submission(async (c) => {
        await git(["apply", "-"], { cwd: c, input: fixture.heldout.implementation_patch });
        append(c, CIRCLE, tail);
      });
    // A forged report and channel, then a hang: a timed-out run's results are never read.
    const forgedThenHung = await verifyShort(
      await submission((c) =>
        append(c, CIRCLE, `${WRONG}\nimport time\n${FORGE_JUNIT}\n${FORGE_CHANNEL}\n_forge_junit()\n_forge_channel()\ntime.sleep(100000)\n`),
      ),
    );
    expect(forgedThenHung).toMatchObject({ timed_out: true, resolved: false });
    // The reference fix, and a thread that never ends: pytest finishes, the process does not; that is a timeout.
    const lingering = await verifyShort(await withReference("\nimport threading, time\nthreading.Thread(target=lambda: time.sleep(100000)).start()\n"));
    expect(lingering).toMatchObject({ timed_out: true, resolved: false });
    // A grandchild in a session of its own, with a clean environment, holding the run's output open.
    const seconds = kind === "local" ? 100017 : 100018;
    const escaped = await verifyShort(
      await withReference(
        `\nimport os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        os.execve("/bin/sleep", ["sleep", "${seconds}"], {})\n    os._exit(0)\n`,
      ),
    );
    expect(escaped.applied).toBe(true);
    // Nothing the run started is left on this machine (a container's processes show here too).
    const left = readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8").includes(String(seconds));
        } catch {
          return false;
        }
      });
    expect(left).toEqual([]);
  });

  it(`rejects all ${ATTACKS.length} adversarial submissions`, async (ctx) => {
    if (!executor) return ctx.skip();
    expect(ATTACKS.length).toBeGreaterThanOrEqual(10);
    const resolved: string[] = [];
    for (const attack of ATTACKS) {
      const outcome = await verify(await attack.patch());
      if (outcome.resolved) resolved.push(attack.name);
      attack.expect(outcome);
    }
    expect(resolved).toEqual([]);
  });
});

describe("infrastructure faults in the verifier", () => {
  /** The local executor, failing its first `failures` test runs the way a dying engine does. */
  function flaky(failures: number): Executor & { artifacts: string[] } {
    const inner = new LocalExecutor(join(dir, "envs"), silentLogger);
    const seen: string[] = [];
    let left = failures;
    return {
      kind: "local",
      built: inner.built,
      buildSeconds: inner.buildSeconds,
      artifacts: seen,
      ensureEnvironment: (env, base) => inner.ensureEnvironment(env, base),
      pythonOffer: () => inner.pythonOffer(),
      async run(request) {
        seen.push(readFileSync(join(request.checkoutDir, CIRCLE), "utf8"));
        if (left-- > 0) throw new InfrastructureFault("the engine went away");
        return inner.run(request);
      },
    };
  }
  const verifyWith = (executor: Executor, artifact: string) =>
    verifyArtifact(
      executor,
      {
        task: fixture.heldout,
        env: fixture.env,
        mirror: fixture.mirror,
        artifact,
        rules: fixture.profile.classification,
        scratch: fixture.scratch,
        infrastructureBackoffMs: [0],
      },
      silentLogger,
    );

  it("re-runs the same frozen artifact after a fault and says how many re-runs it took", async () => {
    const executor = flaky(2);
    const outcome = await verifyWith(executor, fixture.heldout.implementation_patch);
    expect(outcome).toMatchObject({ resolved: true, infrastructure_retries: 2 });
    expect(outcome.infrastructure_fault).toBeUndefined();
    expect(new Set(executor.artifacts).size).toBe(1);
    expect(executor.artifacts).toHaveLength(3);
  });

  it("gives up after two re-runs and reports the fault, not a verdict on the submission", async () => {
    const outcome = await verifyWith(flaky(3), fixture.heldout.implementation_patch);
    expect(outcome).toMatchObject({ applied: true, resolved: false, infrastructure_retries: 2 });
    expect(outcome.infrastructure_fault).toMatch(/the engine went away \(after 2 retries\)/);
  });
});

describe("the oracle", () => {
  const check = (heldout: HeldoutTask) =>
    oracleTask(
      new LocalExecutor(join(dir, "envs"), silentLogger),
      { heldout, env: fixture.env, mirror: fixture.mirror, rules: fixture.profile.classification, runs: 2, scratch: fixture.scratch },
      silentLogger,
    );

  it("passes a task whose reference resolves in every run and whose empty patch never does", async () => {
    const record = await check(fixture.heldout);
    expect(record).toMatchObject({ task_id: TASK, passed: true, runs_per_patch: 2 });
    expect(record.runs.map((r) => [r.patch, r.run, r.resolved])).toEqual([
      ["reference", 0, true],
      ["reference", 1, true],
      ["empty", 0, false],
      ["empty", 1, false],
    ]);
  });

  it("rejects a task whose reference does not resolve under the verifier, naming the tests", async () => {
    // A reference patch that misses the precision argument: three of the four F2P tests pass.
    const partial = fixture.heldout.implementation_patch
      .replace("+    if precision is not None:\n+        result = round(result, precision)\n", "")
      .replace("@@ -3,3 +3,14 @@", "@@ -3,3 +3,12 @@");
    const record = await check({ ...fixture.heldout, implementation_patch: partial });
    expect(record.passed).toBe(false);
    expect(record.reject_reason).toBe("oracle_failed");
    expect(record.reject_detail).toMatch(
      /^the reference implementation does not resolve under the verifier \(run 1 of 2\): tests\/test_shapes_circle\.py::test_weigh_width_precision failed \(these tests passed in qualification/,
    );
    // The first contrary run decides; the empty patch is still checked.
    expect(record.runs.map((r) => r.patch)).toEqual(["reference", "empty", "empty"]);
  });

  it("rejects a task whose empty patch already resolves", async () => {
    const record = await check({ ...fixture.heldout, fail_to_pass: [`${TESTS}::test_circle_scale`], pass_to_pass: [] });
    expect(record.passed).toBe(false);
    expect(record.reject_detail).toMatch(/the empty patch resolves \(run 1 of 2\): every required test already passes without a fix/);
  });
});
