import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { beforeAll, describe, expect, it } from "vitest";
import { environmentSpec } from "../../../pipeline/executors/environment.ts";
import { DockerExecutor } from "../../../pipeline/executors/docker.ts";
import { LocalExecutor } from "../../../pipeline/executors/local.ts";
import { pidNamespaceAvailable, runProcess } from "../../../pipeline/executors/processes.ts";
import { parseJunitXml } from "../../../pipeline/test-results/junit.ts";
import { silentLogger } from "../../../pipeline/logger.ts";
import { EnvironmentRecipe } from "../../../pipeline/schemas/repo-profile.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { processesRunning } from "../../helpers/processes.ts";
import { fileTempDir, tempDir } from "../../helpers/tmp.ts";

const docker = await dockerForTests();
const escapeMarker = `/tmp/switch-swe-escaped-${process.pid}`;

/** A repository whose tests try what untrusted code might; each passes only if it was contained. */
function hostileCheckout(): string {
  const dir = tempDir("switch-swe-hostile-");
  mkdirSync(join(dir, "tests"));
  writeFileSync(
    join(dir, "tests", "test_hostile.py"),
    `import os, pathlib, socket, time


def test_network_is_unreachable():
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=3)
    except OSError:
        return
    raise AssertionError("reached the network")


def test_no_token_in_environment():
    assert not [k for k in os.environ if "TOKEN" in k or "GITHUB" in k]


def test_write_outside_checkout():
    pathlib.Path("${escapeMarker}").write_text("escaped")


def test_fork_bomb_is_stopped():
    children = []
    try:
        for _ in range(20000):
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children.append(pid)
    except OSError:
        pass
    for pid in children:
        os.kill(pid, 9)
    assert len(children) < 20000, "nothing limited the number of processes"


def test_still_runs_after_the_others():
    assert True
`,
  );
  return dir;
}

function hangingCheckout(): string {
  const dir = tempDir("switch-swe-hang-");
  mkdirSync(join(dir, "tests"));
  writeFileSync(join(dir, "tests", "test_hang.py"), "import time\n\n\ndef test_hangs():\n    time.sleep(3600)\n");
  return dir;
}

const recipe = EnvironmentRecipe.parse({ python: "3.11", pip_requirements: ["pytest"] });
const env = environmentSpec("demo-org/hostile", recipe, "2024-06-01T00:00:00Z");
// The same first layer (test_env is not part of what is built), with variables for its test runs.
const withTestEnv = environmentSpec(
  "demo-org/hostile",
  EnvironmentRecipe.parse({ ...recipe, test_env: { SWITCH_SWE_PROBE: "{venv}/share/probe" } }),
  "2024-06-01T00:00:00Z",
);

/** A repository whose one test passes only if the recipe's test_env reached it, {venv} made its environment. */
function testEnvCheckout(): string {
  const dir = tempDir("switch-swe-test-env-");
  mkdirSync(join(dir, "tests"));
  writeFileSync(
    join(dir, "tests", "test_env.py"),
    'import os, sys\n\n\ndef test_sees_the_recipes_variable():\n    assert os.environ["SWITCH_SWE_PROBE"] == sys.prefix + "/share/probe"\n',
  );
  return dir;
}

