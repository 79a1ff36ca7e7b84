"""The verifier of a Switch-SWE session exported as a Harbor task: `tests/test.sh` runs
`python3 switch_swe_verify.py task.json` in the task's verifier container, a fresh container of the
verifier image (the focus task's environment, its held-out files under /tests), into which Harbor
has put the agent's final focus checkout.

It scores that checkout as `switch-swe verify --checkout` does (SPEC §3, docs/SCORING.md), with
switch-swe's own pieces where they can run here: the guarded pytest runner (switch_swe_runner.py,
pipeline/verifier/runner.py byte for byte) and the run script switch-swe's Docker executor writes
(run.sh, written by the export with the same code). What switch-swe does in TypeScript is done here
in the same order and by the same rules, given as data in task.json by the export (the profile's
file classification, the excluded and protected names):

1. the artifact: the checkout's files copied over a clean checkout of the focus base revision (its
   own .git is never used), environments, caches and logs left out unless the base tracks them;
2. what is applied: its non-test changes; test files, test configuration, files of the held-out
   test patch and modules that could stand in for the runner keep their base or held-out versions;
   a symlink leading out of the repository refuses the artifact whole;
3. the run: the held-out test patch, then the fixed pytest command over exactly FAIL_TO_PASS and
   PASS_TO_PASS through the guarded runner, as nobody, results read from the runner's channel only;
4. the verdict: applied, finished in time, nothing undermining the run, every required test
   collected, executed and passed.

It writes Harbor's reward (/logs/verifier/reward.json: 1 resolved, 0 not) and, for `switch-swe
report`, the verification (switch-swe-verification.json), the artifact as submitted
(artifact.patch) and the runner's channel (channel.jsonl), from which report grades again with
switch-swe's own code. A fault of the verifier itself writes no reward: Harbor records the trial
as failed, never as unresolved. Runs with the base image's python3 (3.9 or later).
"""

import hashlib
import json
import os
import posixpath
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time

# The task's data (task.json), read by load(): where things are, the test lists, the rules.
TASK, HERE, OUT, OUTPUTS, CHECKOUT, RESULTS = {}, "", "", {}, "", ""
EXCLUDED, EXCLUDED_FILE, RULES, PROTECTED, OVERRIDES = {}, None, {}, {}, []


def load(task_file):
    global TASK, HERE, OUT, OUTPUTS, CHECKOUT, RESULTS, EXCLUDED, EXCLUDED_FILE, RULES, PROTECTED, OVERRIDES
    with open(task_file) as handle:
        TASK = json.load(handle)
    HERE = os.path.dirname(os.path.abspath(task_file))
    OUT, OUTPUTS = TASK["output_dir"], TASK["outputs"]
    # Where the scored checkout and the runner's files go: the paths run.sh was written for.
    CHECKOUT, RESULTS = TASK["runner"]["checkout"], TASK["runner"]["results"]
    EXCLUDED = TASK["collect"]
    EXCLUDED_FILE = re.compile(EXCLUDED["excluded_file"])
    RULES, PROTECTED = TASK["classification"], TASK["protected"]
    OVERRIDES = [(o["class"], [re.compile(r) for r in o["regexes"]]) for o in RULES["overrides"]]


BASE_ENV = {
    "GIT_AUTHOR_NAME": "switch-swe",
    "GIT_AUTHOR_EMAIL": "switch-swe@localhost",
    "GIT_COMMITTER_NAME": "switch-swe",
    "GIT_COMMITTER_EMAIL": "switch-swe@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}


class Refused(Exception):
    """The artifact reaches outside the repository: it is not applied at all."""


def git(args, cwd, data=None):
    env = dict(os.environ, **BASE_ENV)
    # The checkout was made here by root; git would otherwise refuse a directory it thinks is another's.
    done = subprocess.run(["git", "-c", "safe.directory=*", "-c", "core.autocrlf=false"] + args, cwd=cwd, input=data,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, ["git"] + args, done.stdout, done.stderr)
    return done.stdout


def clean_base(directory):
    """The focus base revision's files in `directory`, committed once, with a fresh .git."""
    os.makedirs(directory)
    subprocess.run(["tar", "-x", "-f", os.path.join(HERE, TASK["base_archive"]), "-C", directory], check=True)
    git(["init", "--quiet"], directory)
    git(["add", "--all", "--force"], directory)
    git(["commit", "--quiet", "--no-gpg-sign", "--allow-empty", "--no-verify", "-m", "base"], directory)


# ---- 1. the artifact (pipeline/verifier/collect.ts) ----

def excluded_dir(rel, name, path):
    if name in EXCLUDED["excluded_dirs"] or name.endswith(".egg-info"):
        return True
    if "/" not in rel and name in EXCLUDED["excluded_top_dirs"]:
        return True
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))


