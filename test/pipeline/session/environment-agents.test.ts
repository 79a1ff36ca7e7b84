import { BUILT_STAGES } from "../../../stages/index.ts";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { beforeAll, describe, expect, it } from "vitest";
import { SessionSpec } from "../../../pipeline/schemas/session.ts";
import { existsSync } from "node:fs";
import { basename } from "node:path";
import { SessionIndex } from "../../../pipeline/schemas/session.ts";
import { createLogger } from "../../../pipeline/logger.ts";
import { loadAgent } from "../../../pipeline/session/agents.ts";
import { runAndScoreSession } from "../../../pipeline/session/runs.ts";
import { OpenedBenchmark } from "../../../pipeline/project/benchmark.ts";
import { ModelEndpoint } from "../../../pipeline/model-endpoint/server.ts";
import { benchmarkKnowledge } from "../../../pipeline/model-endpoint/knowledge.ts";
import { RELAY_DIR_PREFIX } from "../../../pipeline/session/model-relay.ts";
import { tempDir } from "../../helpers/tmp.ts";
import { dockerForTests } from "../../helpers/docker.ts";
import { WORK_LABEL } from "../../../pipeline/executors/index.ts";
import Docker from "dockerode";
import { runDemo, type DemoRun } from "../../helpers/demo-published.ts";

