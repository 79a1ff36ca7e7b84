"""The verifier's pytest runner: `python runner.py CONFIG [pytest arguments...]`.

switch-swe copies this file, with CONFIG (a JSON object: `submitted`, the paths the submission
changed, and `protected`, the test files and conftests of the checkout, both relative to it), to a
directory outside the checkout that the test process cannot write, and runs it in place of
`python -m pytest` when it scores a submission. It reads a one-line token on standard input and
reports on file descriptor 3, a pipe that only the supervisor reads: one JSON record a line, each
carrying the token; nothing is written to a file, and the supervisor ignores everything that
arrives after the `finish` record (and then kills the run).

The submission's code runs in this process, so this is not a sandbox (see "Threat model" in the
README). What it does:

- pytest is imported before the checkout is on sys.path, so a `pytest.py` or `_pytest/` in the
  submission cannot stand in for the test runner; the token is read, and standard input closed,
  before any code of the checkout runs;
- every test phase is reported on the channel as it ends; `finish` is sent only once pytest has
  returned and every non-daemon thread has ended (a run that hangs is a timeout, never a pass),
  and the process then exits at once, so `atexit` handlers and `pytest_unconfigure` hooks of the
  checkout never run after it;
- integrity checks that do not depend on file names, each reported as a problem: pytest's and
  pluggy's reporting functions are fingerprinted before any code of the checkout runs; the hook
  implementations are recorded at the same moment, and every one added later must come from a
  test file or conftest whose code is what the file held before the run (or from outside the
  checkout); every collected test function, and every function of a test module, must be the
  code its file compiles to, compiled here from the file's content read before the run; classes
  defined by the submission must not compare equal to an object they cannot know;
- an audit hook (which cannot be removed) watches what the submission's code does while it runs:
  reading a test module that ran or a conftest, opening the results channel or the process's
  memory, or replacing a function's code is a problem; reading any other file of the test tree
  (test data: the code under test of a static analyser or a documentation tool reads Python files
  as its input), walking the heap, taking the frames of tests, loading C code or starting
  processes is reported as suspicious, which does not change the verdict.

Every object of the checkout is inspected as untrusted: an attribute that raises (a test-data
module whose `__getattr__` raises anything, as astroid's has) is an object we cannot see into, never
a crash of the runner.
"""

import ast
import gc
import inspect
import json
import os
import sys
import threading

# Drop this file's directory from the import path: nothing besides pytest is imported from here.
sys.path.pop(0)
RUNNER_FILE = os.path.realpath(__file__)
CHANNEL = 3
# Read before any code of the checkout exists in this process; standard input is then closed.
TOKEN = sys.stdin.readline().strip()
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
# Processes the tests start do not get the channel (a fork does; see the threat model).
os.set_inheritable(CHANNEL, False)
# A container's standard output can come non-blocking: a full pipe must make us wait, never drop a record.
os.set_blocking(CHANNEL, True)
with open(sys.argv.pop(1)) as _config_file:
    _CONFIG = json.load(_config_file)
CHECKOUT = os.path.realpath(os.getcwd())
SUBMITTED = frozenset(_CONFIG["submitted"])

import pytest  # noqa: E402

_WATCHED_MODULE_NAMES = [
    "_pytest.runner", "_pytest.reports", "_pytest.junitxml", "_pytest.skipping", "_pytest.main", "_pytest.python",
    "_pytest.assertion.rewrite", "pluggy._callers", "pluggy._hooks", "pluggy._manager", "pluggy.callers", "pluggy.hooks", "pluggy.manager",
]
WATCHED_MODULES = []
for _name in _WATCHED_MODULE_NAMES:
    try:
        __import__(_name)
        WATCHED_MODULES.append(sys.modules[_name])
    except ImportError:
        pass  # another pluggy or pytest generation: its modules have other names


_dumps = json.dumps
_write = os.write
_select = __import__("select").select
_send_lock = threading.Lock()


def _send(kind, **fields):
    """
    One whole record on the channel, waiting while the pipe is full; a closed channel (the
    supervisor has what it needs, or is gone) ends the sending. One thread writes at a time, so
    records never interleave.
    """
    data = (_dumps(dict(fields, kind=kind, token=TOKEN)) + "\n").encode()
    with _send_lock:
        while data:
            try:
                data = data[_write(CHANNEL, data):]
            except BlockingIOError:
                _select([], [CHANNEL], [], 1.0)
            except OSError:
                return


_relative_cache = {}