describe.skipIf(!docker)("the Docker executor contains what a repository's tests do", () => {
  let executor: DockerExecutor;
  beforeAll(async () => {
    executor = new DockerExecutor(new Docker(), silentLogger, { limits: { memoryBytes: 512 * 2 ** 20, pids: 64, cpus: 1 } });
    await executor.ensureEnvironment(env);
  });

  it("no network, no token, no writes outside, no runaway forks; the run completes", async () => {
    const saved = process.env.GITHUB_TOKEN;
    process.env.GITHUB_TOKEN = "ghp_mustNotReachTheTests";
    try {
      const result = await executor.run({ env, checkoutDir: hostileCheckout(), tests: [], timeoutSeconds: 120 });
      const statuses = Object.fromEntries(parseJunitXml(result.junitXml!).map((r) => [r.nodeId.split("::")[1], r.status]));
      expect(statuses).toEqual({
        test_network_is_unreachable: "passed",
        test_no_token_in_environment: "passed",
        test_write_outside_checkout: "passed",
        test_fork_bomb_is_stopped: "passed",
        test_still_runs_after_the_others: "passed",
      });
      expect(existsSync(escapeMarker)).toBe(false);
    } finally {
      if (saved === undefined) delete process.env.GITHUB_TOKEN;
      else process.env.GITHUB_TOKEN = saved;
    }
  });

  it("runs a submission's tests as nobody, with no capabilities, unable to change the environment or the runner", async () => {
    const dir = tempDir("switch-swe-guarded-");
    mkdirSync(join(dir, "tests"));
    writeFileSync(
      join(dir, "tests", "test_privileges.py"),
      [
        "import os",
        "def test_runs_as_nobody():",
        "    assert (os.getuid(), os.getgid(), os.getgroups()) == (65534, 65534, [])",
        "def test_has_no_capabilities():",
        "    status = open('/proc/self/status').read()",
        "    assert 'CapEff:\\t0000000000000000' in status and 'CapBnd:\\t0000000000000000' in status, status",
        "def test_cannot_change_the_environment_or_the_runner():",
        "    for path in ('/env/bin/python', '/results/run.sh', '/results/switch_swe_runner.py', '/results/new-file'):",
        "        try:",
        "            open(path, 'a').close()",
        "        except OSError:",
        "            continue",
        "        raise AssertionError(path + ' is writable')",
        "def test_writes_in_its_own_checkout():",
        "    open('written-by-the-tests.txt', 'w').write('ok')",
        "",
      ].join("\n"),
    );
    const result = await executor.run({
      env,
      checkoutDir: dir,
      tests: [],
      timeoutSeconds: 120,
      guarded: { submittedPaths: [], protectedPaths: ["tests/test_privileges.py"] },
    });
    const calls = Object.fromEntries(
      (result.channel?.records ?? []).flatMap((r) => (r.kind === "test" && r.when === "call" ? [[r.nodeid.split("::")[1], r.outcome]] : [])),
    );
    expect({ finished: result.channel?.finished, calls }, result.outputTail).toEqual({
      finished: true,
      calls: {
        test_runs_as_nobody: "passed",
        test_has_no_capabilities: "passed",
        test_cannot_change_the_environment_or_the_runner: "passed",
        test_writes_in_its_own_checkout: "passed",
      },
    });
    // The run's copy was written, never the checkout it was given.
    expect(existsSync(join(dir, "written-by-the-tests.txt"))).toBe(false);
  });

  it("gives test runs the recipe's test_env, with {venv} the environment's", async () => {
    await executor.ensureEnvironment(withTestEnv);
    const result = await executor.run({ env: withTestEnv, checkoutDir: testEnvCheckout(), tests: ["tests/test_env.py"], timeoutSeconds: 120 });
    expect(
      parseJunitXml(result.junitXml!).map((r) => r.status),
      result.outputTail,
    ).toEqual(["passed"]);
  });

  it("kills a hanging run at its timeout and leaves no container behind", async () => {
    const result = await executor.run({ env, checkoutDir: hangingCheckout(), tests: [], timeoutSeconds: 8 });
    // Only the deadline sets this, after it killed the container (the test sleeps for an hour).
    expect(result.timedOut).toBe(true);
    const leftovers = await new Docker().listContainers({ all: true, filters: { label: [`org.switch-swe.environment=${env.key}`] } });
    expect(leftovers).toEqual([]);
  });
});

