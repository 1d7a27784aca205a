"""Bounded: collection-time work (issue 21, "What to build" 8).

Importing the system module and calling its `fingerprint()` run under `--eval-timeout` (or the
suite's "timeout"): one that never returns makes its suite an error item, the other suites run
and the process ends. Each run is a fresh interpreter (the stuck thread is left behind there),
started with a generous safety timeout so that a hang fails the test instead of holding it up.
"""

from __future__ import annotations

import functools

import pytest
from evalhelpers import Project, assert_not_aborted, error_block, suite_doc

SLEEPS_AT_IMPORT = """\
import time
from pathlib import Path

with open(Path(__file__).resolve().parent / "imports.log", "a") as log:
    log.write("imported\\n")
time.sleep(3600)  # a client that waits for a network that never answers


def run(case):
    return {"answer": case["input"]}


other = run
"""

FINGERPRINT_NEVER_RETURNS = """\
import threading
from pathlib import Path

from mysys import System


class Stuck(System):
    def fingerprint(self):
        with open(Path(__file__).resolve().parent / "fingerprints.log", "a") as log:
            log.write("fingerprint\\n")
        threading.Event().wait()  # e.g. a lock another thread never releases


system = Stuck()
"""

# A hang fails the test instead of holding up the whole suite (no time is asserted on).
SAFETY_TIMEOUT = 300


def bounded_project(project: Project, pytester: pytest.Pytester) -> Project:
    return Project(
        project.root, functools.partial(pytester.runpytest_subprocess, timeout=SAFETY_TIMEOUT)
    )


@pytest.mark.subprocess
def test_a_system_module_that_sleeps_at_import_errors_its_suites_once(
    project: Project, pytester: pytest.Pytester
) -> None:
    """Break: "`time.sleep` at import ... hangs with no timeout". The two suites of the module
    error with the same message, and the module is imported once (the second suite neither
    imports it again nor waits again)."""
    project = bounded_project(project, pytester)
    project.write_text("sleepy.py", SLEEPS_AT_IMPORT)
    project.write_suite(suite_doc("first", system="sleepy:run"), "cases/first.json")
    project.write_suite(suite_doc("second", system="sleepy:other"), "cases/second.json")
    project.write_suite(suite_doc())

    result = project.run("--live", "--eval-timeout", "0.5", "-p", "no:cacheprovider")

    assert_not_aborted(result)
    result.assert_outcomes(passed=3, errors=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert (
        "cases/first.json: importing the system 'sleepy:run' did not finish in 0.5 s "
        "(--eval-timeout); collection waits this long"
    ) in error_block(result, "cases/first.json::suite")
    assert "importing the system 'sleepy:run' did not finish in 0.5 s" in error_block(
        result, "cases/second.json::suite"
    )
    assert (project.root / "imports.log").read_text() == "imported\n"


@pytest.mark.subprocess
def test_a_fingerprint_that_never_returns_errors_its_suites_once(
    project: Project, pytester: pytest.Pytester
) -> None:
    """Break: "a `fingerprint()` that never returns ... hangs with no timeout". The suite's own
    "timeout" bounds it as --eval-timeout would; the system's second suite gets the same error
    without calling fingerprint() again."""
    project = bounded_project(project, pytester)
    project.write_text("stuck.py", FINGERPRINT_NEVER_RETURNS)
    for name in ("first", "second"):
        project.write_suite(
            suite_doc(name, system="stuck:system", timeout=0.5), f"cases/{name}.json"
        )
    project.write_suite(suite_doc())

    result = project.run("--live", "-p", "no:cacheprovider")

    assert_not_aborted(result)
    result.assert_outcomes(passed=3, errors=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    for name in ("first", "second"):
        assert (
            f"cases/{name}.json: system 'stuck:system': fingerprint() did not finish in 0.5 s"
        ) in error_block(result, f"cases/{name}.json::suite")
    assert (project.root / "fingerprints.log").read_text() == "fingerprint\n"