def _attribute(obj, name, default=None):
    """getattr that survives an object whose attribute lookup raises something other than AttributeError."""
    try:
        return getattr(obj, name, default)
    except Exception:
        return default


def _checkout_relative(path):
    """A path of the checkout, relative to it; None for anything outside it (or not a path)."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return None  # "<string>", "<frozen ...>": code that no file holds
    cached = _relative_cache.get(path)
    if cached is None:
        real = os.path.realpath(path)
        cached = os.path.relpath(real, CHECKOUT) if real.startswith(CHECKOUT + os.sep) else ""
        _relative_cache[path] = cached
    return cached or None


# The protected files' content, read now: what they compile to is what the tests must run.
PROTECTED_SOURCE = {}
for _rel in _CONFIG["protected"]:
    try:
        with open(os.path.join(CHECKOUT, _rel), "rb") as _handle:
            PROTECTED_SOURCE[_rel] = _handle.read()
    except OSError:
        pass  # listed but absent: nothing can be compiled from it, so nothing from it is accepted
PROTECTED_ABSOLUTE = {os.path.join(CHECKOUT, rel): rel for rel in PROTECTED_SOURCE}
PROTECTED_NAMES = {os.path.basename(rel) for rel in PROTECTED_SOURCE}


class Findings:
    """Problems and suspicious findings, each sent on the channel once, the moment it is found."""

    def __init__(self):
        self.sent = set()
        self.lock = threading.Lock()

    def add(self, kind, text):
        with self.lock:
            if (kind, text) in self.sent:
                return
            self.sent.add((kind, text))
        _send(kind, text=text)


FINDINGS = Findings()
_hook_state = threading.local()
# Test-tree files the submission's code read while the tests ran (file -> the reading file), judged
# once the session knows which files were test modules that ran.
TEST_TREE_READS = {}


def _acting_file(frame):
    """The checkout file whose code is acting: the innermost frame in the checkout, None if this runner's."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == RUNNER_FILE:
            return None
        relative = _checkout_relative(filename)
        if relative is not None:
            return relative
        frame = frame.f_back
    return None


def _through_display(frame, until):
    """True when the frames between here and `until` include traceback or warnings formatting."""
    while frame is not None and _checkout_relative(frame.f_code.co_filename) != until:
        if os.path.basename(frame.f_code.co_filename) in ("traceback.py", "warnings.py"):
            return True
        frame = frame.f_back
    return False


def _names_protected(text):
    return isinstance(text, str) and any(rel in text for rel in PROTECTED_SOURCE)


_PROCESS_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn"}
_SUSPICIOUS_EVENTS = {"gc.get_objects": "walked the heap (gc.get_objects)", "gc.get_referrers": "walked the heap (gc.get_referrers)", "gc.get_referents": "walked the heap (gc.get_referents)", "ctypes.dlopen": "loaded C code through ctypes", "ctypes.addressof": "took a memory address through ctypes"}


def _audit(event, args):
    if event not in _WATCHED_EVENTS or getattr(_hook_state, "busy", False):
        return
    _hook_state.busy = True
    try:
        _judge(event, args)
    except Exception:
        pass  # a finding that cannot be worked out is not worth breaking the run for
    finally:
        _hook_state.busy = False