def collect(source, clean):
    """The checkout's files over the clean base; the diff from the base, as switch-swe collects it."""
    tracked = set(p for p in git(["ls-files", "-z"], clean).decode("utf-8", "surrogateescape").split("\0") if p)
    tracked_dirs = set()
    for path in tracked:
        parts = path.split("/")[:-1]
        for i in range(len(parts)):
            tracked_dirs.add("/".join(parts[: i + 1]))
    for entry in os.listdir(clean):
        if entry != ".git":
            remove(os.path.join(clean, entry))

    def copy_tree(rel, inside_excluded):
        origin = os.path.join(source, rel) if rel else source
        for name in sorted(os.listdir(origin)):
            child = rel + "/" + name if rel else name
            path = os.path.join(origin, name)
            target = os.path.join(clean, child)
            if os.path.isdir(path) and not os.path.islink(path):
                if name == ".git":
                    continue
                skip = inside_excluded or excluded_dir(child, name, path)
                if skip and child not in tracked_dirs:
                    continue
                copy_tree(child, skip)
            elif os.path.islink(path) or os.path.isfile(path):
                if (inside_excluded or EXCLUDED_FILE.search(name)) and child not in tracked:
                    continue
                os.makedirs(os.path.dirname(target) or clean, exist_ok=True)
                if os.path.islink(path):
                    os.symlink(os.readlink(path), target)
                else:
                    shutil.copyfile(path, target)
                    os.chmod(target, 0o755 if os.stat(path).st_mode & 0o111 else 0o644)
            # sockets, pipes and devices are part of no artifact

    if os.path.isdir(source):
        copy_tree("", False)
    git(["add", "--all", "."], clean)
    return git(["diff", "--cached", "--binary", "--full-index", "--no-renames", "HEAD"], clean)


def remove(path):
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
    else:
        shutil.rmtree(path)


# ---- 2. what is applied (pipeline/verifier/submission.ts, pipeline/changes/classify.ts) ----

TEST_FILE = re.compile(r"^(test_.*\.py|.*_test\.py|tests\.py)$")


def classify(path):
    """test, source, docs or other: only whether a file is a test matters here, decided as switch-swe decides it."""
    for kind, regexes in OVERRIDES:
        if any(r.search(path) for r in regexes):
            return kind
    segments = path.split("/")
    name, dirs = segments[-1], segments[:-1]
    if name == "conftest.py":
        return RULES["conftest"]
    if any(d in RULES["test_dirs"] for d in dirs):
        return "test"
    if TEST_FILE.search(name):
        return "test"
    return "not_test"


def protected_reason(path, heldout_paths):
    segments = path.split("/")
    name = segments[-1]
    if path in heldout_paths:
        return "held_out_test_path"
    if name in PROTECTED["test_configuration"]:
        return "test_configuration"
    if (name in PROTECTED["runner_modules"] or name.endswith(".pth")
            or any(s in PROTECTED["runner_packages"] or s.endswith(".dist-info") or s.endswith(".egg-info") for s in segments[:-1])):
        return "test_runner_shadow"
    if classify(path) == "test":
        return "test_file"
    return None


def assert_inside(path):
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path) or "\\" in path or "\0" in path:
        raise Refused("%s is not a path inside the repository" % json.dumps(path))
    segments = path.split("/")
    if ".." in segments:
        raise Refused("%s climbs out of the repository with '..'" % json.dumps(path))
    if any(s.lower() == ".git" for s in segments):
        raise Refused("%s reaches into the repository's .git directory" % json.dumps(path))


