"""Switch-SWE's session agent for Harbor: `--agent switch_swe_harbor.agent:SwitchSweSession`.

A Switch-SWE session is one continuous conversation of up to ~22 requests over five checkouts,
each request with its own budget. This agent wrapper delivers them to a real coding harness
(Claude Code, Codex CLI or OpenCode, as switch-swe's adapters in data/agents/ run it) inside the
task's container, exactly as `switch-swe session run` does with `runs: environment`:

- the requests, one at a time and in order, each as the adapter's message (repository, active
  checkout, text) in one conversation (the first request starts it, every later one continues it);
- each attempt run as the task's agent user in its own session, killed with everything it
  started at the request's budget, then continued in the same conversation with switch-swe's
  continuation message, at most the session's `timeout_continuations` times a request;
- after each request, what changed in each of the five checkouts; during a return to the focus
  task, the seconds to its first change.

The schedule is read from the task's `switch-swe/session.json` on this machine (the task
directory Harbor was given), never from anything in the container: the harness sees one request
at a time and nothing of the ones to come, of the tests or of the reference. The harness's own
output of every attempt, and the wrapper's trajectory, are kept in the trial's directory under
`switch-swe/` (outside what is mounted into the container, so nothing in it can rewrite them);
`switch-swe report --harbor JOB` reads usage from them with switch-swe's own readers.

Agent kwargs (`--agent-kwarg key=value`): `harness` (claude-code, codex or opencode: an adapter
in adapters/), `tools_dir` (where `switch-swe agents install` put the harness; default
$SWITCH_SWE_TOOLS_DIR, else .switch-swe/agents), `model_url` (a model endpoint the container can
reach; without it the harness uses its provider and the keys its adapter passes through, given to
Harbor with --ae), `model_key_env` (the variable of this process holding the endpoint's key).
`-m` names the model.
"""

import asyncio
import fnmatch
import hashlib
import json
import os
import re
import shlex
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

ADAPTERS = Path(__file__).parent / "adapters"
# Where the harness goes in the container, and the agent's home (as `runs: environment` has them).
TOOLS = "/opt/switch-swe-agent"
HOME = "/agent"
# Root's alone: the attempt script, each request's input and each attempt's output.
PRIVATE = "/var/lib/switch-swe-session"
ATTEMPT_PID = PRIVATE + "/attempt.pid"
# The attempt's shell is the leader of its own session: its process group is everything it started.
ATTEMPT_SCRIPT = """#!/bin/sh
log=$1; input=$2; user=$3; shift 3
echo $$ > %s
exec setpriv --reuid="${user%%:*}" --regid="${user#*:}" --clear-groups -- "$@" < "$input" > "$log" 2>&1
""" % ATTEMPT_PID
# Hashes each file of the checkouts given (links by their target), leaving out what switch-swe's
# snapshots leave out (pipeline/checkouts/snapshot.ts); one JSON object of path -> {file: hash}.
SNAPSHOT_SCRIPT = r"""
import hashlib, json, os, sys
skipped = set(json.loads(sys.argv[1]))
out = {}
for root in sys.argv[2:]:
    files = {}
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in skipped and not x.endswith(".egg-info") and not os.path.islink(os.path.join(d, x))]
        links = [x for x in os.listdir(d) if os.path.islink(os.path.join(d, x))]
        for name in set(names) | set(links):
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            try:
                if os.path.islink(p):
                    files[rel] = "link:" + os.readlink(p)
                elif os.path.isfile(p) and not (name.endswith(".pyc") or name.endswith(".pyo")):
                    with open(p, "rb") as f:
                        files[rel] = hashlib.sha1(f.read()).hexdigest()
            except OSError:
                pass
    out[root] = files
json.dump(out, sys.stdout)
"""


def now():
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def changes_between(before, after):
    added = sorted(p for p in after if p not in before)
    deleted = sorted(p for p in before if p not in after)
    modified = sorted(p for p in after if p in before and before[p] != after[p])
    return {"added": added, "modified": modified, "deleted": deleted} if added or deleted or modified else None