def _judge(event, args):
    if event == "open":
        path = args[0]
        if path == CHANNEL or (isinstance(path, str) and path.startswith(("/proc/", "/dev/fd/")) and (path.endswith("/fd/%d" % CHANNEL) or path.endswith("/mem") or path == "/dev/fd/%d" % CHANNEL)):
            actor = _acting_file(sys._getframe(2))
            if actor is not None:
                FINDINGS.add("problem", "%s opened %s, the results channel or the process's memory" % (actor, path))
            return
        if not isinstance(path, str) or os.path.basename(path) not in PROTECTED_NAMES:
            return
        relative = PROTECTED_ABSOLUTE.get(os.path.abspath(path)) or PROTECTED_ABSOLUTE.get(os.path.realpath(path))
        if relative is None:
            return
        frame = sys._getframe(2)
        actor = _acting_file(frame)
        if actor in SUBMITTED:
            # Formatting a traceback or a warning reads test source too: suspicious, not a verdict.
            if _through_display(frame, actor):
                FINDINGS.add("suspicious", "%s read the test file %s while formatting a traceback or warning" % (actor, relative))
            else:
                TEST_TREE_READS.setdefault(relative, actor)
    elif event == "object.__setattr__":
        if args[1] == "__code__":
            actor = _acting_file(sys._getframe(2))
            if actor in SUBMITTED:
                FINDINGS.add("problem", "the submission's %s replaced the code of %s" % (actor, getattr(args[0], "__qualname__", "a function")))
    elif event in ("sys._getframe", "object.__getattr__"):
        if event == "object.__getattr__" and args[1] != "f_code":
            return
        code = getattr(args[0], "f_code", None)
        if code is None or _checkout_relative(code.co_filename) not in PROTECTED_SOURCE:
            return
        actor = _acting_file(sys._getframe(2))
        if actor in SUBMITTED:
            FINDINGS.add("suspicious", "%s took the frame of test code in %s" % (actor, _checkout_relative(code.co_filename)))
    elif event in _PROCESS_EVENTS:
        actor = _acting_file(sys._getframe(2))
        if actor in SUBMITTED:
            command = " ".join(str(a) for a in (args[1] if event == "subprocess.Popen" and isinstance(args[1], (list, tuple)) else args[:2]))
            if _names_protected(command):
                FINDINGS.add("problem", "the submission's %s ran a command that reads a test file: %s" % (actor, command[:200]))
            else:
                FINDINGS.add("suspicious", "%s started a process: %s" % (actor, command[:200]))
    elif event in _SUSPICIOUS_EVENTS:
        actor = _acting_file(sys._getframe(2))
        if actor in SUBMITTED:
            FINDINGS.add("suspicious", "%s %s" % (actor, _SUSPICIOUS_EVENTS[event]))


_WATCHED_EVENTS = {"open", "object.__setattr__", "object.__getattr__", "sys._getframe"} | _PROCESS_EVENTS | set(_SUSPICIOUS_EVENTS)


def _fingerprint():
    """Every function and method the reporting path goes through, with its code object."""
    seen = {}

    def add(key, value):
        if isinstance(value, property):
            seen[key] = (value, _attribute(value.fget, "__code__"))
        elif isinstance(value, (staticmethod, classmethod)):
            seen[key] = (value, _attribute(value.__func__, "__code__"))
        elif callable(value):
            seen[key] = (value, _attribute(value, "__code__"))

    for module in WATCHED_MODULES:
        for name, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == module.__name__:
                for attr, member in list(vars(value).items()):
                    add("%s.%s.%s" % (module.__name__, name, attr), member)
            elif _attribute(value, "__module__") == module.__name__:
                add("%s.%s" % (module.__name__, name), value)
    add("os._exit", os._exit)
    add("os.write", os.write)
    return seen


def _hook_callers(pluginmanager):
    return {name: caller for name, caller in vars(pluginmanager.hook).items() if hasattr(caller, "get_hookimpls") or hasattr(caller, "_nonwrappers")}


def _hookimpls(caller):
    if hasattr(caller, "get_hookimpls"):
        return list(caller.get_hookimpls())
    return list(caller._wrappers) + list(caller._nonwrappers)


def _code_objects(code):
    yield code
    for constant in code.co_consts:
        if isinstance(constant, type(code)):
            for nested in _code_objects(constant):
                yield nested


class Compiled:
    """What each protected file compiles to, from its content before the run: plainly and as pytest rewrites it."""

    def __init__(self):
        self.config = None
        self.by_file = {}

    def candidates(self, relative, code):
        if relative not in self.by_file:
            found = {}
            for compiled in self._compile(relative):
                for nested in _code_objects(compiled):
                    found.setdefault((nested.co_name, nested.co_firstlineno), []).append(nested)
            self.by_file[relative] = found
        return self.by_file[relative].get((code.co_name, code.co_firstlineno), [])

    def _compile(self, relative):
        source = PROTECTED_SOURCE[relative]
        filename = os.path.join(CHECKOUT, relative)
        variants = []
        try:
            variants.append(compile(source, filename, "exec", dont_inherit=True))
        except (SyntaxError, ValueError):
            return variants
        try:
            from _pytest.assertion.rewrite import rewrite_asserts

            tree = ast.parse(source, filename=filename)
            if "source" in inspect.signature(rewrite_asserts).parameters:
                rewrite_asserts(tree, source, filename, self.config)
            else:
                rewrite_asserts(tree, filename, self.config)
            variants.append(compile(tree, filename, "exec", dont_inherit=True))
        except Exception:
            pass  # no rewriting here: the plain compilation is what must match
        return variants


COMPILED = Compiled()