def assert_link_inside(path, target):
    if target.startswith("/"):
        raise Refused("the symlink %s points outside the repository (to %s)" % (path, json.dumps(target)))
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if resolved == ".." or resolved.startswith("../"):
        raise Refused("the symlink %s points outside the repository (to %s)" % (path, json.dumps(target)))
    if any(s.lower() == ".git" for s in resolved.split("/")):
        raise Refused("the symlink %s points into the repository's .git directory" % path)


def assert_resolves_inside(root, path):
    """Follows `path` through every link on the way, as the file system would (submission.ts)."""
    pending = [p for p in path.split("/") if p]
    resolved = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            if not resolved:
                raise Refused("the symlink %s resolves outside the repository" % path)
            resolved.pop()
            continue
        if part.lower() == ".git":
            raise Refused("the symlink %s resolves into the repository's .git directory" % path)
        resolved.append(part)
        here = os.path.join(root, *resolved)
        if not os.path.islink(here):
            continue
        hops += 1
        if hops > 40:
            raise Refused("the symlink %s goes through more than 40 links" % path)
        target = os.readlink(here)
        if target.startswith("/"):
            raise Refused("the symlink %s resolves outside the repository (through %s -> %s)" % (path, "/".join(resolved), target))
        resolved.pop()
        pending[:0] = [p for p in target.split("/") if p]


def changed_paths(repo):
    """(status, path) of every file the staged artifact changes, renames split into a delete and an add."""
    raw = git(["diff", "--cached", "--name-status", "-z", "--no-renames", "HEAD"], repo).decode("utf-8", "surrogateescape").split("\0")
    pairs = [(raw[i], raw[i + 1]) for i in range(0, len(raw) - 1, 2) if raw[i]]
    return sorted(pairs, key=lambda p: p[1])


def plan(repo, heldout_paths):
    """Drops what may not be taken (restoring its base version) and refuses what reaches outside."""
    dropped, applied = [], []
    for status, path in changed_paths(repo):
        assert_inside(path)
        full = os.path.join(repo, path)
        if status != "D" and os.path.islink(full):
            assert_link_inside(path, os.readlink(full))
        reason = protected_reason(path, heldout_paths)
        if reason:
            dropped.append({"path": path, "reason": reason})
            git(["reset", "--quiet", "HEAD", "--", path], repo)
            if status == "A":
                remove(full)
            else:
                git(["checkout", "HEAD", "--", path], repo)
        else:
            applied.append((status, path))
    return applied, dropped


def test_files_of(repo, heldout_paths):
    """Test files and conftests of the prepared checkout (verify.ts testFilesOf): the runner reads them first."""
    found = []
    for directory, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__") and not os.path.islink(os.path.join(directory, d)))
        for name in files:
            path = os.path.relpath(os.path.join(directory, name), repo).replace(os.sep, "/")
            full = os.path.join(directory, name)
            if not path.endswith(".py") or os.path.islink(full) or not os.path.isfile(full):
                continue
            if path in heldout_paths or name == "conftest.py" or classify(path) == "test":
                found.append(path)
    return sorted(found)


# ---- 3. the run, and 4. its grading (pipeline/executors/guarded.ts, pipeline/verifier/grade.ts) ----

MAX_RECORD_BYTES = 4000000


class Channel:
    """The runner's channel: records carrying the run's token, up to its finish record (guarded.ts)."""

    def __init__(self, token, on_finish):
        self.token, self.on_finish = token, on_finish
        self.records, self.foreign, self.raw, self.finished = [], [], [], False

    def take(self, line):
        if not line.strip() or self.finished:
            return
        if len(line) > MAX_RECORD_BYTES:
            self.foreign.append(line[:200] + "... (a line of over %d bytes)" % MAX_RECORD_BYTES)
            return
        try:
            record = json.loads(line)
        except ValueError:
            self.foreign.append(line[:200])
            return
        if not isinstance(record, dict) or record.get("token") != self.token or not valid_record(record):
            self.foreign.append(line[:200])
            return
        record = {k: v for k, v in record.items() if k != "token"}
        self.records.append(record)
        self.raw.append(record)
        if record["kind"] == "finish":
            self.finished = True
            self.on_finish()