class SwitchSweSession(BaseAgent):
    """Delivers a Switch-SWE session's requests to a harness in the task's container (module docstring)."""

    def __init__(self, logs_dir, model_name=None, harness="claude-code", tools_dir=None, model_url=None, model_key_env=None, **kwargs):
        super().__init__(logs_dir, model_name, **kwargs)
        adapter_file = ADAPTERS / ("%s.json" % harness)
        if not adapter_file.is_file():
            known = ", ".join(sorted(p.stem for p in ADAPTERS.glob("*.json")))
            raise ValueError("harness=%s: no adapter %s (this dataset has: %s)" % (harness, adapter_file, known))
        self.adapter = json.loads(adapter_file.read_text())
        self.tools_dir = Path(tools_dir or os.environ.get("SWITCH_SWE_TOOLS_DIR") or ".switch-swe/agents").resolve()
        self.model_url = model_url
        self.model_key = os.environ.get(model_key_env, "") if model_key_env else ""
        if model_key_env and not self.model_key:
            raise ValueError("model_key_env=%s: the variable is not set" % model_key_env)
        self.records = None
        self.plan = None
        self.user = None

    @staticmethod
    def name():
        return "switch-swe-session"

    def version(self):
        return self.adapter["install"]["version"]

    # ---- the session's plan, from the task directory on this machine ----

    def _load_plan(self):
        config = json.loads((Path(self.logs_dir).parent / "config.json").read_text())
        task_path = (config.get("task") or {}).get("path")
        if not task_path:
            raise ValueError("the trial's config.json names no local task path: the session agent runs tasks of a local Switch-SWE dataset (harbor run -p)")
        plan_file = Path(task_path) / "switch-swe" / "session.json"
        if not plan_file.is_file():
            raise ValueError("%s: missing; %s is not a task of a Switch-SWE dataset (switch-swe export harbor)" % (plan_file, task_path))
        return json.loads(plan_file.read_text())

    def _model_name(self):
        name = self.model_name.split("/", 1)[-1] if self.model_name else None
        endpoint = self.adapter.get("model_endpoint") or {}
        return name or (endpoint.get("default_model") if self.model_url else None)

    def _fill_endpoint(self, text):
        values = {"{model_url}": self.model_url or "", "{model_key}": self.model_key, "{model_name}": self._model_name() or "", "{home}": HOME}
        return re.sub(r"\{(model_url|model_key|model_name|home)\}", lambda m: values[m.group(0)], text)

    def _variables(self):
        """What the harness gets: its constant variables, its endpoint's, and the keys it passes through."""
        env = {"HOME": HOME, "LANG": "C.UTF-8"}
        for key in self.adapter.get("env", []):
            value = self._extra_env.get(key, os.environ.get(key))
            if value is not None:
                env[key] = value
        env.update(self.adapter.get("constant_env", {}))
        endpoint = self.adapter.get("model_endpoint")
        if self.model_url and endpoint:
            for key, value in endpoint.get("env", {}).items():
                if "{model_name}" in value and not self._model_name():
                    continue
                env[key] = self._fill_endpoint(value)
        return env

    # ---- setup: the harness, the agent's home, the wrapper's own files ----

    async def setup(self, environment: BaseEnvironment) -> None:
        self.plan = self._load_plan()
        # Beside Harbor's agent/ and verifier/ in the trial's directory, never mounted into the container.
        self.records = Path(self.logs_dir).parent / self.plan["records"]["dir"]
        install = self.adapter["install"]
        source = self.tools_dir / install["dir"]
        if not (source / "installed.json").is_file():
            raise ValueError("%s %s is not installed in %s: run 'switch-swe agents install data/agents/%s.yaml --tools-dir %s'"
                             % (install["package"], install["version"], self.tools_dir, self.adapter["name"], self.tools_dir))
        self.executables = {name: self._executable(source, pattern) for name, pattern in self.adapter["executables"].items()}
        await self._root(environment, "mkdir -p %s %s && chmod 700 %s" % (TOOLS, PRIVATE, PRIVATE))
        await environment.upload_dir(source_dir=source, target_dir=TOOLS)
        await self._root(environment, "chmod -R a+rX %s && mkdir -p %s" % (TOOLS, HOME))
        with tempfile.TemporaryDirectory() as staging:
            script = Path(staging) / "attempt.sh"
            script.write_text(ATTEMPT_SCRIPT)
            await environment.upload_file(source_path=script, target_path=PRIVATE + "/attempt.sh")
            endpoint = self.adapter.get("model_endpoint")
            for file in (endpoint or {}).get("files", []) if self.model_url else []:
                local = Path(staging) / "endpoint-file"
                local.write_text(self._fill_endpoint(file["content"]))
                target = HOME + "/" + file["path"]
                await self._root(environment, "mkdir -p %s" % shlex.quote(os.path.dirname(target)))
                await environment.upload_file(source_path=local, target_path=target)
        await self._root(environment, "chmod 700 %s/attempt.sh" % PRIVATE)
        self.records.mkdir(parents=True, exist_ok=True)

    def _executable(self, source, pattern):
        """The one file a command's name stands for in the installed harness (`*` matches one name)."""
        matches = sorted(p for p in source.glob(pattern) if p.exists())
        if len(matches) != 1:
            raise ValueError("%s: %s names %d files in %s" % (self.adapter["name"], pattern, len(matches), source))
        return TOOLS + "/" + matches[0].relative_to(source).as_posix()

    async def _agent_user(self, environment):
        """uid:gid of the user Harbor runs the agent as (the task's agent.user: the exec's default during run, not setup)."""
        result = await environment.exec("printf '%s:%s' \"$(id -u)\" \"$(id -g)\"")
        user = (result.stdout or "").strip().splitlines()[-1] if result.stdout else ""
        if not re.fullmatch(r"\d+:\d+", user):
            raise RuntimeError("cannot tell which user the agent runs as (id said %r)" % result.stdout)
        return user

    async def _root(self, environment, command, timeout=None):
        result = await environment.exec(command, user="root", timeout_sec=timeout)
        if result.return_code != 0:
            raise RuntimeError("%s exited %d: %s" % (command, result.return_code, (result.stdout or "")[-2000:]))
        return result.stdout or ""

    # ---- the session ----

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        plan = self.plan or self._load_plan()
        self.workspace = plan["workspace"]
        started = time.monotonic()
        self.user = await self._agent_user(environment)
        await self._root(environment, "chown -R %s %s" % (self.user, HOME))
        state = {"conversation": self._first_conversation(plan), "agent_seconds": 0.0}
        snapshots = await self._snapshot(environment, plan["checkouts"])
        base_focus = dict(snapshots[plan["focus_checkout"]])
        ever_changed = set()
        trajectory = self.records / plan["records"]["trajectory"]
        trajectory.write_text("")
        for index, request in enumerate(plan["requests"]):
            line = await self._deliver(environment, plan, index, request, state, snapshots)
            for change in line["changes"].get(plan["focus_checkout"], {}).values():
                ever_changed.update(change)
            with trajectory.open("a") as handle:
                handle.write(json.dumps(line, sort_keys=True) + "\n")
        final_focus = snapshots[plan["focus_checkout"]]
        summary = {
            "harness": self.adapter["name"],
            "usage_reader": self.adapter.get("usage"),
            "conversation": state["conversation"],
            "work_lost_files": len([p for p in ever_changed if final_focus.get(p) == base_focus.get(p)]),
            "runner_seconds": max(0.0, time.monotonic() - started - state["agent_seconds"]),
            "requests": len(plan["requests"]),
        }
        (self.records / plan["records"]["summary"]).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        # The harness's last processes go before Harbor collects the focus checkout.
        if not self.user.startswith("0:"):
            await environment.exec("kill -KILL -1 2>/dev/null; true", user=self.user)
        context.metadata = {"switch_swe": {"records": str(self.records), **summary}}

    def _first_conversation(self, plan):
        kind = self.adapter["conversation"]
        if kind == "fresh":
            return str(uuid.uuid4())
        if kind == "fixed":
            digest = hashlib.sha256(("%s/%s/%s" % (plan["session_id"], plan["condition"], self.adapter["name"])).encode()).hexdigest()[:32]
            return "%s-%s-%s-%s-%s" % (digest[:8], digest[8:12], digest[12:16], digest[16:20], digest[20:32])
        return None  # captured from the harness's first output

    async def _deliver(self, environment, plan, index, request, state, snapshots):
        """One request: attempts until one ends within the budget, or its continuations are used up."""
        budget = plan["budget"]["per_request_seconds"]
        began, clock = now(), time.monotonic()
        focus_return = request["focus_return"]
        watcher = asyncio.ensure_future(self._watch_first_change(environment, plan, snapshots, clock)) if focus_return else None
        exits, attempts, continuations, timed_out = [], [], 0, False
        text = request["text"]
        for attempt in range(1 + plan["budget"]["timeout_continuations"]):
            continued = (index > 0 or attempt > 0) and state["conversation"] is not None
            name = "request-%02d-attempt-%d.log" % (index, attempt)
            attempt_started = time.monotonic()
            exit_code, timed_out = await self._attempt(environment, request, text, continued, state, budget, name)
            state["agent_seconds"] += time.monotonic() - attempt_started
            exits.append(exit_code)
            attempts.append(name)
            if state["conversation"] is None and isinstance(self.adapter["conversation"], dict):
                found = re.search(self.adapter["conversation"]["capture"], (self.records / name).read_text(errors="replace"))
                state["conversation"] = found.group(1) if found else None
            if not timed_out or continuations >= plan["budget"]["timeout_continuations"]:
                break
            continuations += 1
            text = plan["continuation_message"]
        first_change = await self._stop(watcher)
        ended = time.monotonic()
        changes = {}
        after = await self._snapshot(environment, plan["checkouts"])
        for path in plan["checkouts"]:
            change = changes_between(snapshots[path], after[path])
            if change:
                changes[path] = change
            snapshots[path] = after[path]
        line = {"request": index, "checkout": request["checkout"], "started_at": began, "ended_at": now(), "seconds": ended - clock,
                "budget_seconds": budget, "continuations": continuations, "timed_out": timed_out, "exits": exits,
                "attempts": attempts, "changes": changes}
        if focus_return:
            line["focus_first_change_seconds"] = first_change if first_change is not None else (ended - clock if plan["focus_checkout"] in changes else None)
        return line

    def _fill(self, part, request, text, conversation):
        """One argv element (or the standard input) of the adapter's templates, its placeholders filled; no shell reads it."""
        values = {"{message}": self._message(request, text), "{text}": text, "{checkout}": request["checkout"], "{workspace}": self.workspace,
                  "{repository}": request["repository"], "{session_dir}": HOME, "{conversation}": conversation or "",
                  "{model_name}": self._model_name() or ""}
        return re.sub(r"\{(message|text|checkout|workspace|repository|session_dir|conversation|model_name)\}", lambda m: values[m.group(0)], part)

    def _message(self, request, text):
        values = {"{repository}": request["repository"], "{checkout}": request["checkout"], "{text}": text}
        return re.sub(r"\{(repository|checkout|text)\}", lambda m: values[m.group(0)], self.adapter["message"])

    async def _attempt(self, environment, request, text, continued, state, budget, name):
        """One attempt at a request: its exit status and whether the budget ended it; its output kept under `name`."""
        template = self.adapter["continue_command"] if continued and self.adapter.get("continue_command") else self.adapter["command"]
        argv = [self._fill(part, request, text, state["conversation"]) for part in template]
        argv[0] = self.executables.get(argv[0], argv[0])
        log, stdin = PRIVATE + "/" + name, "/dev/null"
        if "stdin" in self.adapter:
            stdin = PRIVATE + "/request-input.txt"
            with tempfile.TemporaryDirectory() as staging:
                local = Path(staging) / "input"
                local.write_text(self._fill(self.adapter["stdin"], request, text, state["conversation"]))
                await environment.upload_file(source_path=local, target_path=stdin)
        cwd = self.workspace if self.adapter["working_directory"] == "workspace" else request["checkout"]
        command = "setsid --wait sh %s/attempt.sh %s %s %s %s" % (PRIVATE, shlex.quote(log), shlex.quote(stdin), self.user, " ".join(shlex.quote(a) for a in argv))
        timed_out, exit_code = False, None
        try:
            result = await asyncio.wait_for(environment.exec(command, cwd=cwd, env=self._variables(), user="root"), timeout=budget)
            exit_code = result.return_code
        except asyncio.TimeoutError:
            timed_out = True
            await environment.exec("kill -KILL -\"$(cat %s)\" 2>/dev/null; true" % ATTEMPT_PID, user="root")
        output = await environment.exec("cat %s 2>/dev/null; rm -f %s" % (shlex.quote(log), shlex.quote(log)), user="root")
        (self.records / name).write_text(output.stdout or "")
        return exit_code, timed_out

    async def _snapshot(self, environment, checkouts):
        command = "python3 -c %s %s %s" % (shlex.quote(SNAPSHOT_SCRIPT), shlex.quote(json.dumps(self._skipped())), " ".join(shlex.quote(c) for c in checkouts))
        result = await environment.exec(command, user="root")
        try:
            return json.loads((result.stdout or "").strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise RuntimeError("snapshotting the checkouts failed: %s" % (result.stdout or "")[-2000:])

    def _skipped(self):
        return (self.plan or {}).get("snapshot_skipped_dirs", [])

    async def _watch_first_change(self, environment, plan, snapshots, clock):
        """Seconds from the request's start to the focus checkout's first change (polled)."""
        focus = plan["focus_checkout"]
        while True:
            await asyncio.sleep(plan["poll_seconds"])
            now_state = (await self._snapshot(environment, [focus]))[focus]
            if changes_between(snapshots[focus], now_state):
                return time.monotonic() - clock

    async def _stop(self, watcher):
        if watcher is None:
            return None
        if watcher.done():
            return watcher.result() if not watcher.exception() else None
        watcher.cancel()
        try:
            await watcher
        except (asyncio.CancelledError, Exception):
            pass
        return None
