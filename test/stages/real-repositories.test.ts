import { BUILT_STAGES } from "../../stages/index.ts";
import { sharedDataForTests } from "../helpers/shared-data.ts";
import { existsSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { beforeAll, describe, expect, it } from "vitest";
import { DockerExecutor } from "../../pipeline/executors/docker.ts";
import { environmentSpec } from "../../pipeline/executors/environment.ts";
import { recipeFor } from "../../pipeline/profiles/recipes.ts";
import { profileFileName } from "../../pipeline/profiles/load.ts";
import { RepoProfile } from "../../pipeline/schemas/repo-profile.ts";
import { type FidelityResult, measureFidelity } from "../../pipeline/fidelity/measure.ts";
import { normaliseTestId, swebenchTestId } from "../../pipeline/test-results/test-ids.ts";
import { silentLogger } from "../../pipeline/logger.ts";
import { QualificationRecord } from "../../pipeline/schemas/qualification.ts";
import { dockerForTests } from "../helpers/docker.ts";
import { MirrorCache } from "../../pipeline/git.ts";
import { HeldoutTask } from "../../pipeline/schemas/heldout.ts";
import { verifyArtifact } from "../../pipeline/verifier/verify.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { requalify, writeRequalifyReport } from "../../pipeline/fidelity/requalify.ts";
import { checkProfile, formatProfileCheck } from "../../pipeline/fidelity/repo-check.ts";
import { fileTempDir } from "../helpers/tmp.ts";
import { freePort, startRedis } from "../helpers/redis.ts";
import { createFleetNetwork, startWorkerContainer } from "../helpers/fleet.ts";

/** The versions of `packages` installed in an image's environment, space-separated, read with no network. */
const installedVersions = (image: string, packages: string[]) =>
  execFileSync(
    "docker",
    [
      "run",
      "--rm",
      "--network",
      "none",
      image,
      "/env/bin/python",
      "-c",
      `import importlib.metadata as m; print(${packages.map((p) => `m.version('${p}')`).join(", ")})`,
    ],
    { encoding: "utf8" },
  ).trim();

const SHARED = fileURLToPath(new URL("../../../shared/data/", import.meta.url));
const RECORDS = join(SHARED, "swebench-lite-dev.jsonl");
const PROFILES = fileURLToPath(new URL("../../data/repos/", import.meta.url));
/** One record of each bundled repository (../shared/data/mirrors), each from another era. */
const TASKS = ["marshmallow-code__marshmallow-1359", "pylint-dev__astroid-1866", "sqlfluff__sqlfluff-1625"];

const docker = await dockerForTests();

// Real SWE-bench Lite tasks, qualified from the repositories' git bundles with the profiles in
// data/repos, the Docker executor and PyPI (for the image builds only; test runs are offline).
describe.skipIf(!docker || !sharedDataForTests(RECORDS))("qualify on real repositories reproduces SWE-bench's FAIL_TO_PASS", () => {
  let result: FidelityResult;
  let workDir: string;
  // Read only where the shared data is (the describe body runs even when it is skipped).
  const records = new Map(
    (existsSync(RECORDS) ? readFileSync(RECORDS, "utf8") : "")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { instance_id: string; FAIL_TO_PASS: string; base_commit: string; version: string; patch: string; test_patch: string })
      .map((r) => [r.instance_id, r]),
  );

  /** A task's qualification, record, profile and environment, as the fidelity run planned it. */
  const taskEnvironment = (id: string) => {
    const ours = qualifications().get(id)!;
    const record = records.get(id)!;
    const repo = id.replace(/-\d+$/, "").replace("__", "/");
    const profile = RepoProfile.parse(JSON.parse(readFileSync(join(PROFILES, profileFileName(repo)), "utf8")));
    return { ours, record, repo, profile, env: environmentSpec(repo, recipeFor(profile, { id, version: record.version }), ours.as_of) };
  };

  beforeAll(async () => {
    workDir = fileTempDir();
    result = await measureFidelity({
      stages: BUILT_STAGES,
      records: RECORDS,
      profilesDir: PROFILES,
      mirrors: join(SHARED, "mirrors"),
      workDir,
      executor: "docker",
      runs: 1,
      jobs: 2,
      tasks: TASKS,
      log: silentLogger,
    });
    qualifications();
  });

  /** Requalifies a file's records in the fidelity run's work directory, once a state, from the bundled mirrors. */
  const requalifyHere = (file: string, jobs: number) =>
    requalify({
      stages: BUILT_STAGES,
      swebench: file,
      profilesDir: PROFILES,
      workDir,
      executor: "docker",
      runs: 1,
      jobs,
      mirrors: join(SHARED, "mirrors"),
      log: silentLogger,
    });

  /** A record of the dev file, whole, as a copy's starting point. */
  const recordOf = (id: string) =>
    JSON.parse(
      readFileSync(RECORDS, "utf8")
        .split("\n")
        .find((l) => l.includes(`"${id}"`))!,
    ) as Record<string, string>;
  /** A task's qualification as the work directory holds it now (after the latest run). */
  const qualificationOf = (id: string) =>
    readFileSync(join(workDir, "artifacts", "qualify", "qualifications.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as QualificationRecord)
      .find((q) => q.task_id === id)!;

  // Read once, after the fidelity run: the requalify and repo check tests below run the pipeline again in the same work directory.
  let fidelityQualifications: Map<string, QualificationRecord>;
  const qualifications = () =>
    (fidelityQualifications ??= new Map(
      readFileSync(join(workDir, "artifacts", "qualify", "qualifications.jsonl"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => QualificationRecord.parse(JSON.parse(l)))
        .map((q) => [q.task_id, q]),
    ));

  it("builds every environment and gives each task exactly the record's FAIL_TO_PASS", () => {
    for (const id of TASKS) {
      const task = result.tasks.find((t) => t.task === id)!;
      expect(task.environment, id).toEqual({ built: true });
      const ours = qualifications().get(id)!;
      expect(ours.executor).toBe("docker");
      // compared as SWE-bench spells ids: its log parser cut parametrized ids at their first space
      const spelt = (ids: string[]) => [...new Set(ids.map(normaliseTestId))].sort();
      expect(spelt(ours.fail_to_pass.map((t) => swebenchTestId(ours.test_runner, t))), id).toEqual(
        spelt(JSON.parse(records.get(id)!.FAIL_TO_PASS) as string[]),
      );
      expect(task.failToPass!.agreement, id).toBe("exact");
      expect(ours.kept, id).toBe(true);
    }
  });

  it("verifies each task's reference fix as resolved, with no integrity problem, and the empty patch as not", async () => {
    // The guarded runner on real test suites: their conftests, fixtures, plugins and test modules
    // must pass its integrity checks untouched (no false alarm), and its channel must carry them.
    const executor = new DockerExecutor(new Docker(), silentLogger, {
      cacheDir: join(workDir, "envs", "uv-cache"),
      logDir: join(workDir, "envs", "build-logs"),
    });
    const scratch = join(workDir, "verify-scratch");
    mkdirSync(scratch, { recursive: true });
    for (const id of TASKS) {
      const { ours, record, repo, profile, env } = taskEnvironment(id);
      const mirror = await new MirrorCache(join(workDir, "verify-git")).ensure(
        repo,
        join(SHARED, "mirrors", `${repo.replace("/", "__")}.bundle`),
        record.base_commit,
      );
      const task = HeldoutTask.parse({
        task_id: id,
        repo,
        base_commit: record.base_commit,
        implementation_patch: record.patch,
        test_patch: record.test_patch,
        fail_to_pass: ours.fail_to_pass,
        pass_to_pass: ours.pass_to_pass,
        test_command: "python -m pytest",
        environment: env.recipe,
        environment_as_of: env.asOf,
        upstream: { patch: record.patch + record.test_patch, pull_number: null, merge_commit: null },
      });
      const verify = (artifact: string) => verifyArtifact(executor, { task, env, mirror, artifact, rules: profile.classification, scratch }, silentLogger);
      const reference = await verify(record.patch);
      expect(
        { resolved: reference.resolved, integrity: reference.integrity_problems, notPassed: Object.entries(reference.tests).filter(([, s]) => s !== "passed") },
        id,
      ).toEqual({ resolved: true, integrity: [], notPassed: [] });
      const empty = await verify("");
      expect(empty.resolved, id).toBe(false);
      expect(empty.integrity_problems, id).toEqual([]);
    }
  });

  it("audits the records: requalify finds their cut ids, and the defects planted in a copy of one", async () => {
    // A copy of marshmallow-1359 that claims an F2P test that does not exist, and lists its real
    // F2P test (which fails before the fix) as P2P.
    const lines = readFileSync(RECORDS, "utf8")
      .split("\n")
      .filter(Boolean)
      .filter((l) => TASKS.includes((JSON.parse(l) as { instance_id: string }).instance_id));
    const original = JSON.parse(lines.find((l) => l.includes('"marshmallow-code__marshmallow-1359"'))!) as Record<string, string>;
    const f2p = JSON.parse(original.FAIL_TO_PASS!) as string[];
    const planted = {
      ...original,
      instance_id: "marshmallow-code__marshmallow-91359",
      FAIL_TO_PASS: JSON.stringify([...f2p, "tests/test_fields.py::test_no_such_test"]),
      PASS_TO_PASS: JSON.stringify([...(JSON.parse(original.PASS_TO_PASS!) as string[]), f2p[0]]),
    };
    const file = join(workDir, "audited.jsonl");
    writeFileSync(file, [...lines, JSON.stringify(planted)].join("\n") + "\n");
    // The same work directory: the three real records' qualification is reused, only the copy runs.
    const report = await requalifyHere(file, 2);
    const kinds = new Map(report.records.map((r) => [r.instance_id, Object.fromEntries(r.defects.map((d) => [d.kind, d.tests]))]));
    expect([...kinds.keys()]).toEqual([
      "marshmallow-code__marshmallow-1359",
      "marshmallow-code__marshmallow-91359",
      "pylint-dev__astroid-1866",
      "sqlfluff__sqlfluff-1625",
    ]);
    expect(report.records.every((r) => r.requalified)).toBe(true);
    // SWE-bench's log parser cut parametrized ids at their first space: each real record has some.
    for (const id of TASKS) expect(kinds.get(id)!.malformed_id?.length, id).toBeGreaterThan(0);
    for (const id of TASKS)
      expect(
        Object.keys(kinds.get(id)!).filter((k) => k !== "malformed_id"),
        id,
      ).toEqual([]);
    expect(kinds.get("marshmallow-code__marshmallow-91359")).toMatchObject({
      f2p_not_collected: ["tests/test_fields.py::test_no_such_test"],
      p2p_fails: [f2p[0]],
      f2p_set_differs: ["-tests/test_fields.py::test_no_such_test"],
    });
    const files = await writeRequalifyReport(report, join(workDir, "requalify-report"));
    expect(files.map((f) => f.split("/").at(-1))).toEqual(["requalify-report.md", "requalify-report.csv", "requalify-report.json"]);
    expect(readFileSync(files[0]!, "utf8")).toContain("### marshmallow-code__marshmallow-91359");
  });

  it("a copy whose test run crashes pytest before the fix still qualifies: the crashing test fails before, every other test keeps its outcome", async () => {
    // As in pytest-7168, where the failing test's repr crashed pytest's own reporting: here a
    // conftest makes pytest end in an INTERNALERROR whenever a test's call fails, so the before
    // state of marshmallow-1359 (its F2P test fails) crashes the runner, and the after state does not.
    const original = recordOf("marshmallow-code__marshmallow-1359");
    const conftest = [
      "import pytest",
      "",
      "",
      "@pytest.hookimpl(hookwrapper=True)",
      "def pytest_runtest_makereport(item, call):",
      "    outcome = yield",
      "    report = outcome.get_result()",
      '    if report.when == "call" and report.failed:',
      '        raise RuntimeError("the failure could not be reported")',
    ];
    const crashing = {
      ...original,
      instance_id: "marshmallow-code__marshmallow-81359",
      test_patch: `${original.test_patch!.trimEnd()}\ndiff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n@@ -0,0 +1,${conftest.length} @@\n${conftest.map((l) => `+${l}`).join("\n")}\n`,
    };
    const file = join(workDir, "crashing.jsonl");
    writeFileSync(file, JSON.stringify(crashing) + "\n");
    const report = await requalifyHere(file, 1);
    const record = report.records.find((r) => r.instance_id === "marshmallow-code__marshmallow-81359")!;
    expect(record.requalified).toBe(true);
    // What it claims holds (its cut ids aside): the F2P test fails before, as the crash's victim.
    expect(record.defects.filter((d) => d.kind !== "malformed_id")).toEqual([]);
    const qualification = qualificationOf("marshmallow-code__marshmallow-81359");
    const before = qualification.runs.find((r) => r.state === "before")!;
    const f2p = JSON.parse(original.FAIL_TO_PASS!) as string[];
    // Each test that fails before crashes the run it is in; alone, it is counted failing, with the reason.
    for (const test of f2p) expect(before.crashes).toContainEqual({ target: test, reason: "ended in a pytest INTERNALERROR" });
    for (const crash of before.crashes!) expect(before.outcomes[crash.target]).toBe("failed");
    expect(qualification.fail_to_pass).toEqual(f2p);
    // Every other test keeps the outcome it has in the uncrashed task's qualification.
    expect(qualification.pass_to_pass).toEqual(qualifications().get("marshmallow-code__marshmallow-1359")!.pass_to_pass);
  });

  it("a copy whose base pins a package released after its date, on a Python its as-of hypothesis cannot run on: the pin and the floor are installed, the record says so, and a hypothesis test runs", async () => {
    // The lockstep case (pylint pins the astroid released after its commit) and the fallback case
    // (pytest 4.x's as-of hypothesis crashes at collection on Python 3.9), on marshmallow-1359: one
    // more commit on its base adds a requirements file pinning typing-extensions 4.5.0 (released
    // 2023-02-15, years after the task), the copy is dated 2019-03-15 (hypothesis then was 4.1x), and
    // its profile installs hypothesis with the shipped pytest profile's floor for Python 3.9.
    const original = recordOf("marshmallow-code__marshmallow-1359");
    const mirrors = join(workDir, "lockstep-mirrors");
    const bare = join(mirrors, "marshmallow-code__marshmallow.git");
    mkdirSync(mirrors, { recursive: true });
    const git = (args: string[], input?: string, env: Record<string, string> = {}) =>
      execFileSync("git", args, { cwd: bare, input, env: { ...process.env, ...env }, encoding: "utf8" }).trim();
    execFileSync("git", ["clone", "--quiet", "--bare", join(SHARED, "mirrors", "marshmallow-code__marshmallow.bundle"), bare]);
    const blob = git(["hash-object", "-w", "--stdin"], "typing-extensions==4.5.0\n");
    const index = { GIT_INDEX_FILE: join(workDir, "lockstep.index") };
    git(["read-tree", original.base_commit!], undefined, index);
    git(["update-index", "--add", "--cacheinfo", `100644,${blob},requirements-lockstep.txt`], undefined, index);
    const tree = git(["write-tree"], undefined, index);
    const date = git(["show", "-s", "--format=%cI", original.base_commit!]);
    const who = {
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@t",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@t",
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_DATE: date,
    };
    const base = git(["commit-tree", tree, "-p", original.base_commit!, "-m", "Pin typing-extensions"], undefined, who);
    git(["update-ref", "refs/heads/lockstep", base]);
    const hypothesisTest = [
      "from hypothesis import given, strategies as st",
      "",
      "",
      "@given(st.integers())",
      "def test_integers_round_trip(value):",
      "    assert int(str(value)) == value",
    ];
    const copy = {
      ...original,
      instance_id: "marshmallow-code__marshmallow-71359",
      base_commit: base,
      created_at: "2019-03-15T00:00:00Z",
      test_patch: `${original.test_patch!.trimEnd()}\ndiff --git a/tests/test_floor.py b/tests/test_floor.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_floor.py\n@@ -0,0 +1,${hypothesisTest.length} @@\n${hypothesisTest.map((l) => `+${l}`).join("\n")}\n`,
    };
    const profiles = join(workDir, "lockstep-profiles");
    mkdirSync(profiles, { recursive: true });
    const shipped = RepoProfile.parse(JSON.parse(readFileSync(join(PROFILES, "marshmallow-code__marshmallow.json"), "utf8")));
    const floor = RepoProfile.parse(JSON.parse(readFileSync(join(PROFILES, "pytest-dev__pytest.json"), "utf8"))).environment.python_floors!;
    const profile = {
      ...shipped,
      environment: {
        ...shipped.environment,
        pip_requirements: [...shipped.environment.pip_requirements, "hypothesis"],
        requirements_files: ["requirements-lockstep.txt"],
        python_floors: floor,
      },
    };
    writeFileSync(join(profiles, "marshmallow-code__marshmallow.json"), JSON.stringify(profile, null, 1));
    const file = join(workDir, "lockstep.jsonl");
    writeFileSync(file, JSON.stringify(copy) + "\n");
    const report = await requalify({
      stages: BUILT_STAGES,
      swebench: file,
      profilesDir: profiles,
      workDir,
      executor: "docker",
      runs: 1,
      jobs: 1,
      mirrors,
      log: silentLogger,
    });
    const record = report.records.find((r) => r.instance_id === copy.instance_id)!;
    expect(record.requalified).toBe(true);
    expect(record.defects.filter((d) => d.kind !== "malformed_id")).toEqual([]);
    const qualification = qualificationOf(copy.instance_id);
    expect(qualification.let_past_as_of).toEqual([
      {
        package: "typing-extensions",
        version: "4.5.0",
        file: "requirements-lockstep.txt",
        why: "pinned exactly in requirements-lockstep.txt, the checkout's own requirements",
      },
    ]);
    expect(qualification.raised_for_python).toEqual([{ package: "hypothesis", to: ">=4.18.2", python: "3.9", why: floor[0]!.why }]);
    expect(qualification.fail_to_pass).toEqual(JSON.parse(original.FAIL_TO_PASS!));
    // The hypothesis test was collected and passed in both states: on 3.9 an as-of hypothesis would have crashed its file.
    expect(qualification.pass_to_pass).toContain("tests/test_floor.py::test_integers_round_trip");
    // What the revision's image holds: the pinned release, and hypothesis at the floor's release (before the next one).
    const env = environmentSpec(
      "marshmallow-code/marshmallow",
      recipeFor(RepoProfile.parse(profile), { id: copy.instance_id, version: original.version! }),
      qualification.as_of,
    );
    expect(env.key).toBe(qualification.environment_key);
    const versions = installedVersions(DockerExecutor.revisionTag(env, base), ["typing-extensions", "hypothesis"]);
    const [pinned, hypothesis] = versions.split(" ");
    expect(pinned).toBe("4.5.0");
    expect(hypothesis!.split(".").slice(0, 2).join(".")).toBe("4.18");
    expect(Number(hypothesis!.split(".")[2])).toBeGreaterThanOrEqual(2);
  });

  it("a later task's base revision resolves as of its own commit date, not its environment's earlier one: astroid-1978 shares an environment with a task dated before the typing-extensions its base requires, and both build with the shipped profile", async () => {
    // The shape of pylint's 2.15 records (an environment as of the era's first task, 2022-06-28; a
    // later base asking for typing-extensions~=4.3, published 2022-07-01), on the bundled astroid:
    // astroid-1978's base (committed 2023-01-22) asks for typing-extensions>=4.0.0 (published
    // 2021-11-14) in its pyproject.toml; a copy of the record dated 2021-10-01, of the same version,
    // is the earlier task that dates the environment both share.
    const original = recordOf("pylint-dev__astroid-1978");
    const earlier = { ...original, instance_id: "pylint-dev__astroid-71978", created_at: "2021-10-01T00:00:00Z" };
    const file = join(workDir, "revision-date.jsonl");
    writeFileSync(file, [original, earlier].map((r) => JSON.stringify(r)).join("\n") + "\n");
    const report = await requalifyHere(file, 1);
    for (const id of [original.instance_id!, earlier.instance_id]) {
      const record = report.records.find((r) => r.instance_id === id)!;
      expect(record.requalified, id).toBe(true);
      const qualification = qualificationOf(id);
      expect(qualification.as_of).toBe("2021-10-01T00:00:00.000Z");
      expect(qualification.revision_as_of).toBe("2023-01-22T14:31:44.000Z");
      expect(qualification.fail_to_pass).toEqual(JSON.parse(original.FAIL_TO_PASS!));
    }
    // The revision's image: typing-extensions as of the commit (4.5.0 came on 2023-02-15), pytest
    // from the environment's own layer, as of the earlier date (7.0.0 came on 2022-02-03).
    const qualification = qualificationOf(original.instance_id!);
    const env = environmentSpec(
      "pylint-dev/astroid",
      recipeFor(RepoProfile.parse(JSON.parse(readFileSync(join(PROFILES, "pylint-dev__astroid.json"), "utf8"))), {
        id: original.instance_id!,
        version: original.version!,
      }),
      qualification.as_of,
    );
    expect(env.key).toBe(qualification.environment_key);
    const versions = installedVersions(DockerExecutor.revisionTag(env, original.base_commit!), ["typing-extensions", "pytest"]);
    expect(versions).toMatch(/^4\.4\.0 6\.2\.\d+$/);
  });

  it("repo check: every era of each bundled profile builds and qualifies a task as its record says", async () => {
    // One task per era (SWE-bench version): the earliest, as a full run resolves the era's environment as of it.
    for (const name of ["marshmallow-code__marshmallow", "pylint-dev__astroid", "sqlfluff__sqlfluff"]) {
      const eras = await checkProfile({
        stages: BUILT_STAGES,
        profile: join(PROFILES, `${name}.json`),
        tasks: RECORDS,
        sample: 1,
        workDir,
        executor: "docker",
        jobs: 2,
        mirrors: join(SHARED, "mirrors"),
        log: silentLogger,
      });
      const versions = new Set([...records.values()].filter((r) => r.instance_id.startsWith(`${name}-`)).map((r) => r.version));
      expect(eras.length, name).toBe(versions.size);
      const text = formatProfileCheck(name.replace("__", "/"), eras);
      expect(text, text).not.toContain("DOES NOT WORK");
      for (const era of eras)
        expect(
          era.sampled.map((t) => t.environment.built && t.failToPass?.agreement),
          `${name} ${era.era}`,
        ).toEqual(["exact"]);
    }
  });

  it("installs each repository once per base revision, into an image of its own on the environment's", async () => {
    const engine = new Docker();
    for (const id of TASKS) {
      const { ours, record, repo, profile, env } = taskEnvironment(id);
      expect(env.key).toBe(ours.environment_key);
      const baseCommit = record.base_commit;
      const revision = await engine.getImage(DockerExecutor.revisionTag(env, baseCommit)).inspect();
      expect(revision.Config.Labels["org.switch-swe.base-commit"]).toBe(baseCommit);
      // built on top of the environment's image: its layers are the environment's plus the install
      const environment = await engine.getImage(DockerExecutor.imageTag(env)).inspect();
      expect(revision.RootFS.Layers!.slice(0, environment.RootFS.Layers!.length)).toEqual(environment.RootFS.Layers);
    }
    // builds this run made (none when an earlier run on this machine left the images) kept their logs
    for (const build of result.builds) expect(build.seconds).toBeGreaterThan(0);
    if (result.builds.length) expect(existsSync(join(workDir, "envs", "build-logs"))).toBe(true);
  });

  it("qualifies the same tasks through the queue on a Docker worker in a container of its own, which fetches them from the coordinator's git service and builds the base revision's layer it lacks", async (context) => {
    const network = await createFleetNetwork();
    const gateway = network.gateway;
    // Reached from the bridge, Redis wants a password (its protected mode refuses others without one).
    const redis = await startRedis({ bind: ["127.0.0.1", gateway], password: "real-repositories" });
    if (!redis) {
      await network.remove();
      return context.skip();
    }
    // The worker must build a revision layer itself: the one of the first task, which the fidelity
    // run left, is removed (one is enough to show it; the others it finds, as a worker host that
    // built them before would).
    const engine = new Docker();
    const rebuilt = taskEnvironment(TASKS[0]!);
    // Forced: the tag goes even where another run's container still uses the image (it keeps its image by id).
    await engine.getImage(DockerExecutor.revisionTag(rebuilt.env, rebuilt.record.base_commit)).remove({ force: true });
    // Its own directory of this machine (the engine mounts its checkouts from there); it sees no
    // other: not the bundles, not the coordinator's work directory.
    const workerDir = fileTempDir();
    process.env.SWITCH_SWE_GIT_TOKEN = "real-repositories-token";
    const worker = startWorkerContainer({
      name: "far-host",
      network: network.name,
      executor: "docker",
      workDir: workerDir,
      redis: `redis://:real-repositories@${gateway}:${redis.port}`,
      prefix: "switch-swe",
      gitToken: "real-repositories-token",
    });
    try {
      const queued = fileTempDir();
      const through = await measureFidelity({
        stages: BUILT_STAGES,
        records: RECORDS,
        profilesDir: PROFILES,
        mirrors: join(SHARED, "mirrors"),
        workDir: queued,
        executor: "queue",
        redis: redis.url,
        gitService: `${gateway}:${await freePort()}`,
        runs: 1,
        jobs: 2,
        tasks: TASKS,
        log: silentLogger,
      });
      expect(through.tasks.map((t) => [t.task, t.failToPass?.agreement])).toEqual(TASKS.map((id) => [id, "exact"]));
      const viaQueue = readFileSync(join(queued, "artifacts", "qualify", "qualifications.jsonl"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => QualificationRecord.parse(JSON.parse(l)));
      for (const q of viaQueue) expect(q, q.task_id).toEqual(qualifications().get(q.task_id));
      // The worker cloned each repository into its own mirror cache, and the removed layer is back.
      for (const id of TASKS) {
        const { record, repo, env } = taskEnvironment(id);
        expect(existsSync(join(workerDir, "git", `${repo.replace("/", "__")}.git`)), repo).toBe(true);
        expect((await engine.getImage(DockerExecutor.revisionTag(env, record.base_commit)).inspect()).Config.Labels["org.switch-swe.base-commit"]).toBe(
          record.base_commit,
        );
      }
    } finally {
      delete process.env.SWITCH_SWE_GIT_TOKEN;
      worker.remove();
      await redis.stop();
      await network.remove();
    }
  });
});