def valid_record(record):
    kind = record.get("kind")
    if kind == "test":
        return isinstance(record.get("nodeid"), str) and record.get("when") in ("setup", "call", "teardown") and isinstance(record.get("outcome"), str)
    if kind in ("problem", "suspicious"):
        return isinstance(record.get("text"), str)
    if kind == "finish":
        status, problems = record.get("exitstatus"), record.get("problems")
        return isinstance(status, int) and not isinstance(status, bool) and isinstance(problems, list) and all(isinstance(p, str) for p in problems)
    return False


def kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass


def kill_user(uid):
    """Every process of the tests' user, wherever it went (a test may leave the run's process group)."""
    for _ in range(3):
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
            try:
                with open("/proc/%s/status" % pid) as status:
                    owner = [line.split()[1] for line in status if line.startswith("Uid:")]
                if owner and owner[0] == str(uid):
                    os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)


def run_tests(submitted, protected):
    """The guarded run: run.sh as the Docker executor runs it, its channel on standard output."""
    os.makedirs(RESULTS, mode=0o755)
    shutil.copyfile(os.path.join(HERE, TASK["runner"]["runner_file"]), os.path.join(RESULTS, TASK["runner"]["runner_name"]))
    shutil.copyfile(os.path.join(HERE, TASK["runner"]["script"]), os.path.join(RESULTS, "run.sh"))
    with open(os.path.join(RESULTS, TASK["runner"]["config_name"]), "w") as config:
        json.dump({"submitted": submitted, "protected": protected}, config)
    for name in os.listdir(RESULTS):
        os.chmod(os.path.join(RESULTS, name), 0o644)
    token = secrets.token_hex(24)
    log = open(os.path.join(OUT, "tests.log"), "wb")
    env = dict(TASK["runner"]["env"])
    process = subprocess.Popen(["sh", os.path.join(RESULTS, "run.sh")], cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=log, env=env, start_new_session=True)
    channel = Channel(token, lambda: kill_group(process))

    def read():
        pending = b""
        for chunk in iter(lambda: process.stdout.read1(65536), b""):
            pending += chunk
            while b"\n" in pending and not channel.finished:
                line, pending = pending.split(b"\n", 1)
                channel.take(line.decode("utf-8", "replace"))
            if channel.finished:
                break
            if len(pending) > MAX_RECORD_BYTES:
                channel.take(pending.decode("utf-8", "replace"))
                pending = b""

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        process.stdin.write((token + "\n").encode())
        process.stdin.close()
    except OSError:
        pass  # the run ended before it read its token: the channel will say so
    timed_out = False
    try:
        exit_code = process.wait(timeout=TASK["timeout_seconds"])
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(process)
        exit_code = process.wait()
    reader.join(5)
    kill_user(TASK["runner"]["run_uid"])
    return {"timed_out": timed_out, "exit_code": exit_code, "channel": channel}


def status_from_phases(phases):
    if phases is None:
        return "absent"
    setup, call, teardown = phases.get("setup"), phases.get("call"), phases.get("teardown")
    if setup == "failed" or teardown == "failed":
        return "error"
    if setup == "skipped":
        return "skipped"
    if call == "failed":
        return "failed"
    if call in ("xfailed", "xpassed", "skipped"):
        return call
    if setup == "passed" and call == "passed" and teardown == "passed":
        return "passed"
    return "absent"


def grade(required, run):
    """grade.ts gradeRun: every phase of every required test passed, once, and nothing undermines the run."""
    problems, suspicious, phases = [], [], {}
    channel = None if run["timed_out"] else run["channel"]
    for record in channel.records if channel else []:
        if record["kind"] == "test":
            seen = phases.setdefault(record["nodeid"], {})
            previous = seen.get(record["when"])
            if previous is not None and previous != record["outcome"]:
                problems.append("%s: its %s was reported twice, %s and then %s" % (record["nodeid"], record["when"], previous, record["outcome"]))
            seen[record["when"]] = previous if previous is not None else record["outcome"]
        elif record["kind"] == "problem":
            problems.append("tampering: " + record["text"])
        elif record["kind"] == "suspicious":
            suspicious.append(record["text"])
        elif record["kind"] == "finish":
            problems.extend("tampering: " + p for p in record["problems"])
    if channel and channel.foreign:
        problems.append("the results channel carried %d line(s) the runner did not write, e.g. %s" % (len(channel.foreign), json.dumps(channel.foreign[0])))
    if run["timed_out"]:
        problems.append("the run did not finish within its timeout")
    elif not (channel and channel.finished):
        problems.append("the test session ended before pytest finished it (exit code %d); its results cannot be confirmed" % run["exit_code"])
    tests = {}
    for test in sorted(required):
        tests[test] = "timeout" if run["timed_out"] and test not in phases else status_from_phases(phases.get(test))
    unique = list(dict.fromkeys(problems))
    resolved = (not run["timed_out"] and not unique and len(tests) > 0 and all(s == "passed" for s in tests.values()))
    return tests, unique, sorted(set(suspicious)), resolved