// Command agents inside the focus task's environment, and a model endpoint reached from it through
// the runner's relay. On a copy of the test run's one demo run (test/helpers/demo-run.ts).
describe("the demo", () => {
  let a: DemoRun;
  beforeAll(async () => {
    a = await runDemo();
  });

  /** A fresh directory, the demo's first session and a quiet logger: what the environment tests start from. */
  const firstSessionRun = () => {
    const index = SessionIndex.parse(JSON.parse(a.published["sessions/index.json"]!));
    return {
      dir: tempDir(),
      spec: SessionSpec.parse(JSON.parse(a.published[`sessions/${index.sessions[0]!.file}`]!)),
      log: createLogger({ level: "warn", write: () => {} }),
    };
  };

  it("runs a command agent inside the focus task's environment: the checkouts at the session's paths, nothing naming a role, the budget killing everything it started", async (context) => {
    if (!(await dockerForTests())) return context.skip();
    const demo = a;
    const { dir, spec, log } = firstSessionRun();
    const docker = new Docker();
    // The first four switched requests visit more than one checkout.
    const probeSession = join(dir, "probe.json");
    writeFileSync(probeSession, JSON.stringify({ ...spec, conditions: { ...spec.conditions, switched: spec.conditions.switched.slice(0, 4) } }));
    expect(new Set(spec.conditions.switched.slice(0, 4).map((r) => r.message.checkout)).size).toBeGreaterThan(1);
    process.env.SWITCH_SWE_PROBE_KEY = "key-from-the-user";
    const probe = join(dir, "probe.yaml");
    writeFileSync(
      probe,
      [
        "name: probe",
        "runs: environment",
        "network: false",
        "env: [SWITCH_SWE_PROBE_KEY]",
        `setup: [[sh, -c, "echo ready > /opt/agent-installed"]]`,
        // Writes, in the active checkout, where it ran and what it could see.
        `command: [sh, -c, 'n=$(ls probe-*.json 2>/dev/null | wc -l); printf "{\\"cwd\\": \\"%s\\", \\"uid\\": %s, \\"home\\": \\"%s\\", \\"workspace\\": \\"%s\\", \\"installed\\": \\"%s\\", \\"key\\": \\"%s\\", \\"args\\": \\"%s %s\\"}" "$(pwd)" "$(id -u)" "$HOME" "$(ls /workspace | tr "\\n" " ")" "$(cat /opt/agent-installed)" "$SWITCH_SWE_PROBE_KEY" "$1" "$2" > probe-$n.json; env > env-$n.txt; ls -a / > root-$n.txt; hostname >> root-$n.txt', sh, "{checkout}", "{workspace}"]`,
      ].join("\n") + "\n",
    );
    const report = await runAndScoreSession(OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: log }), {
      session: probeSession,
      condition: "switched",
      agent: loadAgent(probe),
      out: join(dir, "results"),
      work: join(dir, "runs"),
      log,
    });
    const trajectory = readFileSync(join(dir, "results", report.behaviour!.trajectory), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const workspace = join(dir, "runs", `${spec.session_id}.switched`, "workspace");
    const seen = new Map<string, number>();
    for (const request of trajectory) {
      const n = seen.get(request.checkout) ?? 0;
      seen.set(request.checkout, n + 1);
      // Each request ran in its own checkout, at the session's path, and the host saw what it wrote there and only there.
      expect(Object.keys(request.changes)).toEqual([request.checkout]);
      expect(request.exits).toEqual([0]);
      const written = JSON.parse(readFileSync(join(workspace, basename(request.checkout), `probe-${n}.json`), "utf8"));
      expect(written).toEqual({
        cwd: request.checkout,
        uid: process.getuid!(),
        home: "/agent",
        workspace:
          spec.checkouts
            .map((c) => basename(c.path))
            .sort()
            .join(" ") + " ",
        installed: "ready",
        key: "key-from-the-user",
        args: `${request.checkout} /workspace`,
      });
      // Nothing the agent can see names a task, a role or the held-out assets.
      const visible =
        readFileSync(join(workspace, basename(request.checkout), `env-${n}.txt`), "utf8") +
        readFileSync(join(workspace, basename(request.checkout), `root-${n}.txt`), "utf8");
      expect(visible).not.toMatch(/demo-org__|focus|interrupt|heldout|held-out/i);
    }
    // The container is gone with the session.
    const labelled = await docker.listContainers({ all: true, filters: { label: [WORK_LABEL] } });
    expect(labelled.filter((c) => c.Mounts.some((m) => m.Source.startsWith(dir)))).toEqual([]);

    // A sleeping agent in the environment: every attempt is killed at the budget with all it started.
    const shortSession = join(dir, "short.json");
    writeFileSync(
      shortSession,
      JSON.stringify({
        ...spec,
        budget: { per_request_seconds: 1, timeout_continuations: 1 },
        conditions: { ...spec.conditions, control: spec.conditions.control.slice(0, 1) },
      }),
    );
    const sleeper = join(dir, "sleeper.yaml");
    writeFileSync(
      sleeper,
      [
        "name: sleeper",
        "runs: environment",
        "network: false",
        // It also starts a process that leaves its group and keeps the output open: the attempt still ends.
        `command: [sh, -c, 'setsid sleep 1004 & sleep 1001 & sleep 1002']`,
        // The continuation first lists every process left in the container.
        `continue_command: [sh, -c, 'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; done > procs.txt; sleep 1003']`,
      ].join("\n") + "\n",
    );
    const slept = await runAndScoreSession(OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log: log }), {
      session: shortSession,
      condition: "control",
      agent: loadAgent(sleeper),
      out: join(dir, "results"),
      work: join(dir, "runs"),
      log,
    });
    const [only] = readFileSync(join(dir, "results", slept.behaviour!.trajectory), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(only).toMatchObject({ timed_out: true, continuations: 1, exits: [null, null] });
    const focus = spec.checkouts.find((c) => c.task_id === spec.focus)!;
    const procs = readFileSync(join(dir, "runs", `${spec.session_id}.control`, "workspace", basename(focus.path), "procs.txt"), "utf8");
    expect(procs).toContain("sleep 1003");
    expect(procs).not.toMatch(/sleep 100[12]/);
  });

  it("reaches a model endpoint on this machine's loopback from an environment with no network, through the runner's relay: the message from its file and on standard input, usage from its log", async (context) => {
    if (!(await dockerForTests())) return context.skip();
    const demo = a;
    const { dir, spec, log } = firstSessionRun();
    const session = join(dir, "three.json");
    writeFileSync(session, JSON.stringify({ ...spec, conditions: { ...spec.conditions, control: spec.conditions.control.slice(0, 3) } }));
    // A client of the Chat Completions API in the image's own Python, logging each call as aider's analytics log does.
    const client = [
      "import json, os, sys, urllib.request",
      "message = open(sys.argv[1]).read()",
      // The same message on standard input (how OpenCode takes it): the two must agree.
      'if sys.stdin.read() != message: sys.exit("standard input is not the message")',
      'body = json.dumps({"model": "probe", "messages": [{"role": "user", "content": message}]}).encode()',
      'headers = {"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["PROBE_KEY"]}',
      'answer = json.load(urllib.request.urlopen(urllib.request.Request(os.environ["PROBE_URL"] + "/v1/chat/completions", body, headers), timeout=120))',
      'with open(sys.argv[2], "a") as out:',
      '    out.write(json.dumps({"event": "message_send_starting"}) + "\\n")',
      '    out.write(json.dumps({"event": "message_send", "properties": {"prompt_tokens": answer["usage"]["prompt_tokens"], "completion_tokens": answer["usage"]["completion_tokens"]}}) + "\\n")',
    ].join("\n");
    const agentFile = join(dir, "client.json");
    writeFileSync(
      agentFile,
      JSON.stringify({
        name: "endpoint-client",
        runs: "environment",
        network: false,
        conversation: "fresh",
        usage: "aider",
        usage_file: "{session_dir}/calls.jsonl",
        message: "Repository: {repository}\nWorking directory: {checkout}\n\n{text}",
        command: ["python3", "-c", client, "{message_file}", "{session_dir}/calls.jsonl"],
        stdin: "{message}",
        model_endpoint: { env: { PROBE_URL: "{model_url}", PROBE_KEY: "{model_key}" } },
      }),
    );
    const b = OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log });
    const knowledge = await benchmarkKnowledge(b).finally(() => b.close());
    const endpoint = await ModelEndpoint.start({ script: "idle", knowledge });
    // This process's relay directories only: other runs on the machine have theirs.
    const relayDirs = () => readdirSync(tmpdir()).filter((n) => n.startsWith(`${RELAY_DIR_PREFIX}${process.pid}-`));
    // One a killed runner left behind (no process has its pid) is removed by the next relay.
    const abandoned = join(tmpdir(), `${RELAY_DIR_PREFIX}${2 ** 22 + 17}-left`);
    mkdirSync(abandoned, { recursive: true });
    writeFileSync(join(abandoned, "relay.py"), "");
    const relaysBefore = relayDirs();
    // What keeps this process alive (its Docker engine's connections among them), to compare after the run.
    const pipes = () => process.getActiveResourcesInfo().filter((r) => r === "PipeWrap").length;
    const pipesBefore = pipes();
    try {
      expect(new URL(endpoint.url).hostname).toBe("127.0.0.1");
      const report = await runAndScoreSession(OpenedBenchmark.open(demo.configPath, { stages: BUILT_STAGES, overrides: { executor: "local" }, log }), {
        session,
        condition: "control",
        agent: loadAgent(agentFile),
        out: join(dir, "results"),
        work: join(dir, "runs"),
        log,
        model: { url: endpoint.url, key: "relay-key" },
      });
      const trajectory = readFileSync(join(dir, "results", report.behaviour!.trajectory), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      // Every request reached the endpoint, with its message (the checkout at its session path) and the key.
      expect(endpoint.calls.map((c) => c.status)).toEqual([200, 200, 200]);
      for (const [i, call] of endpoint.calls.entries()) {
        const sent = JSON.parse(call.body).messages[0].content as string;
        expect(sent).toContain(`Working directory: ${spec.conditions.control[i]!.message.checkout}\n`);
        expect(sent).toContain(spec.conditions.control[i]!.message.text);
      }
      // The usage read from the client's log, in the agent's directory this machine shares, is the endpoint's.
      expect(trajectory.map((r) => r.exits)).toEqual([[0], [0], [0]]);
      expect(trajectory.map((r) => [r.usage.model_calls, r.usage.input_tokens, r.usage.output_tokens])).toEqual(
        endpoint.calls.map((c) => [1, c.usage!.input + c.usage!.cachedInput, c.usage!.output]),
      );
      expect(report.behaviour).toMatchObject({ failed_requests: 0, requests: 3 });
    } finally {
      await endpoint.close();
    }
    // The relay's socket directory goes with the session, and nothing of it holds this process
    // open (a detached start's answer once kept `session run` alive for minutes after it ended).
    expect(relayDirs().filter((n) => !relaysBefore.includes(n))).toEqual([]);
    expect(existsSync(abandoned)).toBe(false);
    expect(pipes()).toBeLessThanOrEqual(pipesBefore);
  });
});