describe("the local executor", () => {
  it("builds a virtual environment once, strips our variables, and times out a hanging run", async () => {
    const root = fileTempDir();
    const local = new LocalExecutor(root, silentLogger);
    expect(await local.ensureEnvironment(env)).toEqual({ built: true });
    // another process (a later run) finds it on disk
    expect(await new LocalExecutor(root, silentLogger).ensureEnvironment(env)).toEqual({ built: false });
    const saved = process.env.GITHUB_TOKEN;
    process.env.GITHUB_TOKEN = "ghp_mustNotReachTheTests";
    try {
      const checkout = hostileCheckout();
      const result = await local.run({ env, checkoutDir: checkout, tests: ["tests/test_hostile.py::test_no_token_in_environment"], timeoutSeconds: 60 });
      expect(parseJunitXml(result.junitXml!).map((r) => r.status)).toEqual(["passed"]);
    } finally {
      if (saved === undefined) delete process.env.GITHUB_TOKEN;
      else process.env.GITHUB_TOKEN = saved;
    }
    // test_env is not part of what is built: the same environment, with the variables in its runs.
    expect(await new LocalExecutor(root, silentLogger).ensureEnvironment(withTestEnv)).toEqual({ built: false });
    const withVariables = await local.run({ env: withTestEnv, checkoutDir: testEnvCheckout(), tests: ["tests/test_env.py"], timeoutSeconds: 60 });
    expect(
      parseJunitXml(withVariables.junitXml!).map((r) => r.status),
      withVariables.outputTail,
    ).toEqual(["passed"]);
    const hung = await local.run({ env, checkoutDir: hangingCheckout(), tests: [], timeoutSeconds: 3 });
    expect(hung.timedOut).toBe(true);
  });
});

describe("executors that share an environments directory in one process", () => {
  it("build an environment one at a time: the second finds the first's, whole (a queue worker makes an executor per job's limits)", async () => {
    const root = fileTempDir();
    const [first, second] = [new LocalExecutor(root, silentLogger), new LocalExecutor(root, silentLogger)];
    const results = await Promise.all([first.ensureEnvironment(env), second.ensureEnvironment(env)]);
    expect(results.map((r) => r.built).sort()).toEqual([false, true]);
    const result = await second.run({
      env,
      checkoutDir: hostileCheckout(),
      tests: ["tests/test_hostile.py::test_no_token_in_environment"],
      timeoutSeconds: 60,
    });
    expect(
      parseJunitXml(result.junitXml!).map((r) => r.status),
      result.outputTail,
    ).toEqual(["passed"]);
    expect(readdirSync(root).filter((name) => name.includes(".partial-"))).toEqual([]);
  });
});

describe("a local process that leaves descendants behind", () => {
  it("returns when the process exits, though a descendant in its own session holds the output open, and kills that descendant", async () => {
    const done = await runProcess("bash", ["-c", "setsid sleep 313 & echo started"], { cwd: tempDir(), env: { PATH: "/usr/bin:/bin" }, timeoutSeconds: 600 });
    expect(done).toMatchObject({ code: 0, timedOut: false });
    expect(done.output).toContain("started");
    expect(processesRunning("sleep 313")).toEqual([]);
  });

  it("at its timeout kills the process, its group and what escaped the group, and returns", async () => {
    const done = await runProcess("bash", ["-c", "setsid sleep 314 & sleep 315"], { cwd: tempDir(), env: { PATH: "/usr/bin:/bin" }, timeoutSeconds: 2 });
    expect(done.timedOut).toBe(true);
    expect(processesRunning("sleep 314")).toEqual([]);
    expect(processesRunning("sleep 315")).toEqual([]);
  });

  it("killed in a PID namespace of its own, returns only once the namespace is empty, though its processes left its group, session, environment and output", async () => {
    // The verifier's test runs are killed as soon as the runner says it has finished. Killing
    // `unshare` returns at once while the kernel is still killing the namespace's others: many of
    // them, holding no pipe of the run's, make that take long enough to be seen.
    expect(pidNamespaceAvailable(), "this machine cannot start a process in a PID namespace of its own (root or user namespaces)").toBe(true);
    const escape = "for i in $(seq 200); do setsid env -i /bin/sleep 316 </dev/null >/dev/null 2>&1 & done; echo started; sleep 317";
    const done = await runProcess("bash", ["-c", escape], { cwd: tempDir(), env: { PATH: "/usr/bin:/bin" }, timeoutSeconds: 3, ownPidNamespace: true });
    expect(done.timedOut).toBe(true);
    expect(done.output).toContain("started");
    expect(processesRunning("/bin/sleep 316")).toEqual([]);
    expect(processesRunning("sleep 317")).toEqual([]);
  });
});