def write_json(name, value):
    with open(os.path.join(OUT, name), "w") as handle:
        json.dump(value, handle, indent=2, sort_keys=True)
        handle.write("\n")


def verify():
    required = sorted(set(TASK["fail_to_pass"] + TASK["pass_to_pass"]))
    heldout_paths = set(TASK["heldout_test_paths"])
    clean_base(CHECKOUT)
    artifact = collect(TASK["focus_checkout"], CHECKOUT)
    with open(os.path.join(OUT, OUTPUTS["artifact"]), "wb") as handle:
        handle.write(artifact)
    outcome = {
        "session_id": TASK["session_id"], "task_id": TASK["task_id"], "condition": TASK["condition"],
        "artifact_sha256": hashlib.sha256(artifact.decode("utf-8", "replace").encode("utf-8")).hexdigest(),
        "dropped_paths": [], "applied": False, "tests": {t: "absent" for t in required}, "integrity_problems": [],
        "suspicious": [], "timed_out": False, "resolved": False, "infrastructure_retries": 0,
    }
    try:
        applied, outcome["dropped_paths"] = plan(CHECKOUT, heldout_paths)
        with open(os.path.join(HERE, TASK["test_patch"]), "rb") as patch:
            try:
                git(["apply", "--whitespace=nowarn", "--binary", "-"], CHECKOUT, data=patch.read())
            except subprocess.CalledProcessError as error:
                lines = error.stderr.decode("utf-8", "replace").strip().split("\n")[:2]
                raise Refused("the held-out test patch does not apply to %s: %s" % (TASK["base_commit"], " | ".join(lines)))
        for status, path in applied:
            if status != "D" and os.path.islink(os.path.join(CHECKOUT, path)):
                assert_resolves_inside(CHECKOUT, path)
    except Refused as refusal:
        outcome["apply_error"] = "refused: %s" % refusal if not str(refusal).startswith("the held-out") else str(refusal)
        return outcome, None
    submitted = sorted(set(path for _, path in applied))
    run = run_tests(submitted, test_files_of(CHECKOUT, heldout_paths))
    tests, problems, suspicious, resolved = grade(required, run)
    outcome.update(applied=True, tests=tests, integrity_problems=problems, timed_out=run["timed_out"], resolved=resolved,
                   suspicious=[{"rule": "runtime", "path": None, "line": None, "detail": d} for d in suspicious])
    return outcome, run


def main():
    load(sys.argv[1])
    os.makedirs(OUT, exist_ok=True)
    outcome, run = verify()
    if run is not None:
        with open(os.path.join(OUT, OUTPUTS["channel"]), "w") as handle:
            for record in run["channel"].raw:
                handle.write(json.dumps(record, sort_keys=True) + "\n")
        write_json(OUTPUTS["channelSummary"], {"finished": run["channel"].finished, "foreign": run["channel"].foreign,
                                             "timed_out": run["timed_out"], "exit_code": run["exit_code"]})
    write_json(OUTPUTS["verification"], outcome)
    # Written last, after every process of the tests is gone: nothing of theirs can replace it.
    write_json(OUTPUTS["reward"], {"reward": 1 if outcome["resolved"] else 0})
    print("%s (%s), focus %s: %s" % (outcome["session_id"], outcome["condition"], outcome["task_id"], "RESOLVED" if outcome["resolved"] else "NOT RESOLVED"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