def _check_code(code, what, needs_file=True):
    """None when `code` may run as `what`; else why not. Code that no file holds may not, unless `needs_file` is False."""
    if not os.path.isabs(code.co_filename) or not os.path.isfile(code.co_filename):
        return "%s runs code that no file holds (%s)" % (what, code.co_filename) if needs_file else None
    relative = _checkout_relative(code.co_filename)
    if relative is None:
        return None  # the environment's code: a decorator's wrapper, a plugin of an installed package
    if relative in SUBMITTED:
        return "%s runs code of the submission's %s" % (what, relative)
    if relative not in PROTECTED_SOURCE:
        return None  # the repository's own non-test code, as the base revision has it
    if not any(code == candidate for candidate in COMPILED.candidates(relative, code)):
        return "%s is not the code %s held before the run (line %d)" % (what, relative, code.co_firstlineno)
    return None


def _functions_of(obj):
    """A callable and what it wraps (decorators), as functions."""
    seen = 0
    obj = _attribute(obj, "__func__", obj)
    while obj is not None and seen < 20:
        if _attribute(obj, "__code__") is not None:
            yield obj
        obj = _attribute(obj, "__wrapped__")
        obj = _attribute(obj, "__func__", obj)
        seen += 1


def _check_function(function, what, needs_file=True):
    for layer in _functions_of(function):
        problem = _check_code(layer.__code__, what, needs_file)
        if problem:
            return problem
    return None


class Guard:
    def __init__(self):
        # Taken before pytest.main: nothing from the checkout has run yet.
        self.fingerprint = _fingerprint()
        self.baseline = None
        self.pluginmanager = None
        self.final = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self, early_config, parser, args):
        # The hook implementations as they are before any conftest or checkout module is imported.
        self.pluginmanager = early_config.pluginmanager
        callers = _hook_callers(self.pluginmanager)
        self.baseline = {
            "callers": dict(callers),
            "impls": {id(impl.function): impl.function for caller in callers.values() for impl in _hookimpls(caller)},
            "hookexec": {name: getattr(caller, "_hookexec", None) for name, caller in callers.items()},
            "inner": getattr(self.pluginmanager, "_inner_hookexec", None),
        }
        COMPILED.config = early_config
        # What `python -m pytest` does, but only now: pytest and its entry-point plugins are loaded.
        sys.path.insert(0, CHECKOUT)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        problem = _check_function(getattr(pyfuncitem, "obj", None), "the test %s" % pyfuncitem.nodeid)
        if problem:
            FINDINGS.add("problem", problem)
        yield

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report):
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        else:
            outcome = report.outcome
        # pytest before 4 puts a "()" node (the class instance) into ids; the ids we were given have none.
        _send("test", nodeid=report.nodeid.replace("::()", ""), when=report.when, outcome=outcome)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        problems = []
        now = _fingerprint()
        for key, (value, code) in self.fingerprint.items():
            current = now.get(key)
            if current is None or current[0] is not value or current[1] is not code:
                problems.append("%s was replaced during the run" % key)
        problems.extend(self._hook_problems(session))
        problems.extend(self._test_code_problems(session))
        problems.extend(_test_tree_read_problems(session))
        problems.extend(_equal_to_anything())
        self.final = (int(exitstatus), problems)

    def _hook_problems(self, session):
        if self.baseline is None:
            return ["the runner never saw pytest load its initial conftests"]
        problems = []
        pluginmanager = session.config.pluginmanager
        if getattr(pluginmanager, "_inner_hookexec", None) is not self.baseline["inner"]:
            problems.append("the plugin manager's hook caller was replaced")
        callers = _hook_callers(pluginmanager)
        for name, caller in callers.items():
            known = self.baseline["callers"].get(name)
            if known is not None and caller is not known:
                problems.append("the hook %s was replaced" % name)
            if name in self.baseline["hookexec"] and getattr(caller, "_hookexec", None) is not self.baseline["hookexec"][name]:
                problems.append("the hook %s calls its implementations through a replaced function" % name)
            for impl in _hookimpls(caller):
                if id(impl.function) in self.baseline["impls"] and self.baseline["impls"][id(impl.function)] is impl.function:
                    continue
                plugin = impl.plugin
                if not pluginmanager.is_registered(plugin):
                    problems.append("an implementation of %s was added without registering a plugin" % name)
                    continue
                function = getattr(impl.function, "__func__", impl.function)
                code = getattr(function, "__code__", None)
                where = "the %s hook of plugin %s" % (name, getattr(impl, "plugin_name", "?"))
                if code is None:
                    problems.append("%s is not Python code" % where)
                    continue
                problem = _check_code(code, where)
                if problem:
                    problems.append(problem)
                elif isinstance(plugin, type(sys)) and not getattr(plugin, "__file__", None):
                    problems.append("%s belongs to a module with no file" % where)
        return problems

    def _test_code_problems(self, session):
        problems = []
        for item in getattr(session, "items", []):
            obj = getattr(item, "obj", None) if isinstance(item, pytest.Function) else None
            if obj is not None:
                problem = _check_function(obj, "the test %s" % item.nodeid)
                if problem:
                    problems.append(problem)
        # Every function a test module defines (helpers and test classes included) is its file's code.
        for module in list(sys.modules.values()):
            relative = _checkout_relative(_attribute(module, "__file__"))
            if relative not in PROTECTED_SOURCE:
                continue
            for name, value in list(vars(module).items()):
                owners = [(name, value)]
                if isinstance(value, type) and _attribute(value, "__module__") == module.__name__:
                    owners = [("%s.%s" % (name, attr), member) for attr, member in list(vars(value).items())]
                for label, member in owners:
                    function = _attribute(member, "__func__", member)
                    if _attribute(function, "__code__") is not None and _attribute(function, "__module__") == module.__name__:
                        # Generated methods (a dataclass's __init__) have no file, and are not tests.
                        problem = _check_function(function, "%s in %s" % (label, relative), needs_file=False)
                        if problem:
                            problems.append(problem)
        return sorted(set(problems))


