import { mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadAgent } from "../../pipeline/session/runs.ts";
import { git } from "../../pipeline/git.ts";
import { AgentSpec } from "../../pipeline/schemas/agent.ts";
import { agentArgv } from "../../pipeline/session/run.ts";
import { changesBetween, provisionCheckout, snapshot } from "../../pipeline/checkouts/snapshot.ts";
import { tempDir } from "../helpers/tmp.ts";

describe("the session runner's parts", () => {
  it("refuses an agent description that is neither scripted nor a command, naming the file and field", () => {
    const dir = tempDir();
    const file = join(dir, "bad.yaml");
    writeFileSync(file, "name: my-agent\nenv: [API_KEY]\n");
    expect(() => loadAgent(file)).toThrow(`${file}: field command`);
    writeFileSync(file, "name: has space\nscripted: noop\n");
    expect(() => loadAgent(file)).toThrow(/name/);
    // A placeholder the runner does not fill would reach the agent as literal text.
    writeFileSync(file, "name: typo\ncommand: [tool, '{txt}']\n");
    expect(() => loadAgent(file)).toThrow(
      `${file}: field command: a command may use only the placeholders {message}, {message_file}, {text}, {checkout}, {workspace}`,
    );
    writeFileSync(file, "name: s\nscripted: noop\nruns: environment\n");
    expect(() => loadAgent(file)).toThrow(`${file}: field runs`);
    writeFileSync(file, "name: s\ncommand: [tool]\nsetup: [[pip, install, tool]]\n");
    expect(() => loadAgent(file)).toThrow(`${file}: field setup`);
    writeFileSync(file, "name: s\ncommand: [tool]\nruns: container\n");
    expect(() => loadAgent(file)).toThrow(`${file}: field runs`);
    // In the environment a usage file is read from this machine: only under {session_dir}, which the two share.
    writeFileSync(file, "name: s\ncommand: [tool]\nruns: environment\nusage: aider\nusage_file: /tmp/log.jsonl\n");
    expect(() => loadAgent(file)).toThrow(`${file}: field usage_file`);
    writeFileSync(file, "name: s\ncommand: [tool, '{message_file}']\nruns: environment\nusage: aider\nusage_file: '{session_dir}/log.jsonl'\n");
    expect(loadAgent(file).usage_file).toBe("{session_dir}/log.jsonl");
  });

  it("fills placeholders into argv elements, with no shell, and continues with continue_command", () => {
    const agent = AgentSpec.parse({
      name: "x",
      command: ["tool", "--prompt", "{text}", "--cwd={checkout}"],
      continue_command: ["tool", "--resume", "{conversation}", "{text}"],
    });
    const request = { repository: "o/r", checkout: "/w/w01", text: "do $(rm -rf /) `now`; please", continued: false };
    const paths = { workspace: "/w", sessionDir: "/s" };
    expect(agentArgv(agent, request, paths, "c-1")).toEqual(["tool", "--prompt", "do $(rm -rf /) `now`; please", "--cwd=/w/w01"]);
    expect(agentArgv(agent, { ...request, continued: true }, paths, "c-1")).toEqual(["tool", "--resume", "c-1", "do $(rm -rf /) `now`; please"]);
    const everywhere = AgentSpec.parse({ name: "y", command: ["t", "--all={workspace}", "--state={session_dir}/x", "{repository}"] });
    expect(agentArgv(everywhere, request, paths, "c-1")).toEqual(["t", "--all=/w", "--state=/s/x", "o/r"]);
  });

  it("provisions a checkout of a commit with no history, and sees what a request changed", async () => {
    const dir = tempDir();
    const repo = join(dir, "repo");
    mkdirSync(repo);
    const env = { GIT_AUTHOR_NAME: "a", GIT_AUTHOR_EMAIL: "a@x.invalid", GIT_COMMITTER_NAME: "a", GIT_COMMITTER_EMAIL: "a@x.invalid" };
    await git(["init", "--quiet", "--initial-branch=main"], { cwd: repo });
    writeFileSync(join(repo, "a.py"), "x = 1\n");
    // What `git archive` would drop or rewrite must reach the checkout as committed.
    writeFileSync(join(repo, ".gitattributes"), "ci.cfg export-ignore\nversion.py export-subst\n");
    writeFileSync(join(repo, "ci.cfg"), "[ci]\n");
    writeFileSync(join(repo, "version.py"), "v = '$Format:%H$'\n");
    await git(["add", "-A"], { cwd: repo });
    await git(["commit", "--quiet", "-m", "one"], { cwd: repo, env });
    const first = (await git(["rev-parse", "HEAD"], { cwd: repo })).trim();
    writeFileSync(join(repo, "a.py"), "x = 2  # the future\n");
    await git(["commit", "--quiet", "-am", "two"], { cwd: repo, env });
    const checkout = join(dir, "w00");
    await provisionCheckout(join(repo, ".git"), first, checkout);
    expect((await git(["rev-list", "--count", "--all"], { cwd: checkout })).trim()).toBe("1");
    expect((await git(["log", "--all", "--format=%B"], { cwd: checkout })).trim()).toBe("base");
    expect(readFileSync(join(checkout, "ci.cfg"), "utf8")).toBe("[ci]\n");
    expect(readFileSync(join(checkout, "version.py"), "utf8")).toBe("v = '$Format:%H$'\n");
    expect((await git(["rev-parse", "HEAD^{tree}"], { cwd: checkout })).trim()).toBe((await git(["rev-parse", `${first}^{tree}`], { cwd: repo })).trim());
    const before = await snapshot(checkout);
    writeFileSync(join(checkout, "a.py"), "x = 3\n");
    writeFileSync(join(checkout, "b.py"), "y = 1\n");
    mkdirSync(join(checkout, "__pycache__"));
    writeFileSync(join(checkout, "__pycache__", "a.pyc"), "junk");
    expect(changesBetween(before, await snapshot(checkout))).toEqual({ added: ["b.py"], modified: ["a.py"], deleted: [] });
    expect(changesBetween(before, before)).toBeUndefined();
    // With a hash cache, a rewrite of the same size (and its mtime set back) is still seen: ctime moved.
    const cache = new Map();
    const cached = await snapshot(checkout, cache);
    const { mtime } = statSync(join(checkout, "b.py"));
    writeFileSync(join(checkout, "b.py"), "y = 2\n");
    utimesSync(join(checkout, "b.py"), mtime, mtime);
    expect(changesBetween(cached, await snapshot(checkout, cache))).toEqual({ added: [], modified: ["b.py"], deleted: [] });
  });
});
