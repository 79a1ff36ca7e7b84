"""The verifier's pytest runner: `python runner.py GUARD_REPORT SUBMITTED_PATHS [pytest arguments...]`.

switch-swe copies this file next to the JUnit report, outside the checkout under test, and runs it
in place of `python -m pytest` when it scores a submission. The submission's source code runs in
this process, so nothing here is a sandbox; it makes the cheap forgeries fail:

- pytest is imported before the checkout is on sys.path, so a `pytest.py` or `_pytest/` in the
  submission cannot stand in for the test runner;
- every test's outcome is recorded a second time, by this plugin, and written to GUARD_REPORT
  when the session ends; the verifier counts a test as passed only when the JUnit report and this
  record both say so, and only when the record says the session finished;
- pytest's and pluggy's reporting functions are fingerprinted before any code of the checkout
  runs and compared when the session ends, and any module of the submission (SUBMITTED_PATHS, a
  JSON list of the paths it changed) that pytest loaded as a plugin is listed: either is reported
  as tampering, which makes the submission unresolved.
"""

import json
import os
import sys

# Drop this file's directory from the import path: nothing besides pytest is imported from here.
sys.path.pop(0)

import pytest  # noqa: E402
import _pytest.junitxml  # noqa: E402
import _pytest.main  # noqa: E402
import _pytest.python  # noqa: E402
import _pytest.reports  # noqa: E402
import _pytest.runner  # noqa: E402
import _pytest.skipping  # noqa: E402
import _pytest.terminal  # noqa: E402
import pluggy  # noqa: E402
import pluggy._callers  # noqa: E402
import pluggy._hooks  # noqa: E402
import pluggy._manager  # noqa: E402

GUARD_REPORT = sys.argv.pop(1)
with open(sys.argv.pop(1)) as _submitted:
    SUBMITTED = set(json.load(_submitted))
CHECKOUT = os.getcwd()

WATCHED_MODULES = [_pytest.runner, _pytest.reports, _pytest.junitxml, _pytest.skipping, _pytest.main, _pytest.python, pluggy._callers, pluggy._hooks, pluggy._manager]


def _fingerprint():
    """Every function and method the reporting path goes through, with its code object."""
    seen = {}

    def add(key, value):
        if isinstance(value, property):
            seen[key] = (value, getattr(value.fget, "__code__", None))
        elif isinstance(value, (staticmethod, classmethod)):
            seen[key] = (value, getattr(value.__func__, "__code__", None))
        elif callable(value):
            seen[key] = (value, getattr(value, "__code__", None))

    for module in WATCHED_MODULES:
        for name, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == module.__name__:
                for attr, member in list(vars(value).items()):
                    add(f"{module.__name__}.{name}.{attr}", member)
            elif getattr(value, "__module__", None) == module.__name__:
                add(f"{module.__name__}.{name}", value)
    add("os._exit", os._exit)
    return seen


def _submitted_path(path):
    """The path relative to the checkout if the submission changed that file, else None."""
    if not path:
        return None
    relative = os.path.relpath(os.path.realpath(path), os.path.realpath(CHECKOUT))
    return relative if relative in SUBMITTED else None


class Guard:
    def __init__(self):
        # Taken before pytest.main: nothing from the checkout has run yet.
        self.fingerprint = _fingerprint()
        self.outcomes = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_load_initial_conftests(self, early_config, parser, args):
        # What `python -m pytest` does, but only now: pytest and its entry-point plugins are loaded.
        sys.path.insert(0, CHECKOUT)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report):
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        else:
            outcome = report.outcome
        self.outcomes.setdefault(report.nodeid, {})[report.when] = outcome

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        tampering = []
        now = _fingerprint()
        for key, (value, code) in self.fingerprint.items():
            current = now.get(key)
            if current is None or current[0] is not value or current[1] is not code:
                tampering.append(f"{key} was replaced during the run")
        for plugin in session.config.pluginmanager.get_plugins():
            source = getattr(plugin, "__file__", None) or getattr(sys.modules.get(type(plugin).__module__), "__file__", None)
            submitted = _submitted_path(source)
            if submitted:
                tampering.append(f"the submission's {submitted} was loaded as a pytest plugin")
        report = {"finished": True, "exitstatus": int(exitstatus), "tampering": sorted(tampering), "outcomes": self.outcomes}
        partial = GUARD_REPORT + ".partial"
        with open(partial, "w") as handle:
            json.dump(report, handle)
        os.replace(partial, GUARD_REPORT)


sys.exit(pytest.main(sys.argv[1:], plugins=[Guard()]))