def _test_tree_read_problems(session):
    """
    The submission's reads of the test tree: a test module that ran (its expectations) or a
    conftest is a problem; any other file of it is test data, which code under test may read as
    its input (astroid resolves modules in it, Sphinx builds it): suspicious.
    """
    ran = set()
    for item in getattr(session, "items", []):
        path = _attribute(item, "path") or _attribute(item, "fspath")
        relative = _checkout_relative(str(path)) if path is not None else None
        if relative is not None:
            ran.add(relative)
    problems = []
    for relative, actor in sorted(TEST_TREE_READS.items()):
        if relative in ran or os.path.basename(relative) == "conftest.py":
            problems.append("the submission's %s read the test file %s while the tests ran" % (actor, relative))
        else:
            FINDINGS.add("suspicious", "%s read %s, a file of the test tree that is not a test module that ran (test data)" % (actor, relative))
    return problems


class _Unknowable:
    """An object no code of the checkout can have seen: nothing honest compares equal to it."""


def _equal_to_anything():
    problems = []
    probe = _Unknowable()
    for obj in gc.get_objects():
        if not issubclass(type(obj), type):
            continue
        equal = obj.__dict__.get("__eq__")
        code = _attribute(equal, "__code__")
        if code is None or _checkout_relative(code.co_filename) not in SUBMITTED:
            continue
        try:
            instance = object.__new__(obj)
        except Exception:
            try:
                instance = obj.__new__(obj)
            except Exception:
                continue
        try:
            answer = equal(instance, probe)
            equal_to_probe = answer is not NotImplemented and bool(answer)
        except Exception:
            equal_to_probe = False
        if equal_to_probe:
            problems.append("objects of %s (in the submission's %s) compare equal to anything" % (obj.__qualname__, _checkout_relative(code.co_filename)))
    return sorted(set(problems))


def _submitted_plugins(pluginmanager):
    problems = []
    for plugin in pluginmanager.get_plugins():
        source = _attribute(plugin, "__file__") if isinstance(plugin, type(sys)) else _attribute(sys.modules.get(type(plugin).__module__), "__file__")
        relative = _checkout_relative(source)
        if relative in SUBMITTED:
            problems.append("the submission's %s was loaded as a pytest plugin" % relative)
    return problems


def main():
    if hasattr(sys, "addaudithook"):
        sys.addaudithook(_audit)
    else:
        # Python before 3.8: what the audit hook would watch goes unseen; the other checks stand.
        FINDINGS.add("suspicious", "this Python (%d.%d) has no audit hooks: what the submission did while the tests ran was not watched" % sys.version_info[:2])
    guard = Guard()
    status = pytest.main(sys.argv[1:], plugins=[guard])
    # The run is over only when the process could end by itself: a thread that never ends is a hang.
    while True:
        waiting = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon and t.is_alive()]
        if not waiting:
            break
        for thread in waiting:
            thread.join()
    if guard.final is not None:
        exitstatus, problems = guard.final
        if guard.pluginmanager is not None:
            problems = problems + _submitted_plugins(guard.pluginmanager)
        _send("finish", exitstatus=exitstatus, problems=sorted(set(problems)))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(status))


main()
